"""Correlated message: the prefix of every client command; alone, CLIENT_KEEPALIVE and CLIENT_CLOSE.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                           Client ID                           |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+

The client id is the client's own registration id; the correlation id is unique per command
and comes back in the driver's response.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aeromq.transport.command._codec import check_capacity, check_region, require
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "CLIENT_ID_OFFSET",
    "CORRELATED_MESSAGE_LENGTH",
    "CORRELATION_ID_OFFSET",
    "CorrelatedMessage",
    "decode_correlated_message",
    "encode_correlated_message",
]

CLIENT_ID_OFFSET = 0
CORRELATION_ID_OFFSET = CLIENT_ID_OFFSET + 8
CORRELATED_MESSAGE_LENGTH = CORRELATION_ID_OFFSET + 8

_NAME = "correlated message"
_FIELDS = struct.Struct("<qq")


@dataclass(frozen=True, slots=True)
class CorrelatedMessage:
    """A decoded CLIENT_KEEPALIVE or CLIENT_CLOSE (layout above), client to driver.

    Also the 16-byte prefix that every other client command begins with.
    """

    client_id: int
    correlation_id: int


def encode_correlated_message(
    buffer: AtomicBuffer, offset: int, *, client_id: int, correlation_id: int
) -> int:
    """Write the message at ``offset``; return its length."""
    check_capacity(buffer, offset, CORRELATED_MESSAGE_LENGTH, _NAME)
    buffer.put_int64(offset + CLIENT_ID_OFFSET, client_id)
    buffer.put_int64(offset + CORRELATION_ID_OFFSET, correlation_id)
    return CORRELATED_MESSAGE_LENGTH


def decode_correlated_message(buffer: AtomicBuffer, offset: int, length: int) -> CorrelatedMessage:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if short."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "correlation_id", CORRELATION_ID_OFFSET, 8, length)
    client_id, correlation_id = _FIELDS.unpack_from(buffer, offset)
    return CorrelatedMessage(client_id, correlation_id)
