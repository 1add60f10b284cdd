"""ERR frame (40 bytes + up to 1023 bytes of text): a receiver telling a sender it failed.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |R|                       Frame Length                          |
    +-+-------------+-------+-+-----+-------------------------------+
  4 |    Version    | Flags |G|     |         Type (=0x04)          |
    +---------------+-------+-+-----+-------------------------------+
  8 |                          Session ID                           |
    +---------------------------------------------------------------+
 12 |                           Stream ID                           |
    +---------------------------------------------------------------+
 16 |                          Receiver ID                          |
    |                                                               |
    +---------------------------------------------------------------+
 24 |                           Group Tag                           |
    |                                                               |
    +---------------------------------------------------------------+
 32 |                          Error Code                           |
    +---------------------------------------------------------------+
 36 |                      Error String Length                      |
    +---------------------------------------------------------------+
 40 |                         Error String                         ...
   ...                                                              |
    +---------------------------------------------------------------+

The group tag field is always there; flag G (HAS_GROUP_TAG, 0x08) says whether to believe it.
The error code is a :class:`~transport.command.control_protocol.ErrorCode` (IMAGE_REJECTED
when a receiver refuses an image). Aeron's C driver sends the frame at its full
``40 + 1023`` length whatever the text's length, Java's at ``40 + text``: both validate.
"""

from __future__ import annotations

from typing import ClassVar

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol.header_flyweight import (
    FRAME_LENGTH_FIELD_OFFSET,
    HDR_TYPE_ERR,
    MIN_HEADER_LENGTH,
    FrameStatus,
    HeaderFlyweight,
    check_header,
)

__all__ = [
    "ERR_ERROR_CODE_FIELD_OFFSET",
    "ERR_ERROR_STRING_FIELD_OFFSET",
    "ERR_GROUP_TAG_FIELD_OFFSET",
    "ERR_HAS_GROUP_TAG_FLAG",
    "ERR_HEADER_LENGTH",
    "ERR_RECEIVER_ID_FIELD_OFFSET",
    "ERR_SESSION_ID_FIELD_OFFSET",
    "ERR_STREAM_ID_FIELD_OFFSET",
    "MAX_ERROR_FRAME_LENGTH",
    "MAX_ERROR_MESSAGE_LENGTH",
    "ErrorFlyweight",
    "validate_error_frame",
]

ERR_SESSION_ID_FIELD_OFFSET = MIN_HEADER_LENGTH
ERR_STREAM_ID_FIELD_OFFSET = ERR_SESSION_ID_FIELD_OFFSET + 4
ERR_RECEIVER_ID_FIELD_OFFSET = ERR_STREAM_ID_FIELD_OFFSET + 4
ERR_GROUP_TAG_FIELD_OFFSET = ERR_RECEIVER_ID_FIELD_OFFSET + 8
ERR_ERROR_CODE_FIELD_OFFSET = ERR_GROUP_TAG_FIELD_OFFSET + 8
ERR_ERROR_STRING_FIELD_OFFSET = ERR_ERROR_CODE_FIELD_OFFSET + 4
"""Where the i32 length of the error string is; the text follows it."""
ERR_HEADER_LENGTH = ERR_ERROR_STRING_FIELD_OFFSET + 4

ERR_HAS_GROUP_TAG_FLAG = 0x08

MAX_ERROR_MESSAGE_LENGTH = 1023
MAX_ERROR_FRAME_LENGTH = ERR_HEADER_LENGTH + MAX_ERROR_MESSAGE_LENGTH


def validate_error_frame(buffer: AtomicBuffer, offset: int, length: int) -> FrameStatus:
    """Check an ERR datagram of ``length`` bytes at ``offset``; never raise."""
    status = check_header(buffer, offset, length, ERR_HEADER_LENGTH, HDR_TYPE_ERR)
    if status:
        return status
    frame_length = buffer.get_int32(offset + FRAME_LENGTH_FIELD_OFFSET)
    if frame_length < ERR_HEADER_LENGTH:
        return FrameStatus.BAD_FRAME_LENGTH
    if frame_length > length:
        return FrameStatus.TRUNCATED
    error_length = buffer.get_int32(offset + ERR_ERROR_STRING_FIELD_OFFSET)
    if not 0 <= error_length <= MAX_ERROR_MESSAGE_LENGTH:
        return FrameStatus.BAD_FIELD
    if ERR_HEADER_LENGTH + error_length > frame_length:
        return FrameStatus.BAD_FRAME_LENGTH
    return FrameStatus.VALID


