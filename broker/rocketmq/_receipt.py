"""Receipt handles: what a received message's ``receipt_handle`` says, as text.

::

    <epoch hex> "." <queue id> "." <queue offset> "." <attempt> "." <serial> "." <topic>

``epoch`` is the broker run's start time in ms (a handle from an earlier run is still
understood: see :mod:`._pop`); ``attempt`` is the delivery attempt (1 for the first);
``serial`` changes at every delivery and every ``ChangeInvisibleDuration``, so an older handle
of the same message is refused. The topic comes last: topic names have no ``.``
(``[%|a-zA-Z0-9_-]``). No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass

from aeromq.broker.rocketmq._status import ProtocolStatusError
from aeromq.proto.apache.rocketmq.v2 import definition_pb2

__all__ = ["ReceiptHandle"]

_SEPARATOR = "."
_FIELDS = 6


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    """One delivery of the message at (topic, queue id, queue offset)."""

    epoch_ms: int
    queue_id: int
    queue_offset: int
    attempt: int
    serial: int
    topic: str

    def encode(self) -> str:
        return _SEPARATOR.join(
            (
                f"{self.epoch_ms:x}",
                str(self.queue_id),
                str(self.queue_offset),
                str(self.attempt),
                str(self.serial),
                self.topic,
            )
        )

    @classmethod
    def decode(cls, text: str) -> ReceiptHandle:
        """Parse ``text``; ``ProtocolStatusError(INVALID_RECEIPT_HANDLE)`` when malformed."""
        parts = text.split(_SEPARATOR, _FIELDS - 1)
        try:
            if len(parts) != _FIELDS or not parts[-1]:
                raise ValueError(text)
            handle = cls(
                int(parts[0], 16), int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4]),
                parts[5],
            )  # fmt: skip
        except ValueError as exc:
            raise ProtocolStatusError(
                definition_pb2.Code.INVALID_RECEIPT_HANDLE,
                "not a receipt handle of this broker",
                receipt_handle=text,
            ) from exc
        if min(handle.queue_id, handle.queue_offset, handle.attempt, handle.serial) < 0:
            raise ProtocolStatusError(
                definition_pb2.Code.INVALID_RECEIPT_HANDLE,
                "a receipt handle with a negative field",
                receipt_handle=text,
            )
        return handle
