"""``validate_frame``: one check for any datagram, dispatching on the frame type.

The receiver and sender agents call it on every datagram before they look at it; anything
but ``FrameStatus.VALID`` is counted as an invalid packet and dropped. It never raises.

Types with a layout here (DATA/PAD, SETUP, SM, NAK, RTTM, ERR) get their full check. RES and
RSP_SETUP, which this transport does not use, get a length check only (an 8-byte resolution
entry header; session, stream and response session ids); EXT passes on its common header.
Any other type is ``UNKNOWN_TYPE``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol.data_header_flyweight import validate_data_frames
from aeromq.transport.protocol.error_flyweight import validate_error_frame
from aeromq.transport.protocol.header_flyweight import (
    CURRENT_VERSION,
    HDR_TYPE_DATA,
    HDR_TYPE_ERR,
    HDR_TYPE_EXT,
    HDR_TYPE_NAK,
    HDR_TYPE_PAD,
    HDR_TYPE_RES,
    HDR_TYPE_RSP_SETUP,
    HDR_TYPE_RTTM,
    HDR_TYPE_SETUP,
    HDR_TYPE_SM,
    MIN_HEADER_LENGTH,
    FrameStatus,
)
from aeromq.transport.protocol.nak_flyweight import validate_nak_frame
from aeromq.transport.protocol.rttm_flyweight import validate_rttm_frame
from aeromq.transport.protocol.setup_flyweight import validate_setup_frame
from aeromq.transport.protocol.status_message_flyweight import validate_status_message_frame

__all__ = ["RES_MIN_LENGTH", "RSP_SETUP_HEADER_LENGTH", "validate_frame"]

RES_MIN_LENGTH = MIN_HEADER_LENGTH + 8
"""The common header and one resolution entry header (type, flags, port, age)."""
RSP_SETUP_HEADER_LENGTH = MIN_HEADER_LENGTH + 12
"""The common header, session id, stream id and response session id."""

_VERSION_AND_TYPE = struct.Struct("<4xBxH")
_Validator = Callable[[AtomicBuffer, int, int], FrameStatus]


def _min_length(required: int) -> _Validator:
    def validate(buffer: AtomicBuffer, offset: int, length: int) -> FrameStatus:
        return FrameStatus.VALID if length >= required else FrameStatus.TRUNCATED

    return validate


_VALIDATORS: dict[int, _Validator] = {
    HDR_TYPE_PAD: validate_data_frames,
    HDR_TYPE_DATA: validate_data_frames,
    HDR_TYPE_NAK: validate_nak_frame,
    HDR_TYPE_SM: validate_status_message_frame,
    HDR_TYPE_ERR: validate_error_frame,
    HDR_TYPE_SETUP: validate_setup_frame,
    HDR_TYPE_RTTM: validate_rttm_frame,
    HDR_TYPE_RES: _min_length(RES_MIN_LENGTH),
    HDR_TYPE_RSP_SETUP: _min_length(RSP_SETUP_HEADER_LENGTH),
    HDR_TYPE_EXT: _min_length(MIN_HEADER_LENGTH),
}


def validate_frame(buffer: AtomicBuffer, offset: int, length: int) -> FrameStatus:
    """Check the datagram of ``length`` bytes at ``offset`` in ``buffer``; never raise."""
    if offset < 0 or length < MIN_HEADER_LENGTH or offset + length > buffer.capacity:
        return FrameStatus.TRUNCATED
    version, frame_type = _VERSION_AND_TYPE.unpack_from(buffer, offset)
    if version != CURRENT_VERSION:
        return FrameStatus.BAD_VERSION
    validator = _VALIDATORS.get(frame_type)
    if validator is None:
        return FrameStatus.UNKNOWN_TYPE
    return validator(buffer, offset, length)
