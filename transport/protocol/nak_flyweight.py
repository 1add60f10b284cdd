"""NAK frame (28 bytes): a receiver asking the sender to retransmit a range of a term.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |R|                       Frame Length                          |
    +-+-------------+---------------+-------------------------------+
  4 |    Version    |     Flags     |         Type (=0x02)          |
    +---------------+---------------+-------------------------------+
  8 |                          Session ID                           |
    +---------------------------------------------------------------+
 12 |                           Stream ID                           |
    +---------------------------------------------------------------+
 16 |                            Term ID                            |
    +---------------------------------------------------------------+
 20 |R|                        Term Offset                          |
    +-+-------------------------------------------------------------+
 24 |                            Length                             |
    +---------------------------------------------------------------+
"""

from __future__ import annotations

from typing import ClassVar

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol.header_flyweight import (
    FRAME_LENGTH_FIELD_OFFSET,
    HDR_TYPE_NAK,
    MIN_HEADER_LENGTH,
    FrameStatus,
    HeaderFlyweight,
    check_header,
)

__all__ = [
    "NAK_HEADER_LENGTH",
    "NAK_LENGTH_FIELD_OFFSET",
    "NAK_SESSION_ID_FIELD_OFFSET",
    "NAK_STREAM_ID_FIELD_OFFSET",
    "NAK_TERM_ID_FIELD_OFFSET",
    "NAK_TERM_OFFSET_FIELD_OFFSET",
    "NakFlyweight",
    "validate_nak_frame",
]

NAK_SESSION_ID_FIELD_OFFSET = MIN_HEADER_LENGTH
NAK_STREAM_ID_FIELD_OFFSET = NAK_SESSION_ID_FIELD_OFFSET + 4
NAK_TERM_ID_FIELD_OFFSET = NAK_STREAM_ID_FIELD_OFFSET + 4
NAK_TERM_OFFSET_FIELD_OFFSET = NAK_TERM_ID_FIELD_OFFSET + 4
NAK_LENGTH_FIELD_OFFSET = NAK_TERM_OFFSET_FIELD_OFFSET + 4
NAK_HEADER_LENGTH = NAK_LENGTH_FIELD_OFFSET + 4


def validate_nak_frame(buffer: AtomicBuffer, offset: int, length: int) -> FrameStatus:
    """Check a NAK datagram of ``length`` bytes at ``offset``; never raise."""
    status = check_header(buffer, offset, length, NAK_HEADER_LENGTH, HDR_TYPE_NAK)
    if status:
        return status
    frame_length = buffer.get_int32(offset + FRAME_LENGTH_FIELD_OFFSET)
    if frame_length < NAK_HEADER_LENGTH:
        return FrameStatus.BAD_FRAME_LENGTH
    if frame_length > length:
        return FrameStatus.TRUNCATED
    if (
        buffer.get_int32(offset + NAK_TERM_OFFSET_FIELD_OFFSET) < 0
        or buffer.get_int32(offset + NAK_LENGTH_FIELD_OFFSET) < 0
    ):
        return FrameStatus.BAD_FIELD
    return FrameStatus.VALID


class NakFlyweight(HeaderFlyweight):
    """A NAK frame."""

    __slots__ = ()

    HEADER_LENGTH: ClassVar[int] = NAK_HEADER_LENGTH

    @property
    def session_id(self) -> int:
        """Bytes 8-11: the session of the publication asked to retransmit."""
        return self.buffer.get_int32(self.offset + NAK_SESSION_ID_FIELD_OFFSET)

    @session_id.setter
    def session_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + NAK_SESSION_ID_FIELD_OFFSET, value)

    @property
    def stream_id(self) -> int:
        """Bytes 12-15: the stream of the publication asked to retransmit."""
        return self.buffer.get_int32(self.offset + NAK_STREAM_ID_FIELD_OFFSET)

    @stream_id.setter
    def stream_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + NAK_STREAM_ID_FIELD_OFFSET, value)

    @property
    def term_id(self) -> int:
        """Bytes 16-19: the term in which the gap lies."""
        return self.buffer.get_int32(self.offset + NAK_TERM_ID_FIELD_OFFSET)

    @term_id.setter
    def term_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + NAK_TERM_ID_FIELD_OFFSET, value)

    @property
    def term_offset(self) -> int:
        """Bytes 20-23: where the gap starts in that term, in bytes."""
        return self.buffer.get_int32(self.offset + NAK_TERM_OFFSET_FIELD_OFFSET)

    @term_offset.setter
    def term_offset(self, value: int) -> None:
        self.buffer.put_int32(self.offset + NAK_TERM_OFFSET_FIELD_OFFSET, value)

    @property
    def length(self) -> int:
        """The number of bytes of the term to retransmit from ``term_offset``."""
        return self.buffer.get_int32(self.offset + NAK_LENGTH_FIELD_OFFSET)

    @length.setter
    def length(self, value: int) -> None:
        self.buffer.put_int32(self.offset + NAK_LENGTH_FIELD_OFFSET, value)

    def put_nak(
        self,
        *,
        session_id: int,
        stream_id: int,
        term_id: int,
        term_offset: int,
        length: int,
        flags: int = 0,
    ) -> int:
        """Write the whole frame; return its length (28)."""
        self.put_header(NAK_HEADER_LENGTH, flags, HDR_TYPE_NAK)
        buffer = self.buffer
        offset = self.offset
        buffer.put_int32(offset + NAK_SESSION_ID_FIELD_OFFSET, session_id)
        buffer.put_int32(offset + NAK_STREAM_ID_FIELD_OFFSET, stream_id)
        buffer.put_int32(offset + NAK_TERM_ID_FIELD_OFFSET, term_id)
        buffer.put_int32(offset + NAK_TERM_OFFSET_FIELD_OFFSET, term_offset)
        buffer.put_int32(offset + NAK_LENGTH_FIELD_OFFSET, length)
        return NAK_HEADER_LENGTH

    def validate(self, length: int) -> FrameStatus:
        """Check the ``length`` bytes at this offset as a NAK frame; never raise.

        The rules are :func:`validate_nak_frame`'s.
        """
        return validate_nak_frame(self.buffer, self.offset, length)
