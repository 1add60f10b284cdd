"""Image buffers ready: ON_AVAILABLE_IMAGE, a new image (a publication's stream) for a subscription.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                          Session ID                           |
    +---------------------------------------------------------------+
 12 |                           Stream ID                           |
    +---------------------------------------------------------------+
 16 |                 Subscriber Registration ID                    |
    |                                                               |
    +---------------------------------------------------------------+
 24 |                    Subscriber Position ID                     |
    +---------------------------------------------------------------+
 28 |                        Log File Length                        |
    +---------------------------------------------------------------+
 32 |               Log File Name (ASCII, padded to 4)             ...
   ...                                                              |
    +---------------------------------------------------------------+
    |                    Source Identity Length                     |
    +---------------------------------------------------------------+
    |                   Source Identity (ASCII)                    ...
   ...                                                              |
    +---------------------------------------------------------------+

The log file name is padded with zeros to a multiple of 4 bytes so that the source identity
length stays aligned: it is at ``32 + align(log_file_length, 4)``. The correlation id is the
image's own (its publication's registration id for IPC); the subscriber registration id is the
subscription's. The source identity is the sender's ``address:port`` for UDP, ``aeron:ipc``
for IPC.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aeromq.transport.command._codec import (
    LENGTH_PREFIX,
    align4,
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
    "IMAGE_READY_CORRELATION_ID_OFFSET",
    "IMAGE_READY_LENGTH",
    "IMAGE_READY_LOG_FILE_LENGTH_OFFSET",
    "IMAGE_READY_SESSION_ID_OFFSET",
    "IMAGE_READY_STREAM_ID_OFFSET",
    "IMAGE_READY_SUBSCRIBER_POSITION_ID_OFFSET",
    "IMAGE_READY_SUBSCRIBER_REGISTRATION_ID_OFFSET",
    "ImageBuffersReady",
    "decode_image_buffers_ready",
    "encode_image_buffers_ready",
    "image_ready_source_identity_length_offset",
]

IMAGE_READY_CORRELATION_ID_OFFSET = 0
IMAGE_READY_SESSION_ID_OFFSET = IMAGE_READY_CORRELATION_ID_OFFSET + 8
IMAGE_READY_STREAM_ID_OFFSET = IMAGE_READY_SESSION_ID_OFFSET + 4
IMAGE_READY_SUBSCRIBER_REGISTRATION_ID_OFFSET = IMAGE_READY_STREAM_ID_OFFSET + 4
IMAGE_READY_SUBSCRIBER_POSITION_ID_OFFSET = IMAGE_READY_SUBSCRIBER_REGISTRATION_ID_OFFSET + 8
IMAGE_READY_LENGTH = IMAGE_READY_SUBSCRIBER_POSITION_ID_OFFSET + 4
"""Length of the fixed part (``aeron_image_buffers_ready_t``); the two strings follow."""
IMAGE_READY_LOG_FILE_LENGTH_OFFSET = IMAGE_READY_LENGTH

_NAME = "image buffers ready"
_FIELDS = struct.Struct("<qiiqi")


def image_ready_source_identity_length_offset(log_file_length: int) -> int:
    """Offset of the source identity length after a log file name of ``log_file_length`` bytes."""
    return IMAGE_READY_LOG_FILE_LENGTH_OFFSET + LENGTH_PREFIX + align4(log_file_length)


@dataclass(frozen=True, slots=True)
class ImageBuffersReady:
    """A decoded ON_AVAILABLE_IMAGE (layout above), driver to clients.

    The subscription ``subscriber_registration_id`` maps ``log_file_name`` to read the image and
    reads its position from counter ``subscriber_position_id``.
    """

    correlation_id: int
    session_id: int
    stream_id: int
    subscriber_registration_id: int
    subscriber_position_id: int
    log_file_name: str
    source_identity: str


def encode_image_buffers_ready(
    buffer: AtomicBuffer,
    offset: int,
    *,
    correlation_id: int,
    session_id: int,
    stream_id: int,
    subscriber_registration_id: int,
    subscriber_position_id: int,
    log_file_name: str,
    source_identity: str,
) -> int:
    """Write the message at ``offset``; return its length."""
    name = encode_text(log_file_name, "log_file_name")
    identity = encode_text(source_identity, "source_identity")
    identity_offset = image_ready_source_identity_length_offset(len(name))
    length = identity_offset + LENGTH_PREFIX + len(identity)
    check_capacity(buffer, offset, length, _NAME)
    buffer.put_int64(offset + IMAGE_READY_CORRELATION_ID_OFFSET, correlation_id)
    buffer.put_int32(offset + IMAGE_READY_SESSION_ID_OFFSET, session_id)
    buffer.put_int32(offset + IMAGE_READY_STREAM_ID_OFFSET, stream_id)
    buffer.put_int64(
        offset + IMAGE_READY_SUBSCRIBER_REGISTRATION_ID_OFFSET, subscriber_registration_id
    )
    buffer.put_int32(offset + IMAGE_READY_SUBSCRIBER_POSITION_ID_OFFSET, subscriber_position_id)
    name_end = IMAGE_READY_LOG_FILE_LENGTH_OFFSET + write_block(
        buffer, offset + IMAGE_READY_LOG_FILE_LENGTH_OFFSET, name
    )
    if name_end < identity_offset:
        buffer.set_memory(offset + name_end, identity_offset - name_end, 0)
    write_block(buffer, offset + identity_offset, identity)
    return length


def decode_image_buffers_ready(buffer: AtomicBuffer, offset: int, length: int) -> ImageBuffersReady:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if bad."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "subscriber_position_id", IMAGE_READY_SUBSCRIBER_POSITION_ID_OFFSET, 4, length)
    (
        correlation_id,
        session_id,
        stream_id,
        subscriber_registration_id,
        subscriber_position_id,
    ) = _FIELDS.unpack_from(buffer, offset)
    raw_name, _ = read_block(
        buffer, offset, length, _NAME, "log_file_name", IMAGE_READY_LOG_FILE_LENGTH_OFFSET
    )
    name = decode_text(raw_name, _NAME, "log_file_name", IMAGE_READY_LOG_FILE_LENGTH_OFFSET)
    identity_offset = image_ready_source_identity_length_offset(len(raw_name))
    raw_identity, _ = read_block(buffer, offset, length, _NAME, "source_identity", identity_offset)
    identity = decode_text(raw_identity, _NAME, "source_identity", identity_offset)
    return ImageBuffersReady(
        correlation_id,
        session_id,
        stream_id,
        subscriber_registration_id,
        subscriber_position_id,
        name,
        identity,
    )
