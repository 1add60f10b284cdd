"""RTTM frame (40 bytes): a round-trip time measurement between sender and receiver.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |R|                       Frame Length                          |
    +-+-------------+-+-------------+-------------------------------+
  4 |    Version    |R|    Flags    |         Type (=0x06)          |
    +---------------+-+-------------+-------------------------------+
  8 |                          Session ID                           |
    +---------------------------------------------------------------+
 12 |                           Stream ID                           |
    +---------------------------------------------------------------+
 16 |                        Echo Timestamp                         |
    |                                                               |
    +---------------------------------------------------------------+
 24 |                        Reception Delta                        |
    |                                                               |
    +---------------------------------------------------------------+
 32 |                          Receiver ID                          |
    |                                                               |
    +---------------------------------------------------------------+

Flags: R (REPLY, 0x80) marks the answer to a measurement request. The receiver sends a request
with its own timestamp (ns); the sender echoes it with the time it held the request as the
reception delta, so the receiver's RTT is ``now - echo_timestamp - reception_delta``.
"""

from __future__ import annotations

from typing import ClassVar

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol.header_flyweight import (
    FRAME_LENGTH_FIELD_OFFSET,
    HDR_TYPE_RTTM,
    MIN_HEADER_LENGTH,
    FrameStatus,
    HeaderFlyweight,
    check_header,
)

__all__ = [
    "RTTM_ECHO_TIMESTAMP_FIELD_OFFSET",
    "RTTM_HEADER_LENGTH",
    "RTTM_RECEIVER_ID_FIELD_OFFSET",
    "RTTM_RECEPTION_DELTA_FIELD_OFFSET",
    "RTTM_REPLY_FLAG",
    "RTTM_SESSION_ID_FIELD_OFFSET",
    "RTTM_STREAM_ID_FIELD_OFFSET",
    "RttmFlyweight",
    "validate_rttm_frame",
]

RTTM_SESSION_ID_FIELD_OFFSET = MIN_HEADER_LENGTH
RTTM_STREAM_ID_FIELD_OFFSET = RTTM_SESSION_ID_FIELD_OFFSET + 4
RTTM_ECHO_TIMESTAMP_FIELD_OFFSET = RTTM_STREAM_ID_FIELD_OFFSET + 4
RTTM_RECEPTION_DELTA_FIELD_OFFSET = RTTM_ECHO_TIMESTAMP_FIELD_OFFSET + 8
RTTM_RECEIVER_ID_FIELD_OFFSET = RTTM_RECEPTION_DELTA_FIELD_OFFSET + 8
RTTM_HEADER_LENGTH = RTTM_RECEIVER_ID_FIELD_OFFSET + 8

RTTM_REPLY_FLAG = 0x80


def validate_rttm_frame(buffer: AtomicBuffer, offset: int, length: int) -> FrameStatus:
    """Check an RTTM datagram of ``length`` bytes at ``offset``; never raise."""
    status = check_header(buffer, offset, length, RTTM_HEADER_LENGTH, HDR_TYPE_RTTM)
    if status:
        return status
    frame_length = buffer.get_int32(offset + FRAME_LENGTH_FIELD_OFFSET)
    if frame_length < RTTM_HEADER_LENGTH:
        return FrameStatus.BAD_FRAME_LENGTH
    if frame_length > length:
        return FrameStatus.TRUNCATED
    return FrameStatus.VALID


class RttmFlyweight(HeaderFlyweight):
    """An RTTM frame."""

    __slots__ = ()

    HEADER_LENGTH: ClassVar[int] = RTTM_HEADER_LENGTH

    @property
    def session_id(self) -> int:
        """Bytes 8-11: the session of the publication measured."""
        return self.buffer.get_int32(self.offset + RTTM_SESSION_ID_FIELD_OFFSET)

    @session_id.setter
    def session_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + RTTM_SESSION_ID_FIELD_OFFSET, value)

    @property
    def stream_id(self) -> int:
        """Bytes 12-15: the stream of the publication measured."""
        return self.buffer.get_int32(self.offset + RTTM_STREAM_ID_FIELD_OFFSET)

    @stream_id.setter
    def stream_id(self, value: int) -> None:
        self.buffer.put_int32(self.offset + RTTM_STREAM_ID_FIELD_OFFSET, value)

    @property
    def echo_timestamp_ns(self) -> int:
        """Bytes 16-23: the requester's clock when it sent the request, in ns, echoed back."""
        return self.buffer.get_int64(self.offset + RTTM_ECHO_TIMESTAMP_FIELD_OFFSET)

    @echo_timestamp_ns.setter
    def echo_timestamp_ns(self, value: int) -> None:
        self.buffer.put_int64(self.offset + RTTM_ECHO_TIMESTAMP_FIELD_OFFSET, value)

    @property
    def reception_delta_ns(self) -> int:
        """Bytes 24-31: how long the replier held the request, in ns (0 in a request)."""
        return self.buffer.get_int64(self.offset + RTTM_RECEPTION_DELTA_FIELD_OFFSET)

    @reception_delta_ns.setter
    def reception_delta_ns(self, value: int) -> None:
        self.buffer.put_int64(self.offset + RTTM_RECEPTION_DELTA_FIELD_OFFSET, value)

    @property
    def receiver_id(self) -> int:
        """Bytes 32-39 (i64): the random id of the receive channel endpoint measuring."""
        return self.buffer.get_int64(self.offset + RTTM_RECEIVER_ID_FIELD_OFFSET)

    @receiver_id.setter
    def receiver_id(self, value: int) -> None:
        self.buffer.put_int64(self.offset + RTTM_RECEIVER_ID_FIELD_OFFSET, value)

    def is_reply(self) -> bool:
        """Whether the REPLY flag (0x80) is set: an answer, not a request."""
        return bool(self.flags & RTTM_REPLY_FLAG)

    def put_rttm(
        self,
        *,
        session_id: int,
        stream_id: int,
        echo_timestamp_ns: int,
        reception_delta_ns: int,
        receiver_id: int,
        flags: int = 0,
    ) -> int:
        """Write the whole frame; return its length (40)."""
        self.put_header(RTTM_HEADER_LENGTH, flags, HDR_TYPE_RTTM)
        buffer = self.buffer
        offset = self.offset
        buffer.put_int32(offset + RTTM_SESSION_ID_FIELD_OFFSET, session_id)
        buffer.put_int32(offset + RTTM_STREAM_ID_FIELD_OFFSET, stream_id)
        buffer.put_int64(offset + RTTM_ECHO_TIMESTAMP_FIELD_OFFSET, echo_timestamp_ns)
        buffer.put_int64(offset + RTTM_RECEPTION_DELTA_FIELD_OFFSET, reception_delta_ns)
        buffer.put_int64(offset + RTTM_RECEIVER_ID_FIELD_OFFSET, receiver_id)
        return RTTM_HEADER_LENGTH

    def validate(self, length: int) -> FrameStatus:
        """Check the ``length`` bytes at this offset as an RTTM frame; never raise.

        The rules are :func:`validate_rttm_frame`'s.
        """
        return validate_rttm_frame(self.buffer, self.offset, length)
