"""DATA and PAD frames (32-byte header), as in the log buffer; heartbeats; datagram validation.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |R|                       Frame Length                          |
    +-+-------------+-+-+-+-+-+-+-+-+-------------------------------+
  4 |    Version    |B|E|S|  Flags  |        Type (DATA / PAD)      |
    +---------------+-+-+-+---------+-------------------------------+
  8 |R|                        Term Offset                          |
    +-+-------------------------------------------------------------+
 12 |                          Session ID                           |
    +---------------------------------------------------------------+
 16 |                           Stream ID                           |
    +---------------------------------------------------------------+
 20 |                            Term ID                            |
    +---------------------------------------------------------------+
 24 |                        Reserved Value                         |
    |                                                               |
    +---------------------------------------------------------------+
 32 |                            Data                              ...
   ...                                                              |
    +---------------------------------------------------------------+

Flags: B (BEGIN, 0x80) and E (END, 0x40) mark a message's first and last fragment (0xC0 for
an unfragmented one); S (EOS, 0x20) marks the end of the stream. Frame length is 32 plus the
payload, not aligned; the next frame starts at ``align(frame_length, 32)``.

On UDP a datagram carries one or more frames copied from the term, back to back at their
aligned lengths and consecutive term offsets. A PAD frame ends a term: only its 32-byte header
travels, its frame length still covering the rest of the term, so it is the last frame of its
datagram. A heartbeat is a lone DATA header with frame length 0 (flags 0xC0, plus EOS at the
end of the stream), sent when the publication has nothing new.
"""

from __future__ import annotations

import struct
from typing import ClassVar

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol.header_flyweight import (
    CURRENT_VERSION,
    FRAME_LENGTH_FIELD_OFFSET,
    HDR_TYPE_DATA,
    HDR_TYPE_PAD,
    MIN_HEADER_LENGTH,
    TYPE_FIELD_OFFSET,
    FrameStatus,
    HeaderFlyweight,
)

__all__ = [
    "BEGIN_AND_END_FLAGS",
    "BEGIN_END_AND_EOS_FLAGS",
    "BEGIN_FLAG",
    "DATA_HEADER_LENGTH",
    "DATA_OFFSET",
    "DEFAULT_RESERVED_VALUE",
    "END_FLAG",
    "EOS_FLAG",
    "FRAME_ALIGNMENT",
    "RESERVED_VALUE_FIELD_OFFSET",
    "SESSION_ID_FIELD_OFFSET",
    "STREAM_ID_FIELD_OFFSET",
    "TERM_ID_FIELD_OFFSET",
    "TERM_OFFSET_FIELD_OFFSET",
    "DataHeaderFlyweight",
    "validate_data_frames",
]

TERM_OFFSET_FIELD_OFFSET = MIN_HEADER_LENGTH
SESSION_ID_FIELD_OFFSET = TERM_OFFSET_FIELD_OFFSET + 4
STREAM_ID_FIELD_OFFSET = SESSION_ID_FIELD_OFFSET + 4
TERM_ID_FIELD_OFFSET = STREAM_ID_FIELD_OFFSET + 4
RESERVED_VALUE_FIELD_OFFSET = TERM_ID_FIELD_OFFSET + 4
DATA_HEADER_LENGTH = RESERVED_VALUE_FIELD_OFFSET + 8
DATA_OFFSET = DATA_HEADER_LENGTH

BEGIN_FLAG = 0x80
END_FLAG = 0x40
EOS_FLAG = 0x20
BEGIN_AND_END_FLAGS = BEGIN_FLAG | END_FLAG
BEGIN_END_AND_EOS_FLAGS = BEGIN_AND_END_FLAGS | EOS_FLAG

DEFAULT_RESERVED_VALUE = 0
FRAME_ALIGNMENT = 32

