"""Layout of Agrona's broadcast buffer: one transmitter, any number of receivers that may lag.

A data region whose capacity is a power of two, then a 128-byte trailer of counters. Counters
are byte positions that only grow; ``position & (capacity - 1)`` is the index in the data
region. This is Aeron's to-clients buffer in ``cnc.dat`` (``aeron_broadcast_descriptor.h``,
Agrona's ``BroadcastBufferDescriptor``): the bytes here are the contract.

Trailer, after the data region::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +---------------------------------------------------------------+  0 TAIL_INTENT_COUNTER_OFFSET
    |                 Tail Intent Counter (i64)                     |
    |                                                               |
    +---------------------------------------------------------------+  8 TAIL_COUNTER_OFFSET
    |                     Tail Counter (i64)                        |
    |                                                               |
    +---------------------------------------------------------------+  16 LATEST_COUNTER_OFFSET
    |                    Latest Counter (i64)                       |
    |                                                               |
    +---------------------------------------------------------------+  24
    |                  (reserved, up to 128 bytes)                 ...
    +---------------------------------------------------------------+  128 TRAILER_LENGTH

The transmitter announces the tail it is about to reach in *tail intent* before it overwrites
anything, writes the record, stores the record's start in *latest* and then publishes *tail*.
A receiver whose cursor is a whole capacity behind tail intent has been lapped: the bytes at
its cursor may be overwritten, so it jumps to *latest*.

Record, at an 8-byte aligned index (``RECORD_ALIGNMENT``); ``Length`` counts the header. A
record of type ``PADDING_MSG_TYPE_ID`` fills the end of the buffer when a record does not fit
there; the record then starts at index 0::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +---------------------------------------------------------------+
    |                         Length (i32)                          |
    +---------------------------------------------------------------+
    |                     Message Type Id (i32)                     |
    +---------------------------------------------------------------+
    |                       Encoded Message                        ...
   ...                                                              |
    +---------------------------------------------------------------+
"""

from __future__ import annotations

from aeromq.transport._errors import ConfigurationError

__all__ = [
    "HEADER_LENGTH",
    "LATEST_COUNTER_OFFSET",
    "LENGTH_OFFSET",
    "MIN_CAPACITY",
    "PADDING_MSG_TYPE_ID",
    "RECORD_ALIGNMENT",
    "TAIL_COUNTER_OFFSET",
    "TAIL_INTENT_COUNTER_OFFSET",
    "TRAILER_LENGTH",
    "TYPE_OFFSET",
    "check_capacity",
    "length_offset",
    "max_msg_length",
    "msg_offset",
    "type_offset",
]

TAIL_INTENT_COUNTER_OFFSET = 0
TAIL_COUNTER_OFFSET = TAIL_INTENT_COUNTER_OFFSET + 8
LATEST_COUNTER_OFFSET = TAIL_COUNTER_OFFSET + 8
TRAILER_LENGTH = 2 * 64

LENGTH_OFFSET = 0
TYPE_OFFSET = LENGTH_OFFSET + 4
HEADER_LENGTH = TYPE_OFFSET + 4
RECORD_ALIGNMENT = HEADER_LENGTH
PADDING_MSG_TYPE_ID = -1

MIN_CAPACITY = 2 * HEADER_LENGTH
"""The smallest data region in which the longest message (capacity / 8) still fits."""


def length_offset(record_offset: int) -> int:
    return record_offset + LENGTH_OFFSET


def type_offset(record_offset: int) -> int:
    return record_offset + TYPE_OFFSET


def msg_offset(record_offset: int) -> int:
    return record_offset + HEADER_LENGTH


def max_msg_length(capacity: int) -> int:
    """The longest payload a transmitter accepts: an eighth of the data region."""
    return capacity // 8


def check_capacity(buffer_capacity: int) -> int:
    """The data capacity of a buffer of ``buffer_capacity`` bytes (trailer included).

    Raises :class:`~transport.ConfigurationError` unless it is a power of two of at least
    ``MIN_CAPACITY`` bytes.
    """
    capacity = buffer_capacity - TRAILER_LENGTH
    if capacity < MIN_CAPACITY or capacity & (capacity - 1):
        raise ConfigurationError(
            "broadcast buffer capacity must be a power of two plus the trailer",
            capacity=capacity,
            buffer_capacity=buffer_capacity,
            trailer_length=TRAILER_LENGTH,
            min_capacity=MIN_CAPACITY,
        )
    return capacity
