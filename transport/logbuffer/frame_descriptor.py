"""The framing of messages in a term: Aeron's data frame header and its field accessors.

Every message, fragment and padding record in a term starts on a 32-byte boundary with this
32-byte header (all fields little-endian)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |R|                       Frame Length                          |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |  Version      |B|E|S| Flags   |             Type              |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |R|                       Term Offset                           |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                          Session ID                           |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                           Stream ID                           |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                            Term ID                            |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                        Reserved Value                         |
    |                                                               |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                        Encoded Message                       ...
   ...                                                              |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

Frame Length is 32 plus the payload, unaligned; the next frame starts at
``align(frame_length, FRAME_ALIGNMENT)``. A writer stores ``-length`` (release) before it writes
the rest, then ``+length`` (release) once the frame is complete: readers treat ``<= 0`` as
"nothing here yet". (B)egin and (E)nd mark the fragments of a message (both set: unfragmented),
(S) is end of stream. Type is ``HDR_TYPE_DATA`` for messages and ``HDR_TYPE_PAD`` for padding.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "BEGIN_FLAG",
    "DATA_OFFSET",
    "END_FLAG",
    "EOS_FLAG",
    "FLAGS_FIELD_OFFSET",
    "FRAME_ALIGNMENT",
    "FRAME_LENGTH_FIELD_OFFSET",
    "HDR_LENGTH",
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
    "MAX_MESSAGE_LENGTH",
    "RESERVED_VALUE_FIELD_OFFSET",
    "SESSION_ID_FIELD_OFFSET",
    "STREAM_ID_FIELD_OFFSET",
    "TERM_ID_FIELD_OFFSET",
    "TERM_OFFSET_FIELD_OFFSET",
    "TYPE_FIELD_OFFSET",
    "UNFRAGMENTED",
    "VERSION_FIELD_OFFSET",
    "align",
    "compute_max_message_length",
    "frame_flags",
    "frame_length",
    "frame_length_ordered",
    "frame_length_volatile",
    "frame_type",
    "frame_version",
    "is_padding_frame",
    "is_power_of_two",
    "set_frame_flags",
    "set_frame_term_id",
    "set_frame_term_offset",
    "set_frame_type",
]

FRAME_LENGTH_FIELD_OFFSET: Final = 0
VERSION_FIELD_OFFSET: Final = FRAME_LENGTH_FIELD_OFFSET + 4
FLAGS_FIELD_OFFSET: Final = VERSION_FIELD_OFFSET + 1
TYPE_FIELD_OFFSET: Final = FLAGS_FIELD_OFFSET + 1
TERM_OFFSET_FIELD_OFFSET: Final = TYPE_FIELD_OFFSET + 2
SESSION_ID_FIELD_OFFSET: Final = TERM_OFFSET_FIELD_OFFSET + 4
STREAM_ID_FIELD_OFFSET: Final = SESSION_ID_FIELD_OFFSET + 4
TERM_ID_FIELD_OFFSET: Final = STREAM_ID_FIELD_OFFSET + 4
RESERVED_VALUE_FIELD_OFFSET: Final = TERM_ID_FIELD_OFFSET + 4
DATA_OFFSET: Final = RESERVED_VALUE_FIELD_OFFSET + 8
HDR_LENGTH: Final = DATA_OFFSET
"""Length of the data frame header; the payload starts here."""

FRAME_ALIGNMENT: Final = 32
"""Every frame starts on a multiple of this; the length field holds the unaligned length."""

MAX_MESSAGE_LENGTH: Final = 16 * 1024 * 1024
"""A message is never longer than this, whatever the term length."""

BEGIN_FLAG: Final = 0x80
END_FLAG: Final = 0x40
UNFRAGMENTED: Final = BEGIN_FLAG | END_FLAG
EOS_FLAG: Final = 0x20

HDR_TYPE_PAD: Final = 0x00
HDR_TYPE_DATA: Final = 0x01
HDR_TYPE_NAK: Final = 0x02
HDR_TYPE_SM: Final = 0x03
HDR_TYPE_ERR: Final = 0x04
HDR_TYPE_SETUP: Final = 0x05
HDR_TYPE_RTTM: Final = 0x06
HDR_TYPE_RES: Final = 0x07
HDR_TYPE_RSP_SETUP: Final = 0x0B
HDR_TYPE_EXT: Final = 0xFFFF


def align(value: int, alignment: int) -> int:
    """``value`` rounded up to a multiple of ``alignment`` (a power of two)."""
    return (value + alignment - 1) & -alignment


def is_power_of_two(value: int) -> bool:
    return value > 0 and (value & (value - 1)) == 0


def compute_max_message_length(term_length: int) -> int:
    """The longest message a log of ``term_length`` accepts: min(term_length / 8, 16 MiB)."""
    return min(term_length // 8, MAX_MESSAGE_LENGTH)


def frame_length(buffer: AtomicBuffer, term_offset: int) -> int:
    return buffer.get_int32(term_offset)


def frame_length_volatile(buffer: AtomicBuffer, term_offset: int) -> int:
    """The frame length with acquire semantics: a positive value means the frame is complete."""
    return buffer.get_int32_volatile(term_offset)


def frame_length_ordered(buffer: AtomicBuffer, term_offset: int, length: int) -> None:
    """Publish a frame length with release semantics, after the rest of the frame is written."""
    buffer.put_int32_ordered(term_offset, length)


def frame_version(buffer: AtomicBuffer, term_offset: int) -> int:
    return buffer.get_uint8(term_offset + VERSION_FIELD_OFFSET)


def frame_flags(buffer: AtomicBuffer, term_offset: int) -> int:
    return buffer.get_uint8(term_offset + FLAGS_FIELD_OFFSET)


def set_frame_flags(buffer: AtomicBuffer, term_offset: int, flags: int) -> None:
    buffer.put_int8(term_offset + FLAGS_FIELD_OFFSET, flags)


def frame_type(buffer: AtomicBuffer, term_offset: int) -> int:
    return buffer.get_uint16(term_offset + TYPE_FIELD_OFFSET)


def set_frame_type(buffer: AtomicBuffer, term_offset: int, frame_type: int) -> None:
    buffer.put_int16(term_offset + TYPE_FIELD_OFFSET, frame_type)


def set_frame_term_offset(buffer: AtomicBuffer, term_offset: int) -> None:
    """Write the frame's own offset into its term offset field."""
    buffer.put_int32(term_offset + TERM_OFFSET_FIELD_OFFSET, term_offset)


def set_frame_term_id(buffer: AtomicBuffer, term_offset: int, term_id: int) -> None:
    buffer.put_int32(term_offset + TERM_ID_FIELD_OFFSET, term_id)


def is_padding_frame(buffer: AtomicBuffer, term_offset: int) -> bool:
    return buffer.get_uint16(term_offset + TYPE_FIELD_OFFSET) == HDR_TYPE_PAD