_VALID = FrameStatus.VALID
_TRUNCATED = FrameStatus.TRUNCATED
_BAD_VERSION = FrameStatus.BAD_VERSION
_WRONG_TYPE = FrameStatus.WRONG_TYPE
_BAD_FRAME_LENGTH = FrameStatus.BAD_FRAME_LENGTH
_BAD_FIELD = FrameStatus.BAD_FIELD
_ALIGN_MASK = FRAME_ALIGNMENT - 1
_FRAME_START = struct.Struct("<iBxHi")
"""Frame length, version, (flags), type and term offset: one read per frame when validating."""


def validate_data_frames(buffer: AtomicBuffer, offset: int, length: int) -> FrameStatus:
    """Check a datagram of DATA / PAD frames (or a heartbeat) at ``offset``; never raise.

    Every frame must be version 0, DATA or PAD, at a 32-aligned term offset that follows the
    previous frame's, with a frame length of at least 32 that fits the datagram (a PAD's
    header only) and a PAD only last.
    """
    if offset < 0 or length < MIN_HEADER_LENGTH or offset + length > buffer.capacity:
        return _TRUNCATED
    unpack_from = _FRAME_START.unpack_from
    position = 0
    expected_term_offset = -1
    while True:
        if length - position < DATA_HEADER_LENGTH:
            return _TRUNCATED
        frame_length, version, frame_type, term_offset = unpack_from(buffer, offset + position)
        if version != CURRENT_VERSION:
            return _BAD_VERSION
        if frame_type != HDR_TYPE_DATA and frame_type != HDR_TYPE_PAD:
            return _WRONG_TYPE
        if term_offset < 0 or term_offset & _ALIGN_MASK:
            return _BAD_FIELD
        if expected_term_offset >= 0 and term_offset != expected_term_offset:
            return _BAD_FIELD
        if frame_type == HDR_TYPE_DATA:
            if frame_length == 0:
                return _VALID if length == DATA_HEADER_LENGTH else _BAD_FRAME_LENGTH
            if frame_length < DATA_HEADER_LENGTH:
                return _BAD_FRAME_LENGTH
            if frame_length > length - position:
                return _TRUNCATED
            aligned_length = (frame_length + _ALIGN_MASK) & ~_ALIGN_MASK
            position += aligned_length
            if position >= length:
                return _VALID
            expected_term_offset = term_offset + aligned_length
        else:  # PAD: only its header travels, and it ends the term
            if frame_length < DATA_HEADER_LENGTH or frame_length & _ALIGN_MASK:
                return _BAD_FRAME_LENGTH
            return _VALID if position + DATA_HEADER_LENGTH == length else _BAD_FRAME_LENGTH


