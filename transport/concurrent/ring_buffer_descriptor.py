"""Layout of Agrona's ring buffers (one-to-one and many-to-one): the trailer and the record.

A ring buffer is a data region whose capacity is a power of two, followed by a trailer of
counters. Positions (head, tail) are byte counts that only grow; ``position & (capacity - 1)``
is the index in the data region. This is Aeron's to-driver buffer in ``cnc.dat``
(``aeron_rb.h``, Agrona's ``RingBufferDescriptor``): the bytes here are the contract.

Trailer, after the data region (each counter alone on a 128-byte line, so producers and the
consumer do not share cache lines; the lines are 2 x 64 bytes because of adjacent-line
prefetching)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +---------------------------------------------------------------+
    |                    (reserved, 128 bytes)                     ...
    +---------------------------------------------------------------+  128 TAIL_POSITION_OFFSET
    |                Tail Position (i64, producers)                 |
    |                                                               |
    +---------------------------------------------------------------+
    |                      (rest of the line)                      ...
    +---------------------------------------------------------------+  256 HEAD_CACHE_POSITION_OFFSET
    |          Head Cache Position (i64, producers' copy)           |
    |                                                               |
    +---------------------------------------------------------------+
    |                      (rest of the line)                      ...
    +---------------------------------------------------------------+  384 HEAD_POSITION_OFFSET
    |                 Head Position (i64, consumer)                 |
    |                                                               |
    +---------------------------------------------------------------+
    |                      (rest of the line)                      ...
    +---------------------------------------------------------------+  512 CORRELATION_COUNTER_OFFSET
    |                  Correlation Counter (i64)                    |
    |                                                               |
    +---------------------------------------------------------------+
    |                      (rest of the line)                      ...
    +---------------------------------------------------------------+  640 CONSUMER_HEARTBEAT_OFFSET
    |              Consumer Heartbeat (i64, epoch ms)               |
    |                                                               |
    +---------------------------------------------------------------+
    |                      (rest of the line)                      ...
    +---------------------------------------------------------------+  768 TRAILER_LENGTH

Record, at an 8-byte aligned index of the data region (``ALIGNMENT``); the next record starts
``align(length, ALIGNMENT)`` bytes later. ``Length`` counts the header and is negative while
a producer holds the record (claimed, not yet committed) and 0 where nothing was written. A
record of type ``PADDING_MSG_TYPE_ID`` fills the end of the buffer when a record does not fit
there (and replaces an aborted or unblocked record); readers skip it::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +---------------------------------------------------------------+
    |                 Length (i32, negative: claimed)               |
    +---------------------------------------------------------------+
    |                      Message Type Id (i32)                    |
    +---------------------------------------------------------------+
    |                       Encoded Message                        ...
   ...                                                              |
    +---------------------------------------------------------------+

Read as one little-endian i64 (:func:`make_header`), the header is
``msg_type_id << 32 | (length & 0xFFFFFFFF)``: one 8-byte store publishes both fields at once.
"""

from __future__ import annotations

from aeromq.transport._errors import ConfigurationError, InvalidMessageTypeError

__all__ = [
    "ALIGNMENT",
    "CACHE_LINE_LENGTH",
    "CONSUMER_HEARTBEAT_OFFSET",
    "CORRELATION_COUNTER_OFFSET",
    "HEADER_LENGTH",
    "HEAD_CACHE_POSITION_OFFSET",
    "HEAD_POSITION_OFFSET",
    "LENGTH_OFFSET",
    "MAX_MSG_TYPE_ID",
    "PADDING_MSG_TYPE_ID",
    "TAIL_POSITION_OFFSET",
    "TRAILER_LENGTH",
    "TYPE_OFFSET",
    "align",
    "check_capacity",
    "check_type_id",
    "encoded_msg_offset",
    "length_offset",
    "make_header",
    "max_msg_length",
    "type_offset",
]

CACHE_LINE_LENGTH = 64
_LINE = 2 * CACHE_LINE_LENGTH

TAIL_POSITION_OFFSET = _LINE
HEAD_CACHE_POSITION_OFFSET = TAIL_POSITION_OFFSET + _LINE
HEAD_POSITION_OFFSET = HEAD_CACHE_POSITION_OFFSET + _LINE
CORRELATION_COUNTER_OFFSET = HEAD_POSITION_OFFSET + _LINE
CONSUMER_HEARTBEAT_OFFSET = CORRELATION_COUNTER_OFFSET + _LINE
TRAILER_LENGTH = CONSUMER_HEARTBEAT_OFFSET + _LINE

LENGTH_OFFSET = 0
TYPE_OFFSET = LENGTH_OFFSET + 4
HEADER_LENGTH = TYPE_OFFSET + 4
ALIGNMENT = HEADER_LENGTH
PADDING_MSG_TYPE_ID = -1
MAX_MSG_TYPE_ID = 0x7FFFFFFF

_LOW_32 = 0xFFFFFFFF


def align(value: int, alignment: int) -> int:
    """``value`` rounded up to a multiple of ``alignment`` (a power of two)."""
    return (value + alignment - 1) & -alignment


def length_offset(record_offset: int) -> int:
    return record_offset + LENGTH_OFFSET


def type_offset(record_offset: int) -> int:
    return record_offset + TYPE_OFFSET


def encoded_msg_offset(record_offset: int) -> int:
    return record_offset + HEADER_LENGTH


def make_header(length: int, msg_type_id: int) -> int:
    """The record header as the signed i64 an 8-byte little-endian load of it returns."""
    return (msg_type_id << 32) | (length & _LOW_32)


def check_type_id(msg_type_id: int) -> None:
    """Message type ids are positive i32s: ids below 1 are reserved (padding is -1)."""
    if not 0 < msg_type_id <= MAX_MSG_TYPE_ID:
        raise InvalidMessageTypeError(
            "message type id must be a positive i32", msg_type_id=msg_type_id
        )


def check_capacity(buffer_capacity: int, min_capacity: int = HEADER_LENGTH) -> int:
    """The data capacity of a buffer of ``buffer_capacity`` bytes (trailer included).

    Raises :class:`~transport.ConfigurationError` unless the data capacity is a power of two
    of at least ``min_capacity`` bytes.
    """
    capacity = buffer_capacity - TRAILER_LENGTH
    if capacity < min_capacity or capacity & (capacity - 1):
        raise ConfigurationError(
            "ring buffer capacity must be a power of two plus the trailer",
            capacity=capacity,
            buffer_capacity=buffer_capacity,
            trailer_length=TRAILER_LENGTH,
            min_capacity=min_capacity,
        )
    return capacity


def max_msg_length(capacity: int, min_capacity: int) -> int:
    """Longest payload: capacity / 8, at least one header's worth, 0 on a minimum-size buffer."""
    if capacity == min_capacity:
        return 0
    return max(HEADER_LENGTH, capacity >> 3)
