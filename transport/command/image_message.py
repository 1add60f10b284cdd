"""Image message: ON_UNAVAILABLE_IMAGE, an image that went away from a subscription.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                Subscription Registration ID                   |
    |                                                               |
    +---------------------------------------------------------------+
 16 |                           Stream ID                           |
    +---------------------------------------------------------------+
 20 |                        Channel Length                         |
    +---------------------------------------------------------------+
 24 |                        Channel (ASCII)                       ...
   ...                                                              |
    +---------------------------------------------------------------+

The correlation id is the image's, as sent in its ON_AVAILABLE_IMAGE.
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
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "IMAGE_MESSAGE_CHANNEL_LENGTH_OFFSET",
    "IMAGE_MESSAGE_CORRELATION_ID_OFFSET",
    "IMAGE_MESSAGE_LENGTH",
    "IMAGE_MESSAGE_STREAM_ID_OFFSET",
    "IMAGE_MESSAGE_SUBSCRIPTION_REGISTRATION_ID_OFFSET",
    "ImageMessage",
    "decode_image_message",
    "encode_image_message",
]

IMAGE_MESSAGE_CORRELATION_ID_OFFSET = 0
IMAGE_MESSAGE_SUBSCRIPTION_REGISTRATION_ID_OFFSET = IMAGE_MESSAGE_CORRELATION_ID_OFFSET + 8
IMAGE_MESSAGE_STREAM_ID_OFFSET = IMAGE_MESSAGE_SUBSCRIPTION_REGISTRATION_ID_OFFSET + 8
IMAGE_MESSAGE_CHANNEL_LENGTH_OFFSET = IMAGE_MESSAGE_STREAM_ID_OFFSET + 4
IMAGE_MESSAGE_LENGTH = IMAGE_MESSAGE_CHANNEL_LENGTH_OFFSET + 4
"""Length of the fixed part (``aeron_image_message_t``); the channel follows."""

_NAME = "image message"
_FIELDS = struct.Struct("<qqi")


@dataclass(frozen=True, slots=True)
class ImageMessage:
    """A decoded ON_UNAVAILABLE_IMAGE (layout above), driver to clients.

    The image ``correlation_id`` left the subscription ``subscription_registration_id``.
    """

    correlation_id: int
    subscription_registration_id: int
    stream_id: int
    channel: str


def encode_image_message(
    buffer: AtomicBuffer,
    offset: int,
    *,
    correlation_id: int,
    subscription_registration_id: int,
    stream_id: int,
    channel: str,
) -> int:
    """Write the message at ``offset``; return its length."""
    encoded = encode_text(channel, "channel")
    length = IMAGE_MESSAGE_LENGTH + len(encoded)
    check_capacity(buffer, offset, length, _NAME)
    buffer.put_int64(offset + IMAGE_MESSAGE_CORRELATION_ID_OFFSET, correlation_id)
    buffer.put_int64(
        offset + IMAGE_MESSAGE_SUBSCRIPTION_REGISTRATION_ID_OFFSET, subscription_registration_id
    )
    buffer.put_int32(offset + IMAGE_MESSAGE_STREAM_ID_OFFSET, stream_id)
    write_block(buffer, offset + IMAGE_MESSAGE_CHANNEL_LENGTH_OFFSET, encoded)
    return length


def decode_image_message(buffer: AtomicBuffer, offset: int, length: int) -> ImageMessage:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if bad."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "stream_id", IMAGE_MESSAGE_STREAM_ID_OFFSET, 4, length)
    correlation_id, subscription_registration_id, stream_id = _FIELDS.unpack_from(buffer, offset)
    raw, _ = read_block(
        buffer, offset, length, _NAME, "channel", IMAGE_MESSAGE_CHANNEL_LENGTH_OFFSET
    )
    channel = decode_text(raw, _NAME, "channel", IMAGE_MESSAGE_CHANNEL_LENGTH_OFFSET)
    return ImageMessage(correlation_id, subscription_registration_id, stream_id, channel)