class DataHeaderFlyweight(HeaderFlyweight):
    """A DATA or PAD frame header in a datagram or a term."""

    __slots__ = ()

    HEADER_LENGTH: ClassVar[int] = DATA_HEADER_LENGTH

    @property
    def term_offset(self) -> int:
        """Bytes 8-11: where the frame starts in its term, in bytes (a multiple of 32)."""
        return self.buffer.get_int32(self.offset + TERM_OFFSET_FIELD_OFFSET)

    @term_offset.setter
    def term_offset(self, value: int) -> None:
        self.buffer.put_int32(self.offset + TERM_OFFSET_FIELD_OFFSET, value)

    @property
    def session_id(self) -> int:
        """Bytes 12-15: the session of the publication that wrote the frame."""
        return self.buffer.get_int32(self.offset + SESSION_ID_FIELD_OFFSET)

    @session_id.setter
    def session_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SESSION_ID_FIELD_OFFSET, value)

    @property
    def stream_id(self) -> int:
        """Bytes 16-19: the stream the frame belongs to."""
        return self.buffer.get_int32(self.offset + STREAM_ID_FIELD_OFFSET)

    @stream_id.setter
    def stream_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + STREAM_ID_FIELD_OFFSET, value)

    @property
    def term_id(self) -> int:
        """Bytes 20-23: the id of the term the frame is in."""
        return self.buffer.get_int32(self.offset + TERM_ID_FIELD_OFFSET)

    @term_id.setter
    def term_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + TERM_ID_FIELD_OFFSET, value)

    @property
    def reserved_value(self) -> int:
        """Bytes 24-31 (i64): a value the publisher may stamp on each frame (checksum, timestamp).

        ``DEFAULT_RESERVED_VALUE`` (0) unless a reserved value supplier set it.
        """
        return self.buffer.get_int64(self.offset + RESERVED_VALUE_FIELD_OFFSET)

    @reserved_value.setter
    def reserved_value(self, value: int) -> None:
        self.buffer.put_int64(self.offset + RESERVED_VALUE_FIELD_OFFSET, value)

    @property
    def data_offset(self) -> int:
        """Index in the buffer of the frame's first payload byte."""
        return self.offset + DATA_OFFSET

    def is_heartbeat(self, length: int) -> bool:
        """Whether a datagram of ``length`` bytes at this offset is a heartbeat."""
        return (
            length == DATA_HEADER_LENGTH
            and self.buffer.get_int32(self.offset + FRAME_LENGTH_FIELD_OFFSET) == 0
            and self.buffer.get_uint16(self.offset + TYPE_FIELD_OFFSET) == HDR_TYPE_DATA
        )

    def is_end_of_stream(self) -> bool:
        """Whether the EOS flag (0x20) is set: the publication ended at this position."""
        return bool(self.flags & EOS_FLAG)

    def put_data_header(
        self,
        *,
        frame_length: int,
        flags: int,
        header_type: int,
        term_offset: int,
        session_id: int,
        stream_id: int,
        term_id: int,
        reserved_value: int = DEFAULT_RESERVED_VALUE,
    ) -> int:
        """Write all 32 bytes of the header; return ``DATA_HEADER_LENGTH``."""
        self.put_header(frame_length, flags, header_type)
        buffer = self.buffer
        offset = self.offset
        buffer.put_int32(offset + TERM_OFFSET_FIELD_OFFSET, term_offset)
        buffer.put_int32(offset + SESSION_ID_FIELD_OFFSET, session_id)
        buffer.put_int32(offset + STREAM_ID_FIELD_OFFSET, stream_id)
        buffer.put_int32(offset + TERM_ID_FIELD_OFFSET, term_id)
        buffer.put_int64(offset + RESERVED_VALUE_FIELD_OFFSET, reserved_value)
        return DATA_HEADER_LENGTH

    def put_default_header(self, session_id: int, stream_id: int, term_id: int) -> int:
        """The header a publication stamps on its frames (Aeron's ``createDefaultHeader``).

        Frame length 0, version 0, flags BEGIN|END, type DATA, term offset 0: the appender
        fills in the rest. This is the ``default_frame_header`` of a log buffer's metadata.
        """
        return self.put_data_header(
            frame_length=0,
            flags=BEGIN_AND_END_FLAGS,
            header_type=HDR_TYPE_DATA,
            term_offset=0,
            session_id=session_id,
            stream_id=stream_id,
            term_id=term_id,
        )

    def put_heartbeat(
        self,
        *,
        session_id: int,
        stream_id: int,
        term_id: int,
        term_offset: int,
        end_of_stream: bool = False,
    ) -> int:
        """Write a heartbeat (frame length 0) for the given position; return its length (32)."""
        return self.put_data_header(
            frame_length=0,
            flags=BEGIN_END_AND_EOS_FLAGS if end_of_stream else BEGIN_AND_END_FLAGS,
            header_type=HDR_TYPE_DATA,
            term_offset=term_offset,
            session_id=session_id,
            stream_id=stream_id,
            term_id=term_id,
        )

    def validate(self, length: int) -> FrameStatus:
        """Check the datagram of ``length`` bytes at this offset; see ``validate_data_frames``."""
        return validate_data_frames(self.buffer, self.offset, length)
