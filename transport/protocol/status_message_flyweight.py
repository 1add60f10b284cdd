"""STATUS MESSAGE frame (36 bytes, 44 with a group tag): a receiver's position and window.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |R|                       Frame Length                          |
    +-+-------------+-+-+-+-+-+-+-+-+-------------------------------+
  4 |    Version    |S|E|  Flags    |         Type (=0x03)          |
    +---------------+-+-+-----------+-------------------------------+
  8 |                          Session ID                           |
    +---------------------------------------------------------------+
 12 |                           Stream ID                           |
    +---------------------------------------------------------------+
 16 |                      Consumption Term ID                      |
    +---------------------------------------------------------------+
 20 |R|                  Consumption Term Offset                    |
    +-+-------------------------------------------------------------+
 24 |                        Receiver Window                        |
    +---------------------------------------------------------------+
 28 |                          Receiver ID                          |
    |                                                               |
    +---------------------------------------------------------------+
 36 |                    Group Tag (optional)                       |
    |                                                               |
    +---------------------------------------------------------------+

Flags: S (SEND_SETUP, 0x80) asks the sender for a SETUP, E (EOS, 0x40) says the receiver saw
the end of the stream. The group tag is present when the frame length is 44.
"""

from __future__ import annotations

from typing import ClassVar

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol.header_flyweight import (
    FRAME_LENGTH_FIELD_OFFSET,
    HDR_TYPE_SM,
    MIN_HEADER_LENGTH,
    FrameStatus,
    HeaderFlyweight,
    check_header,
)

__all__ = [
    "SM_CONSUMPTION_TERM_ID_FIELD_OFFSET",
    "SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET",
    "SM_EOS_FLAG",
    "SM_GROUP_TAG_FIELD_OFFSET",
    "SM_HEADER_LENGTH",
    "SM_HEADER_LENGTH_WITH_GROUP_TAG",
    "SM_RECEIVER_ID_FIELD_OFFSET",
    "SM_RECEIVER_WINDOW_FIELD_OFFSET",
    "SM_SEND_SETUP_FLAG",
    "SM_SESSION_ID_FIELD_OFFSET",
    "SM_STREAM_ID_FIELD_OFFSET",
    "StatusMessageFlyweight",
    "validate_status_message_frame",
]

SM_SESSION_ID_FIELD_OFFSET = MIN_HEADER_LENGTH
SM_STREAM_ID_FIELD_OFFSET = SM_SESSION_ID_FIELD_OFFSET + 4
SM_CONSUMPTION_TERM_ID_FIELD_OFFSET = SM_STREAM_ID_FIELD_OFFSET + 4
SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET = SM_CONSUMPTION_TERM_ID_FIELD_OFFSET + 4
SM_RECEIVER_WINDOW_FIELD_OFFSET = SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET + 4
SM_RECEIVER_ID_FIELD_OFFSET = SM_RECEIVER_WINDOW_FIELD_OFFSET + 4
SM_HEADER_LENGTH = SM_RECEIVER_ID_FIELD_OFFSET + 8
SM_GROUP_TAG_FIELD_OFFSET = SM_HEADER_LENGTH
SM_HEADER_LENGTH_WITH_GROUP_TAG = SM_GROUP_TAG_FIELD_OFFSET + 8

SM_SEND_SETUP_FLAG = 0x80
SM_EOS_FLAG = 0x40


def validate_status_message_frame(buffer: AtomicBuffer, offset: int, length: int) -> FrameStatus:
    """Check a STATUS MESSAGE datagram of ``length`` bytes at ``offset``; never raise."""
    status = check_header(buffer, offset, length, SM_HEADER_LENGTH, HDR_TYPE_SM)
    if status:
        return status
    frame_length = buffer.get_int32(offset + FRAME_LENGTH_FIELD_OFFSET)
    if frame_length < SM_HEADER_LENGTH or (
        SM_HEADER_LENGTH < frame_length < SM_HEADER_LENGTH_WITH_GROUP_TAG
    ):
        return FrameStatus.BAD_FRAME_LENGTH
    if frame_length > length:
        return FrameStatus.TRUNCATED
    if (
        buffer.get_int32(offset + SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET) < 0
        or buffer.get_int32(offset + SM_RECEIVER_WINDOW_FIELD_OFFSET) < 0
    ):
        return FrameStatus.BAD_FIELD
    return FrameStatus.VALID


