"""SETUP frame (40 bytes): a publication announcing its stream to receivers; term and MTU limits.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |R|                       Frame Length                          |
    +-+-------------+-+-+-+-+-+-+-+-+-------------------------------+
  4 |    Version    |S|G|  Flags    |         Type (=0x05)          |
    +---------------+-+-+-----------+-------------------------------+
  8 |R|                        Term Offset                          |
    +-+-------------------------------------------------------------+
 12 |                          Session ID                           |
    +---------------------------------------------------------------+
 16 |                           Stream ID                           |
    +---------------------------------------------------------------+
 20 |                        Initial Term ID                        |
    +---------------------------------------------------------------+
 24 |                        Active Term ID                         |
    +---------------------------------------------------------------+
 28 |                          Term Length                          |
    +---------------------------------------------------------------+
 32 |                             MTU                               |
    +---------------------------------------------------------------+
 36 |                             TTL                               |
    +---------------------------------------------------------------+

Flags: S (SEND_RESPONSE, 0x80) asks for a response channel, G (GROUP, 0x40) marks a multicast
group. A receiver builds a publication image from a SETUP, so validation also checks what the
image would be built from: a term length that is a power of two from 64 KiB to 1 GiB, an MTU
that is a multiple of 32 above 32 and at most 65504 (the largest UDP payload Aeron uses), and
a 32-aligned term offset inside the term.
"""

from __future__ import annotations

from typing import ClassVar

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.log_buffer_descriptor import TERM_MAX_LENGTH, TERM_MIN_LENGTH
from aeromq.transport.protocol.data_header_flyweight import FRAME_ALIGNMENT
from aeromq.transport.protocol.header_flyweight import (
    FRAME_LENGTH_FIELD_OFFSET,
    HDR_TYPE_SETUP,
    MIN_HEADER_LENGTH,
    FrameStatus,
    HeaderFlyweight,
    check_header,
)

__all__ = [
    "MAX_UDP_PAYLOAD_LENGTH",
    "SETUP_ACTIVE_TERM_ID_FIELD_OFFSET",
    "SETUP_GROUP_FLAG",
    "SETUP_HEADER_LENGTH",
    "SETUP_INITIAL_TERM_ID_FIELD_OFFSET",
    "SETUP_MTU_FIELD_OFFSET",
    "SETUP_SEND_RESPONSE_FLAG",
    "SETUP_SESSION_ID_FIELD_OFFSET",
    "SETUP_STREAM_ID_FIELD_OFFSET",
    "SETUP_TERM_LENGTH_FIELD_OFFSET",
    "SETUP_TERM_OFFSET_FIELD_OFFSET",
    "SETUP_TTL_FIELD_OFFSET",
    "SetupFlyweight",
    "is_valid_mtu",
    "is_valid_term_length",
    "validate_setup_frame",
]

SETUP_TERM_OFFSET_FIELD_OFFSET = MIN_HEADER_LENGTH
SETUP_SESSION_ID_FIELD_OFFSET = SETUP_TERM_OFFSET_FIELD_OFFSET + 4
SETUP_STREAM_ID_FIELD_OFFSET = SETUP_SESSION_ID_FIELD_OFFSET + 4
SETUP_INITIAL_TERM_ID_FIELD_OFFSET = SETUP_STREAM_ID_FIELD_OFFSET + 4
SETUP_ACTIVE_TERM_ID_FIELD_OFFSET = SETUP_INITIAL_TERM_ID_FIELD_OFFSET + 4
SETUP_TERM_LENGTH_FIELD_OFFSET = SETUP_ACTIVE_TERM_ID_FIELD_OFFSET + 4
SETUP_MTU_FIELD_OFFSET = SETUP_TERM_LENGTH_FIELD_OFFSET + 4
SETUP_TTL_FIELD_OFFSET = SETUP_MTU_FIELD_OFFSET + 4
SETUP_HEADER_LENGTH = SETUP_TTL_FIELD_OFFSET + 4

SETUP_SEND_RESPONSE_FLAG = 0x80
SETUP_GROUP_FLAG = 0x40

MAX_UDP_PAYLOAD_LENGTH = 65504
"""The largest MTU: 65535 less the IP and UDP headers, rounded down to a multiple of 32."""


def is_valid_term_length(term_length: int) -> bool:
    """A power of two from 64 KiB to 1 GiB."""
    return (
        TERM_MIN_LENGTH <= term_length <= TERM_MAX_LENGTH and term_length & (term_length - 1) == 0
    )


def is_valid_mtu(mtu: int) -> bool:
    """More than a data header, at most 65504, and a multiple of 32 (Aeron's rule)."""
    return FRAME_ALIGNMENT < mtu <= MAX_UDP_PAYLOAD_LENGTH and mtu % FRAME_ALIGNMENT == 0


