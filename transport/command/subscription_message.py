"""Subscription message: ADD_SUBSCRIPTION.

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
 16 |                 Registration Correlation ID                   |
    |                                                               |
    +---------------------------------------------------------------+
 24 |                           Stream ID                           |
    +---------------------------------------------------------------+
 28 |                        Channel Length                         |
    +---------------------------------------------------------------+
 32 |                        Channel (ASCII)                       ...
   ...                                                              |
    +---------------------------------------------------------------+

Aeron clients send -1 (``NULL_VALUE``) as the registration correlation id of a new
subscription; the correlation id becomes its registration id.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aeromq.transport.command._codec import (
    check_capacity,
    check_region,
    decode_text,
    encode_text,
    read_block,
    require,
    write_block,
)
from aeromq.transport.command.correlated_message import CLIENT_ID_OFFSET, CORRELATION_ID_OFFSET
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "SUBSCRIPTION_CHANNEL_LENGTH_OFFSET",
    "SUBSCRIPTION_MESSAGE_LENGTH",
    "SUBSCRIPTION_REGISTRATION_CORRELATION_ID_OFFSET",
    "SUBSCRIPTION_STREAM_ID_OFFSET",
    "SubscriptionMessage",
    "decode_subscription_message",
    "encode_subscription_message",
]

SUBSCRIPTION_REGISTRATION_CORRELATION_ID_OFFSET = CORRELATION_ID_OFFSET + 8
SUBSCRIPTION_STREAM_ID_OFFSET = SUBSCRIPTION_REGISTRATION_CORRELATION_ID_OFFSET + 8
SUBSCRIPTION_CHANNEL_LENGTH_OFFSET = SUBSCRIPTION_STREAM_ID_OFFSET + 4
SUBSCRIPTION_MESSAGE_LENGTH = SUBSCRIPTION_CHANNEL_LENGTH_OFFSET + 4
"""Length of the fixed part (``aeron_subscription_command_t``); the channel follows."""

_NAME = "subscription message"
_FIELDS = struct.Struct("<qqqi")


@dataclass(frozen=True, slots=True)
class SubscriptionMessage:
    """A decoded ADD_SUBSCRIPTION (layout above), client to driver."""

    client_id: int
    correlation_id: int
    registration_correlation_id: int
    stream_id: int
    channel: str


def encode_subscription_message(
    buffer: AtomicBuffer,
    offset: int,
    *,
    client_id: int,
    correlation_id: int,
    registration_correlation_id: int,
    stream_id: int,
    channel: str,
) -> int:
    """Write the message at ``offset``; return its length."""
    encoded = encode_text(channel, "channel")
    length = SUBSCRIPTION_MESSAGE_LENGTH + len(encoded)
    check_capacity(buffer, offset, length, _NAME)
    buffer.put_int64(offset + CLIENT_ID_OFFSET, client_id)
    buffer.put_int64(offset + CORRELATION_ID_OFFSET, correlation_id)
    buffer.put_int64(
        offset + SUBSCRIPTION_REGISTRATION_CORRELATION_ID_OFFSET, registration_correlation_id
    )
    buffer.put_int32(offset + SUBSCRIPTION_STREAM_ID_OFFSET, stream_id)
    write_block(buffer, offset + SUBSCRIPTION_CHANNEL_LENGTH_OFFSET, encoded)
    return length


def decode_subscription_message(
    buffer: AtomicBuffer, offset: int, length: int
) -> SubscriptionMessage:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if bad."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "stream_id", SUBSCRIPTION_STREAM_ID_OFFSET, 4, length)
    client_id, correlation_id, registration_correlation_id, stream_id = _FIELDS.unpack_from(
        buffer, offset
    )
    raw, _ = read_block(
        buffer, offset, length, _NAME, "channel", SUBSCRIPTION_CHANNEL_LENGTH_OFFSET
    )
    channel = decode_text(raw, _NAME, "channel", SUBSCRIPTION_CHANNEL_LENGTH_OFFSET)
    return SubscriptionMessage(
        client_id, correlation_id, registration_correlation_id, stream_id, channel
    )