class StatusMessageFlyweight(HeaderFlyweight):
    """A STATUS MESSAGE frame."""

    __slots__ = ()

    HEADER_LENGTH: ClassVar[int] = SM_HEADER_LENGTH

    @property
    def session_id(self) -> int:
        """Bytes 8-11: the session of the publication the receiver reports on."""
        return self.buffer.get_int32(self.offset + SM_SESSION_ID_FIELD_OFFSET)

    @session_id.setter
    def session_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SM_SESSION_ID_FIELD_OFFSET, value)

    @property
    def stream_id(self) -> int:
        """Bytes 12-15: the stream of the publication the receiver reports on."""
        return self.buffer.get_int32(self.offset + SM_STREAM_ID_FIELD_OFFSET)

    @stream_id.setter
    def stream_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SM_STREAM_ID_FIELD_OFFSET, value)

    @property
    def consumption_term_id(self) -> int:
        """Bytes 16-19: the term of the receiver's consumption position."""
        return self.buffer.get_int32(self.offset + SM_CONSUMPTION_TERM_ID_FIELD_OFFSET)

    @consumption_term_id.setter
    def consumption_term_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SM_CONSUMPTION_TERM_ID_FIELD_OFFSET, value)

    @property
    def consumption_term_offset(self) -> int:
        """Bytes 20-23: the receiver's consumption offset in that term, in bytes."""
        return self.buffer.get_int32(self.offset + SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET)

    @consumption_term_offset.setter
    def consumption_term_offset(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET, value)

    @property
    def receiver_window(self) -> int:
        """Bytes 24-27: how many bytes past its consumption position the receiver can take."""
        return self.buffer.get_int32(self.offset + SM_RECEIVER_WINDOW_FIELD_OFFSET)

    @receiver_window.setter
    def receiver_window(self, value: int) -> None:
        self.buffer.put_int32(self.offset + SM_RECEIVER_WINDOW_FIELD_OFFSET, value)

    @property
    def receiver_id(self) -> int:
        """Bytes 28-35 (i64): the random id of the receive channel endpoint reporting."""
        return self.buffer.get_int64(self.offset + SM_RECEIVER_ID_FIELD_OFFSET)

    @receiver_id.setter
    def receiver_id(self, value: int) -> None:
        self.buffer.put_int64(self.offset + SM_RECEIVER_ID_FIELD_OFFSET, value)

    @property
    def group_tag(self) -> int | None:
        """The group tag, or None when the frame is the 36-byte form without one."""
        if self.frame_length < SM_HEADER_LENGTH_WITH_GROUP_TAG:
            return None
        return self.buffer.get_int64(self.offset + SM_GROUP_TAG_FIELD_OFFSET)

    def put_status_message(
        self,
        *,
        session_id: int,
        stream_id: int,
        consumption_term_id: int,
        consumption_term_offset: int,
        receiver_window: int,
        receiver_id: int,
        group_tag: int | None = None,
        flags: int = 0,
    ) -> int:
        """Write the whole frame (with the group tag when given); return its length."""
        frame_length = SM_HEADER_LENGTH if group_tag is None else SM_HEADER_LENGTH_WITH_GROUP_TAG
        self.put_header(frame_length, flags, HDR_TYPE_SM)
        buffer = self.buffer
        offset = self.offset
        buffer.put_int32(offset + SM_SESSION_ID_FIELD_OFFSET, session_id)
        buffer.put_int32(offset + SM_STREAM_ID_FIELD_OFFSET, stream_id)
        buffer.put_int32(offset + SM_CONSUMPTION_TERM_ID_FIELD_OFFSET, consumption_term_id)
        buffer.put_int32(offset + SM_CONSUMPTION_TERM_OFFSET_FIELD_OFFSET, consumption_term_offset)
        buffer.put_int32(offset + SM_RECEIVER_WINDOW_FIELD_OFFSET, receiver_window)
        buffer.put_int64(offset + SM_RECEIVER_ID_FIELD_OFFSET, receiver_id)
        if group_tag is not None:
            buffer.put_int64(offset + SM_GROUP_TAG_FIELD_OFFSET, group_tag)
        return frame_length

    def validate(self, length: int) -> FrameStatus:
        """Check the ``length`` bytes at this offset as a STATUS MESSAGE frame; never raise.

        The rules are :func:`validate_status_message_frame`'s.
        """
        return validate_status_message_frame(self.buffer, self.offset, length)
