"""``CopyBroadcastReceiver``: hands out broadcast messages copied, raising when it was lapped.

A plain :class:`~transport.concurrent.broadcast_receiver.BroadcastReceiver` lets a slow reader
skip ahead silently. Clients that must not miss a message (Aeron's client conductor reading
driver responses) wrap it in this class: each message is copied to a scratch buffer and
checked with ``validate`` before the handler sees it, and being lapped is an
:class:`~transport.TransportStateError`.
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.transport._errors import ConfigurationError, TransportStateError
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.broadcast_receiver import BroadcastReceiver

__all__ = ["SCRATCH_BUFFER_LENGTH", "CopyBroadcastReceiver"]

SCRATCH_BUFFER_LENGTH = 4096
"""Default scratch buffer length: the longest message a ``CopyBroadcastReceiver`` accepts."""


class CopyBroadcastReceiver:
    """Caller: the one thread that owns ``receiver``."""

    __slots__ = ("_receiver", "_scratch")

    def __init__(
        self, receiver: BroadcastReceiver, scratch_buffer_length: int = SCRATCH_BUFFER_LENGTH
    ) -> None:
        if scratch_buffer_length <= 0:
            raise ConfigurationError(
                "scratch buffer length must be positive",
                scratch_buffer_length=scratch_buffer_length,
            )
        self._receiver = receiver
        self._scratch = AtomicBuffer.allocate(scratch_buffer_length)

    @property
    def scratch_buffer(self) -> AtomicBuffer:
        """The buffer each message is copied into before :meth:`receive` hands it out."""
        return self._scratch

    def receive(self, handler: Callable[[int, AtomicBuffer, int, int], object]) -> int:
        """Hand the next message, copied, to ``handler(msg_type_id, buffer, index, length)``.

        Returns 1 if there was a message, else 0. Raises :class:`~transport.TransportStateError`
        if the transmitter lapped this receiver (messages were lost) or a message is longer
        than the scratch buffer.
        """
        receiver = self._receiver
        last_seen_lapped_count = receiver.lapped_count()
        if not receiver.receive_next():
            return 0
        if receiver.lapped_count() != last_seen_lapped_count:
            raise TransportStateError(
                "unable to keep up with broadcast", lapped_count=receiver.lapped_count()
            )
        scratch = self._scratch
        length = receiver.length()
        if not 0 <= length <= scratch.capacity:
            if not receiver.validate():
                raise TransportStateError(
                    "unable to keep up with broadcast", lapped_count=receiver.lapped_count()
                )
            raise TransportStateError(
                "scratch buffer too small", length=length, scratch_capacity=scratch.capacity
            )
        msg_type_id = receiver.type_id()
        scratch.put_bytes(0, receiver.buffer(), receiver.offset(), length)
        if not receiver.validate():
            raise TransportStateError(
                "unable to keep up with broadcast", lapped_count=receiver.lapped_count()
            )
        handler(msg_type_id, scratch, 0, length)
        return 1
