"""Subscription ready: ON_SUBSCRIPTION_READY, the answer to ADD_SUBSCRIPTION.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                 Channel Status Indicator ID                   |
    +---------------------------------------------------------------+

The channel status indicator is a counter id (-1 for IPC, which has no channel endpoint).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aeromq.transport.command._codec import check_capacity, check_region, require
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "SUBSCRIPTION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET",
    "SUBSCRIPTION_READY_CORRELATION_ID_OFFSET",
    "SUBSCRIPTION_READY_LENGTH",
    "SubscriptionReady",
    "decode_subscription_ready",
    "encode_subscription_ready",
]

SUBSCRIPTION_READY_CORRELATION_ID_OFFSET = 0
SUBSCRIPTION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET = SUBSCRIPTION_READY_CORRELATION_ID_OFFSET + 8
SUBSCRIPTION_READY_LENGTH = SUBSCRIPTION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET + 4

_NAME = "subscription ready"
_FIELDS = struct.Struct("<qi")


@dataclass(frozen=True, slots=True)
class SubscriptionReady:
    """A decoded ON_SUBSCRIPTION_READY (layout above), driver to clients.

    ``channel_status_indicator_id`` is the channel's status counter, -1 for IPC.
    """

    correlation_id: int
    channel_status_indicator_id: int


def encode_subscription_ready(
    buffer: AtomicBuffer, offset: int, *, correlation_id: int, channel_status_indicator_id: int
) -> int:
    """Write the message at ``offset``; return its length."""
    check_capacity(buffer, offset, SUBSCRIPTION_READY_LENGTH, _NAME)
    buffer.put_int64(offset + SUBSCRIPTION_READY_CORRELATION_ID_OFFSET, correlation_id)
    buffer.put_int32(
        offset + SUBSCRIPTION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET, channel_status_indicator_id
    )
    return SUBSCRIPTION_READY_LENGTH


def decode_subscription_ready(buffer: AtomicBuffer, offset: int, length: int) -> SubscriptionReady:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if short."""
    check_region(buffer, offset, length, _NAME)
    require(
        _NAME,
        "channel_status_indicator_id",
        SUBSCRIPTION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET,
        4,
        length,
    )
    return SubscriptionReady(*_FIELDS.unpack_from(buffer, offset))