def validate_setup_frame(buffer: AtomicBuffer, offset: int, length: int) -> FrameStatus:
    """Check a SETUP datagram of ``length`` bytes at ``offset``; never raise."""
    status = check_header(buffer, offset, length, SETUP_HEADER_LENGTH, HDR_TYPE_SETUP)
    if status:
        return status
    frame_length = buffer.get_int32(offset + FRAME_LENGTH_FIELD_OFFSET)
    if frame_length < SETUP_HEADER_LENGTH:
        return FrameStatus.BAD_FRAME_LENGTH
    if frame_length > length:
        return FrameStatus.TRUNCATED
    term_length = buffer.get_int32(offset + SETUP_TERM_LENGTH_FIELD_OFFSET)
    term_offset = buffer.get_int32(offset + SETUP_TERM_OFFSET_FIELD_OFFSET)
    if (
        not is_valid_term_length(term_length)
        or not is_valid_mtu(buffer.get_int32(offset + SETUP_MTU_FIELD_OFFSET))
        or not 0 <= term_offset <= term_length
        or term_offset % FRAME_ALIGNMENT
    ):
        return FrameStatus.BAD_FIELD
    return FrameStatus.VALID


class SetupFlyweight(HeaderFlyweight):
    """A SETUP frame."""

    __slots__ = ()

    HEADER_LENGTH: ClassVar[int] = SETUP_HEADER_LENGTH

    @property
    def term_offset(self) -> int:
        """Bytes 8-11: the publication's offset in its active term, in bytes (32-aligned)."""
        return self.buffer.get_int32(self.offset + SETUP_TERM_OFFSET_FIELD_OFFSET)

    @term_offset.setter
    def term_offset(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SETUP_TERM_OFFSET_FIELD_OFFSET, value)

    @property
    def session_id(self) -> int:
        """Bytes 12-15: the session of the publication announced."""
        return self.buffer.get_int32(self.offset + SETUP_SESSION_ID_FIELD_OFFSET)

    @session_id.setter
    def session_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SETUP_SESSION_ID_FIELD_OFFSET, value)

    @property
    def stream_id(self) -> int:
        """Bytes 16-19: the stream of the publication announced."""
        return self.buffer.get_int32(self.offset + SETUP_STREAM_ID_FIELD_OFFSET)

    @stream_id.setter
    def stream_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SETUP_STREAM_ID_FIELD_OFFSET, value)

    @property
    def initial_term_id(self) -> int:
        """Bytes 20-23: the term id at position 0 of the stream."""
        return self.buffer.get_int32(self.offset + SETUP_INITIAL_TERM_ID_FIELD_OFFSET)

    @initial_term_id.setter
    def initial_term_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SETUP_INITIAL_TERM_ID_FIELD_OFFSET, value)

    @property
    def active_term_id(self) -> int:
        """Bytes 24-27: the term the publication is writing now."""
        return self.buffer.get_int32(self.offset + SETUP_ACTIVE_TERM_ID_FIELD_OFFSET)

    @active_term_id.setter
    def active_term_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SETUP_ACTIVE_TERM_ID_FIELD_OFFSET, value)

    @property
    def term_length(self) -> int:
        """Bytes 28-31: the length of each term in bytes (a power of two, 64 KiB to 1 GiB)."""
        return self.buffer.get_int32(self.offset + SETUP_TERM_LENGTH_FIELD_OFFSET)

    @term_length.setter
    def term_length(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SETUP_TERM_LENGTH_FIELD_OFFSET, value)

    @property
    def mtu(self) -> int:
        """Bytes 32-35: the largest datagram the sender sends, in bytes (a multiple of 32)."""
        return self.buffer.get_int32(self.offset + SETUP_MTU_FIELD_OFFSET)

    @mtu.setter
    def mtu(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SETUP_MTU_FIELD_OFFSET, value)

    @property
    def ttl(self) -> int:
        """Bytes 36-39: the multicast time to live the sender uses (0: the default)."""
        return self.buffer.get_int32(self.offset + SETUP_TTL_FIELD_OFFSET)

    @ttl.setter
    def ttl(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SETUP_TTL_FIELD_OFFSET, value)

    def put_setup(
        self,
        *,
        session_id: int,
        stream_id: int,
        initial_term_id: int,
        active_term_id: int,
        term_offset: int,
        term_length: int,
        mtu: int,
        ttl: int = 0,
        flags: int = 0,
    ) -> int:
        """Write the whole frame; return its length (40)."""
        self.put_header(SETUP_HEADER_LENGTH, flags, HDR_TYPE_SETUP)
        buffer = self.buffer
        offset = self.offset
        buffer.put_int32(offset + SETUP_TERM_OFFSET_FIELD_OFFSET, term_offset)
        buffer.put_int32(offset + SETUP_SESSION_ID_FIELD_OFFSET, session_id)
        buffer.put_int32(offset + SETUP_STREAM_ID_FIELD_OFFSET, stream_id)
        buffer.put_int32(offset + SETUP_INITIAL_TERM_ID_FIELD_OFFSET, initial_term_id)
        buffer.put_int32(offset + SETUP_ACTIVE_TERM_ID_FIELD_OFFSET, active_term_id)
        buffer.put_int32(offset + SETUP_TERM_LENGTH_FIELD_OFFSET, term_length)
        buffer.put_int32(offset + SETUP_MTU_FIELD_OFFSET, mtu)
        buffer.put_int32(offset + SETUP_TTL_FIELD_OFFSET, ttl)
        return SETUP_HEADER_LENGTH

    def validate(self, length: int) -> FrameStatus:
        """Check the ``length`` bytes at this offset as a SETUP frame; never raise.

        The rules are :func:`validate_setup_frame`'s.
        """
        return validate_setup_frame(self.buffer, self.offset, length)
