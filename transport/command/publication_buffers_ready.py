"""Publication buffers ready: ON_PUBLICATION_READY and ON_EXCLUSIVE_PUBLICATION_READY.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                        Registration ID                        |
    |                                                               |
    +---------------------------------------------------------------+
 16 |                          Session ID                           |
    +---------------------------------------------------------------+
 20 |                           Stream ID                           |
    +---------------------------------------------------------------+
 24 |                  Position Limit Counter ID                    |
    +---------------------------------------------------------------+
 28 |                 Channel Status Indicator ID                   |
    +---------------------------------------------------------------+
 32 |                        Log File Length                        |
    +---------------------------------------------------------------+
 36 |                     Log File Name (ASCII)                    ...
   ...                                                              |
    +---------------------------------------------------------------+

The registration id is the original ADD_PUBLICATION's correlation id: concurrent publications
on the same channel and stream share one, the correlation id is the asking command's.
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
    "PUBLICATION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET",
    "PUBLICATION_READY_CORRELATION_ID_OFFSET",
    "PUBLICATION_READY_LENGTH",
    "PUBLICATION_READY_LOG_FILE_LENGTH_OFFSET",
    "PUBLICATION_READY_POSITION_LIMIT_COUNTER_ID_OFFSET",
    "PUBLICATION_READY_REGISTRATION_ID_OFFSET",
    "PUBLICATION_READY_SESSION_ID_OFFSET",
    "PUBLICATION_READY_STREAM_ID_OFFSET",
    "PublicationBuffersReady",
    "decode_publication_buffers_ready",
    "encode_publication_buffers_ready",
]

PUBLICATION_READY_CORRELATION_ID_OFFSET = 0
PUBLICATION_READY_REGISTRATION_ID_OFFSET = PUBLICATION_READY_CORRELATION_ID_OFFSET + 8
PUBLICATION_READY_SESSION_ID_OFFSET = PUBLICATION_READY_REGISTRATION_ID_OFFSET + 8
PUBLICATION_READY_STREAM_ID_OFFSET = PUBLICATION_READY_SESSION_ID_OFFSET + 4
PUBLICATION_READY_POSITION_LIMIT_COUNTER_ID_OFFSET = PUBLICATION_READY_STREAM_ID_OFFSET + 4
PUBLICATION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET = (
    PUBLICATION_READY_POSITION_LIMIT_COUNTER_ID_OFFSET + 4
)
PUBLICATION_READY_LOG_FILE_LENGTH_OFFSET = PUBLICATION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET + 4
PUBLICATION_READY_LENGTH = PUBLICATION_READY_LOG_FILE_LENGTH_OFFSET + 4
"""Length of the fixed part (``aeron_publication_buffers_ready_t``); the file name follows."""

_NAME = "publication buffers ready"
_FIELDS = struct.Struct("<qqiiii")


@dataclass(frozen=True, slots=True)
class PublicationBuffersReady:
    """A decoded ON_PUBLICATION_READY or ON_EXCLUSIVE_PUBLICATION_READY (layout above).

    Driver to clients: the publication writes into ``log_file_name`` up to the limit in counter
    ``position_limit_counter_id``.
    """

    correlation_id: int
    registration_id: int
    session_id: int
    stream_id: int
    position_limit_counter_id: int
    channel_status_indicator_id: int
    log_file_name: str


def encode_publication_buffers_ready(
    buffer: AtomicBuffer,
    offset: int,
    *,
    correlation_id: int,
    registration_id: int,
    session_id: int,
    stream_id: int,
    position_limit_counter_id: int,
    channel_status_indicator_id: int,
    log_file_name: str,
) -> int:
    """Write the message at ``offset``; return its length."""
    encoded = encode_text(log_file_name, "log_file_name")
    length = PUBLICATION_READY_LENGTH + len(encoded)
    check_capacity(buffer, offset, length, _NAME)
    buffer.put_int64(offset + PUBLICATION_READY_CORRELATION_ID_OFFSET, correlation_id)
    buffer.put_int64(offset + PUBLICATION_READY_REGISTRATION_ID_OFFSET, registration_id)
    buffer.put_int32(offset + PUBLICATION_READY_SESSION_ID_OFFSET, session_id)
    buffer.put_int32(offset + PUBLICATION_READY_STREAM_ID_OFFSET, stream_id)
    buffer.put_int32(
        offset + PUBLICATION_READY_POSITION_LIMIT_COUNTER_ID_OFFSET, position_limit_counter_id
    )
    buffer.put_int32(
        offset + PUBLICATION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET, channel_status_indicator_id
    )
    write_block(buffer, offset + PUBLICATION_READY_LOG_FILE_LENGTH_OFFSET, encoded)
    return length


def decode_publication_buffers_ready(
    buffer: AtomicBuffer, offset: int, length: int
) -> PublicationBuffersReady:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if bad."""
    check_region(buffer, offset, length, _NAME)
    require(
        _NAME,
        "channel_status_indicator_id",
        PUBLICATION_READY_CHANNEL_STATUS_INDICATOR_ID_OFFSET,
        4,
        length,
    )
    (
        correlation_id,
        registration_id,
        session_id,
        stream_id,
        position_limit_counter_id,
        channel_status_indicator_id,
    ) = _FIELDS.unpack_from(buffer, offset)
    raw, _ = read_block(
        buffer, offset, length, _NAME, "log_file_name", PUBLICATION_READY_LOG_FILE_LENGTH_OFFSET
    )
    name = decode_text(raw, _NAME, "log_file_name", PUBLICATION_READY_LOG_FILE_LENGTH_OFFSET)
    return PublicationBuffersReady(
        correlation_id,
        registration_id,
        session_id,
        stream_id,
        position_limit_counter_id,
        channel_status_indicator_id,
        name,
    )
