"""Publication message: ADD_PUBLICATION and ADD_EXCLUSIVE_PUBLICATION.

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
 16 |                           Stream ID                           |
    +---------------------------------------------------------------+
 20 |                        Channel Length                         |
    +---------------------------------------------------------------+
 24 |                        Channel (ASCII)                       ...
   ...                                                              |
    +---------------------------------------------------------------+

The correlation id becomes the publication's registration id.
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
    "PUBLICATION_CHANNEL_LENGTH_OFFSET",
    "PUBLICATION_MESSAGE_LENGTH",
    "PUBLICATION_STREAM_ID_OFFSET",
    "PublicationMessage",
    "decode_publication_message",
    "encode_publication_message",
]

PUBLICATION_STREAM_ID_OFFSET = CORRELATION_ID_OFFSET + 8
PUBLICATION_CHANNEL_LENGTH_OFFSET = PUBLICATION_STREAM_ID_OFFSET + 4
PUBLICATION_MESSAGE_LENGTH = PUBLICATION_CHANNEL_LENGTH_OFFSET + 4
"""Length of the fixed part (the C struct ``aeron_publication_command_t``); the channel follows."""

_NAME = "publication message"
_FIELDS = struct.Struct("<qqi")


@dataclass(frozen=True, slots=True)
class PublicationMessage:
    """A decoded ADD_PUBLICATION or ADD_EXCLUSIVE_PUBLICATION (layout above), client to driver."""

    client_id: int
    correlation_id: int
    stream_id: int
    channel: str


def encode_publication_message(
    buffer: AtomicBuffer,
    offset: int,
    *,
    client_id: int,
    correlation_id: int,
    stream_id: int,
    channel: str,
) -> int:
    """Write the message at ``offset``; return its length."""
    encoded = encode_text(channel, "channel")
    length = PUBLICATION_MESSAGE_LENGTH + len(encoded)
    check_capacity(buffer, offset, length, _NAME)
    buffer.put_int64(offset + CLIENT_ID_OFFSET, client_id)
    buffer.put_int64(offset + CORRELATION_ID_OFFSET, correlation_id)
    buffer.put_int32(offset + PUBLICATION_STREAM_ID_OFFSET, stream_id)
    write_block(buffer, offset + PUBLICATION_CHANNEL_LENGTH_OFFSET, encoded)
    return length


def decode_publication_message(
    buffer: AtomicBuffer, offset: int, length: int
) -> PublicationMessage:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if bad."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "stream_id", PUBLICATION_STREAM_ID_OFFSET, 4, length)
    client_id, correlation_id, stream_id = _FIELDS.unpack_from(buffer, offset)
    raw, _ = read_block(buffer, offset, length, _NAME, "channel", PUBLICATION_CHANNEL_LENGTH_OFFSET)
    channel = decode_text(raw, _NAME, "channel", PUBLICATION_CHANNEL_LENGTH_OFFSET)
    return PublicationMessage(client_id, correlation_id, stream_id, channel)
