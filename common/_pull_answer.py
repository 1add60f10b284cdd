"""``PullAnswer``: a pull's answer as both ends hold it, its control fields (a
``PullMessageResponse`` without ``batches``) beside its stored record batches.

Over a transport session the batches travel as the envelope's raw section
(:mod:`common._envelope`), not inside the protobuf message: the broker's
:class:`~broker.processor.pull.PullProcessor` answers with a ``PullAnswer``, the session agent
writes the two as one message, and the client's session resolves a pull with a ``PullAnswer``
whose ``batches`` are the section's bytes, copied once out of the log buffer. The attributes a
reader uses (``status``, ``pull_status``, ``next_begin_offset``, ``min_offset``,
``max_offset``, ``batches``) read as a ``PullMessageResponse``'s do.
"""

from __future__ import annotations

from collections.abc import Sequence

from aeromq.proto import common_pb2, messages_pb2

__all__ = ["PullAnswer"]


class PullAnswer:
    """``response`` (the control fields) and the stored record batches, back to back: given as
    ``batches``, or as ``pieces`` (the broker's views of its commit log, one per batch, written
    into the transport as they are), else ``response.batches`` (a protobuf-only answer)."""

    __slots__ = ("_batches", "_pieces", "response")

    def __init__(
        self,
        response: messages_pb2.PullMessageResponse,
        batches: bytes | None = None,
        *,
        pieces: Sequence[bytes | memoryview] = (),
    ) -> None:
        self.response = response
        self._batches = batches
        self._pieces = pieces

    @property
    def batches(self) -> bytes:
        """The batches as one ``bytes`` (pieces are joined once, when asked)."""
        batches = self._batches
        if batches is None:
            pieces = self._pieces
            batches = b"".join(pieces) if pieces else self.response.batches
            self._batches = batches
        return batches

    @property
    def pieces(self) -> Sequence[bytes | memoryview]:
        """The batches as the pieces to write back to back (none when there are none)."""
        if self._pieces:
            return self._pieces
        batches = self.batches
        return (batches,) if batches else ()

    @property
    def status(self) -> common_pb2.Status:
        """The broker's answer code and message (``code`` 0 is success; any other code is an
        error the client raises as its typed error)."""
        return self.response.status

    @property
    def pull_status(self) -> messages_pb2.PullStatus.ValueType:
        """``FOUND``, ``NO_NEW_MSG`` (the offset is the max), ``NO_MATCHED_MSG`` (the filter
        matched nothing; ``next_begin_offset`` still moves on) or ``OFFSET_ILLEGAL``."""
        return self.response.pull_status

    @property
    def next_begin_offset(self) -> int:
        """The queue offset the next pull starts at: the last offset read + 1, or the min or
        max offset when the pull's offset was below or beyond them."""
        return self.response.next_begin_offset

    @property
    def local_ranges(self) -> bytes:
        """A local read's answer: where its batches are in the commit log (see
        ``PullMessageResponse.local_ranges``); empty otherwise."""
        return self.response.local_ranges

    @property
    def min_offset(self) -> int:
        """The queue's min offset (its first stored message) when the broker answered."""
        return self.response.min_offset

    @property
    def max_offset(self) -> int:
        """The queue's max offset (the offset the next message sent to it gets) when the broker
        answered."""
        return self.response.max_offset

    def to_message(self) -> messages_pb2.PullMessageResponse:
        """The answer as one ``PullMessageResponse`` (``batches`` inside: a copy), for callers
        that want the protobuf form."""
        message = messages_pb2.PullMessageResponse()
        message.CopyFrom(self.response)
        message.batches = self.batches
        return message

    def __repr__(self) -> str:
        response = self.response
        return (
            f"PullAnswer(code={response.status.code}, pull_status={response.pull_status}, "
            f"next_begin_offset={response.next_begin_offset}, min_offset={response.min_offset}, "
            f"max_offset={response.max_offset}, "
            f"batches={sum(memoryview(p).nbytes for p in self.pieces)} bytes)"
        )
