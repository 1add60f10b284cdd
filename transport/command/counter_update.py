"""Counter update: ON_COUNTER_READY and ON_UNAVAILABLE_COUNTER.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                          Counter ID                           |
    +---------------------------------------------------------------+

ON_COUNTER_READY carries the ADD_COUNTER's correlation id (the counter's registration id);
ON_UNAVAILABLE_COUNTER carries the registration id of a counter that went away.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aeromq.transport.command._codec import check_capacity, check_region, require
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "COUNTER_UPDATE_CORRELATION_ID_OFFSET",
    "COUNTER_UPDATE_COUNTER_ID_OFFSET",
    "COUNTER_UPDATE_LENGTH",
    "CounterUpdate",
    "decode_counter_update",
    "encode_counter_update",
]

COUNTER_UPDATE_CORRELATION_ID_OFFSET = 0
COUNTER_UPDATE_COUNTER_ID_OFFSET = COUNTER_UPDATE_CORRELATION_ID_OFFSET + 8
COUNTER_UPDATE_LENGTH = COUNTER_UPDATE_COUNTER_ID_OFFSET + 4

_NAME = "counter update"
_FIELDS = struct.Struct("<qi")


@dataclass(frozen=True, slots=True)
class CounterUpdate:
    """A decoded ON_COUNTER_READY or ON_UNAVAILABLE_COUNTER (layout above), driver to clients.

    ``correlation_id`` is the counter's registration id; ``counter_id`` indexes cnc.dat's
    counters.
    """

    correlation_id: int
    counter_id: int


def encode_counter_update(
    buffer: AtomicBuffer, offset: int, *, correlation_id: int, counter_id: int
) -> int:
    """Write the message at ``offset``; return its length."""
    check_capacity(buffer, offset, COUNTER_UPDATE_LENGTH, _NAME)
    buffer.put_int64(offset + COUNTER_UPDATE_CORRELATION_ID_OFFSET, correlation_id)
    buffer.put_int32(offset + COUNTER_UPDATE_COUNTER_ID_OFFSET, counter_id)
    return COUNTER_UPDATE_LENGTH


def decode_counter_update(buffer: AtomicBuffer, offset: int, length: int) -> CounterUpdate:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if short."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "counter_id", COUNTER_UPDATE_COUNTER_ID_OFFSET, 4, length)
    return CounterUpdate(*_FIELDS.unpack_from(buffer, offset))