class ErrorFlyweight(HeaderFlyweight):
    """An ERR frame."""

    __slots__ = ()

    HEADER_LENGTH: ClassVar[int] = ERR_HEADER_LENGTH

    @property
    def session_id(self) -> int:
        """Bytes 8-11: the session of the publication the error is about."""
        return self.buffer.get_int32(self.offset + ERR_SESSION_ID_FIELD_OFFSET)

    @session_id.setter
    def session_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + ERR_SESSION_ID_FIELD_OFFSET, value)

    @property
    def stream_id(self) -> int:
        """Bytes 12-15: the stream of the publication the error is about."""
        return self.buffer.get_int32(self.offset + ERR_STREAM_ID_FIELD_OFFSET)

    @stream_id.setter
    def stream_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + ERR_STREAM_ID_FIELD_OFFSET, value)

    @property
    def receiver_id(self) -> int:
        """Bytes 16-23 (i64): the random id of the receive channel endpoint that sent the error."""
        return self.buffer.get_int64(self.offset + ERR_RECEIVER_ID_FIELD_OFFSET)

    @receiver_id.setter
    def receiver_id(self, value: int) -> None:
        self.buffer.put_int64(self.offset + ERR_RECEIVER_ID_FIELD_OFFSET, value)

    @property
    def group_tag(self) -> int | None:
        """The group tag, or None when the HAS_GROUP_TAG flag is clear."""
        if not self.flags & ERR_HAS_GROUP_TAG_FLAG:
            return None
        return self.buffer.get_int64(self.offset + ERR_GROUP_TAG_FIELD_OFFSET)

    @property
    def error_code(self) -> int:
        """Bytes 32-35: an :class:`~transport.command.control_protocol.ErrorCode` value."""
        return self.buffer.get_int32(self.offset + ERR_ERROR_CODE_FIELD_OFFSET)

    @error_code.setter
    def error_code(self, value: int) -> None:
        self.buffer.put_int32(self.offset + ERR_ERROR_CODE_FIELD_OFFSET, value)

    @property
    def error_message(self) -> str:
        """The text (UTF-8, undecodable bytes replaced); validate the frame first."""
        length = self.buffer.get_int32(self.offset + ERR_ERROR_STRING_FIELD_OFFSET)
        raw = self.buffer.get_bytes(self.offset + ERR_HEADER_LENGTH, length)
        return raw.decode("utf-8", errors="replace")

    def put_error(
        self,
        *,
        session_id: int,
        stream_id: int,
        receiver_id: int,
        error_code: int,
        error_message: str,
        group_tag: int | None = None,
        flags: int = 0,
    ) -> int:
        """Write the whole frame; return its length (40 + the text, cut to 1023 bytes)."""
        text = error_message.encode("utf-8", errors="replace")[:MAX_ERROR_MESSAGE_LENGTH]
        frame_length = ERR_HEADER_LENGTH + len(text)
        if group_tag is None:
            flags &= ~ERR_HAS_GROUP_TAG_FLAG
        else:
            flags |= ERR_HAS_GROUP_TAG_FLAG
        self.put_header(frame_length, flags, HDR_TYPE_ERR)
        buffer = self.buffer
        offset = self.offset
        buffer.put_int32(offset + ERR_SESSION_ID_FIELD_OFFSET, session_id)
        buffer.put_int32(offset + ERR_STREAM_ID_FIELD_OFFSET, stream_id)
        buffer.put_int64(offset + ERR_RECEIVER_ID_FIELD_OFFSET, receiver_id)
        buffer.put_int64(offset + ERR_GROUP_TAG_FIELD_OFFSET, 0 if group_tag is None else group_tag)
        buffer.put_int32(offset + ERR_ERROR_CODE_FIELD_OFFSET, error_code)
        buffer.put_int32(offset + ERR_ERROR_STRING_FIELD_OFFSET, len(text))
        if text:
            buffer.put_bytes(offset + ERR_HEADER_LENGTH, text)
        return frame_length

    def validate(self, length: int) -> FrameStatus:
        """Check the ``length`` bytes at this offset as an ERR frame; never raise.

        The rules are :func:`validate_error_frame`'s.
        """
        return validate_error_frame(self.buffer, self.offset, length)
