"""The 8 bytes that begin every Aeron UDP frame, the frame types, and validation status codes.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |R|                       Frame Length                          |
    +-+-------------+-+-+-+-+-+-+-+-+-------------------------------+
  4 |    Version    |     Flags     |              Type             |
    +---------------+---------------+-------------------------------+
  8 |                    Depends on the type                       ...
   ...                                                              |
    +---------------------------------------------------------------+

All fields are little-endian. ``Type`` is a u16 (Aeron's C declares it int16, so EXT, 0xFFFF,
is -1 there). Version is always ``CURRENT_VERSION`` (0).

The receiver and the sender validate every datagram before they use it, with the
``validate_*`` functions of these modules (or a flyweight's ``validate``): they return a
:class:`FrameStatus`, never raise, so a bad datagram is counted and dropped at no more cost
than a good one. Status codes:

================  ==========================================================================
VALID             the frame may be used
TRUNCATED         shorter than its header, or than the length its header claims
BAD_VERSION       a version other than 0
UNKNOWN_TYPE      a type this protocol does not define (or one that has no use here)
WRONG_TYPE        a flyweight's ``validate`` found another type than its own
BAD_FRAME_LENGTH  a frame length that is too small, misaligned, or does not add up
BAD_FIELD         a field outside its domain (a negative offset, a term length that is not
                  a power of two, an MTU that is not a multiple of 32, ...)
================  ==========================================================================
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar, Self

from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "CURRENT_VERSION",
    "FLAGS_FIELD_OFFSET",
    "FRAME_LENGTH_FIELD_OFFSET",
    "HDR_TYPE_DATA",
    "HDR_TYPE_ERR",
    "HDR_TYPE_EXT",
    "HDR_TYPE_NAK",
    "HDR_TYPE_PAD",
    "HDR_TYPE_RES",
    "HDR_TYPE_RSP_SETUP",
    "HDR_TYPE_RTTM",
    "HDR_TYPE_SETUP",
    "HDR_TYPE_SM",
    "MIN_HEADER_LENGTH",
    "TYPE_FIELD_OFFSET",
    "VERSION_FIELD_OFFSET",
    "FrameStatus",
    "HeaderFlyweight",
    "check_header",
]

FRAME_LENGTH_FIELD_OFFSET = 0
VERSION_FIELD_OFFSET = FRAME_LENGTH_FIELD_OFFSET + 4
FLAGS_FIELD_OFFSET = VERSION_FIELD_OFFSET + 1
TYPE_FIELD_OFFSET = FLAGS_FIELD_OFFSET + 1
MIN_HEADER_LENGTH = TYPE_FIELD_OFFSET + 2

CURRENT_VERSION = 0

HDR_TYPE_PAD = 0x00
HDR_TYPE_DATA = 0x01
HDR_TYPE_NAK = 0x02
HDR_TYPE_SM = 0x03
HDR_TYPE_ERR = 0x04
HDR_TYPE_SETUP = 0x05
HDR_TYPE_RTTM = 0x06
HDR_TYPE_RES = 0x07
HDR_TYPE_RSP_SETUP = 0x0B
HDR_TYPE_EXT = 0xFFFF


class FrameStatus(IntEnum):
    """The verdict of a frame validation (see the module docstring)."""

    VALID = 0
    TRUNCATED = 1
    BAD_VERSION = 2
    UNKNOWN_TYPE = 3
    WRONG_TYPE = 4
    BAD_FRAME_LENGTH = 5
    BAD_FIELD = 6


def check_header(
    buffer: AtomicBuffer, offset: int, length: int, header_length: int, frame_type: int
) -> FrameStatus:
    """The checks every control frame shares: room for the datagram, version, type, length."""
    if offset < 0 or length < MIN_HEADER_LENGTH or offset + length > buffer.capacity:
        return FrameStatus.TRUNCATED
    if buffer.get_uint8(offset + VERSION_FIELD_OFFSET) != CURRENT_VERSION:
        return FrameStatus.BAD_VERSION
    if buffer.get_uint16(offset + TYPE_FIELD_OFFSET) != frame_type:
        return FrameStatus.WRONG_TYPE
    if length < header_length:
        return FrameStatus.TRUNCATED
    return FrameStatus.VALID


class HeaderFlyweight:
    """A view of a frame at ``offset`` in ``buffer``: getters and setters, no copies.

    ``wrap`` moves the view to another frame so one flyweight serves every datagram.
    """

    __slots__ = ("buffer", "offset")

    HEADER_LENGTH: ClassVar[int] = MIN_HEADER_LENGTH

    def __init__(self, buffer: AtomicBuffer, offset: int = 0) -> None:
        self.buffer = buffer
        self.offset = offset

    def wrap(self, buffer: AtomicBuffer, offset: int = 0) -> Self:
        """Point this view at the frame at ``offset`` in ``buffer``; return ``self`` (no copy)."""
        self.buffer = buffer
        self.offset = offset
        return self

    @property
    def frame_length(self) -> int:
        """Bytes 0-3: the frame's length in bytes with its header, unaligned (0: a heartbeat)."""
        return self.buffer.get_int32(self.offset + FRAME_LENGTH_FIELD_OFFSET)

    @frame_length.setter
    def frame_length(self, value: int) -> None:
        self.buffer.put_int32(self.offset + FRAME_LENGTH_FIELD_OFFSET, value)

    @property
    def version(self) -> int:
        """Byte 4: the protocol version, ``CURRENT_VERSION`` (0) on every valid frame."""
        return self.buffer.get_uint8(self.offset + VERSION_FIELD_OFFSET)

    @version.setter
    def version(self, value: int) -> None:
        self.buffer.put_int8(self.offset + VERSION_FIELD_OFFSET, value)

    @property
    def flags(self) -> int:
        """Byte 5: the flag bits, whose meaning each frame type's diagram gives."""
        return self.buffer.get_uint8(self.offset + FLAGS_FIELD_OFFSET)

    @flags.setter
    def flags(self, value: int) -> None:
        self.buffer.put_int8(self.offset + FLAGS_FIELD_OFFSET, value)

    @property
    def header_type(self) -> int:
        """Bytes 6-7 (u16): the frame type, one of the ``HDR_TYPE_*`` constants."""
        return self.buffer.get_uint16(self.offset + TYPE_FIELD_OFFSET)

    @header_type.setter
    def header_type(self, value: int) -> None:
        self.buffer.put_int16(self.offset + TYPE_FIELD_OFFSET, value)

    def put_header(self, frame_length: int, flags: int, header_type: int) -> None:
        """Write the common 8 bytes: length, version 0, flags and type."""
        buffer = self.buffer
        offset = self.offset
        buffer.put_int32(offset + FRAME_LENGTH_FIELD_OFFSET, frame_length)
        buffer.put_int8(offset + VERSION_FIELD_OFFSET, CURRENT_VERSION)
        buffer.put_int8(offset + FLAGS_FIELD_OFFSET, flags)
        buffer.put_int16(offset + TYPE_FIELD_OFFSET, header_type)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(offset={self.offset}, frame_length={self.frame_length}, "
            f"version={self.version}, flags=0x{self.flags:02x}, type=0x{self.header_type:02x})"
        )
