"""Pure encoders and decoders of the replication frames (layout:
:mod:`aeromq.broker.replication.frame_descriptor`); no I/O.

- ``encode_append``, ``encode_heartbeat``, ``encode_fetch``, ``encode_ack`` build a frame's bytes;
  ``write_append_header`` writes an APPEND's header into a buffer the caller fills (a claimed
  publication buffer), so the commit log bytes are copied once.
- :func:`check_frame` is the receiver's hot path: the frame's type (positive) when the frame is
  well formed, else a negative code (:data:`SHORT_FRAME`, :data:`UNKNOWN_TYPE`, ...), as Aeron's
  ``offer`` returns a position or ``BACK_PRESSURED``; it never raises.
- :func:`decode_frame` returns the frame as a value (an APPEND's payload a ``memoryview`` of the
  input, no copy), or raises :class:`MalformedFrameError` naming the check that failed and the
  values that failed it.

Encoders refuse values that the decoder would refuse (negative epochs, offsets, member ids) with
:class:`~aeromq.broker.InvalidArgumentError`: a member never sends a frame it would drop.

Caller: the leader's replication sender and the follower's replica fetcher (to come).
"""

from __future__ import annotations

from typing import Final, NamedTuple, TypeAlias

from aeromq.broker._errors import InvalidArgumentError
from aeromq.broker.replication._errors import MalformedFrameError
from aeromq.broker.replication.frame_descriptor import (
    ACK_STRUCT,
    ACK_TYPE,
    APPEND_HEADER_LENGTH,
    APPEND_HEADER_STRUCT,
    APPEND_TYPE,
    CURRENT_VERSION,
    FETCH_STRUCT,
    FETCH_TYPE,
    FRAME_LENGTHS,
    HEADER_LENGTH,
    HEADER_STRUCT,
    HEARTBEAT_STRUCT,
    HEARTBEAT_TYPE,
    NO_FLAGS,
    PAYLOAD_OFFSET,
)

__all__ = [
    "CHECK_CODE_NAMES",
    "EPOCH_ABOVE_LEADER_EPOCH",
    "LENGTH_MISMATCH",
    "NEGATIVE_FIELD",
    "OFFSET_BEFORE_EPOCH_START",
    "SHORT_FRAME",
    "UNKNOWN_TYPE",
    "UNSUPPORTED_VERSION",
    "AckFrame",
    "AppendFrame",
    "FetchFrame",
    "Frame",
    "HeartbeatFrame",
    "ReadableBuffer",
    "check_frame",
    "decode_frame",
    "decode_or_none",
    "encode_ack",
    "encode_append",
    "encode_fetch",
    "encode_heartbeat",
    "write_append_header",
]

ReadableBuffer: TypeAlias = bytes | bytearray | memoryview

# check_frame's codes for a frame it refuses (a well-formed frame gives its type, > 0).
SHORT_FRAME: Final = -1  # shorter than the header, or than its type's fixed part
UNSUPPORTED_VERSION: Final = -2  # a version other than CURRENT_VERSION
UNKNOWN_TYPE: Final = -3  # a type that is not APPEND, HEARTBEAT, FETCH or ACK
LENGTH_MISMATCH: Final = -4  # longer than its type's length (or its header + payload length)
NEGATIVE_FIELD: Final = -5  # a negative epoch, offset, member id or payload length
OFFSET_BEFORE_EPOCH_START: Final = -6  # an APPEND whose bytes start before its epoch does
EPOCH_ABOVE_LEADER_EPOCH: Final = -7  # an APPEND of bytes newer than the leader sending them

CHECK_CODE_NAMES: Final = {
    SHORT_FRAME: "SHORT_FRAME",
    UNSUPPORTED_VERSION: "UNSUPPORTED_VERSION",
    UNKNOWN_TYPE: "UNKNOWN_TYPE",
    LENGTH_MISMATCH: "LENGTH_MISMATCH",
    NEGATIVE_FIELD: "NEGATIVE_FIELD",
    OFFSET_BEFORE_EPOCH_START: "OFFSET_BEFORE_EPOCH_START",
    EPOCH_ABOVE_LEADER_EPOCH: "EPOCH_ABOVE_LEADER_EPOCH",
}


class AppendFrame(NamedTuple):
    """Leader -> follower: commit log bytes ``[offset, offset + len(payload))`` of ``epoch``,
    sent by the leader of ``leader_epoch``."""

    epoch: int
    epoch_start_offset: int
    offset: int
    high_watermark: int
    payload: memoryview
    flags: int = NO_FLAGS
    leader_epoch: int = 0

    @property
    def end_offset(self) -> int:
        """The offset just past the frame's bytes."""
        return self.offset + len(self.payload)


class HeartbeatFrame(NamedTuple):
    """Leader -> follower when idle: the leader's epoch, log end offset and high watermark."""

    epoch: int
    leader_leo: int
    high_watermark: int
    flags: int = NO_FLAGS


class FetchFrame(NamedTuple):
    """Follower -> leader: stream to ``member_id`` from ``from_offset``."""

    member_id: int
    epoch: int
    from_offset: int
    flags: int = NO_FLAGS


class AckFrame(NamedTuple):
    """Follower -> leader: how far ``member_id`` has fsynced and written (LEO) its log."""

    member_id: int
    epoch: int
    fsynced_offset: int
    leo: int
    flags: int = NO_FLAGS


Frame: TypeAlias = AppendFrame | HeartbeatFrame | FetchFrame | AckFrame

_I32_MAX: Final = 2**31 - 1


def _check_arguments(frame: str, **values: int) -> None:
    """Refuse negative values (and a payload longer than an i32 can say)."""
    for name, value in values.items():
        if value < 0:
            raise InvalidArgumentError(
                f"replication {frame} field must not be negative", field=name, **values
            )
    if values.get("length", 0) > _I32_MAX:
        raise InvalidArgumentError(f"replication {frame} payload too long", **values)


def write_append_header(
    buffer: bytearray | memoryview,
    index: int,
    epoch: int,
    epoch_start_offset: int,
    offset: int,
    high_watermark: int,
    length: int,
    flags: int = NO_FLAGS,
    *,
    leader_epoch: int | None = None,
) -> int:
    """Write an APPEND header for ``length`` payload bytes at ``buffer[index:]``; the payload
    goes at ``index + PAYLOAD_OFFSET``. ``leader_epoch`` is the sender's epoch (``epoch`` when
    None: the leader sends bytes of its own epoch). Returns :data:`APPEND_HEADER_LENGTH`."""
    leader_epoch = epoch if leader_epoch is None else leader_epoch
    _check_arguments(
        "APPEND",
        epoch=epoch,
        epoch_start_offset=epoch_start_offset,
        offset=offset,
        high_watermark=high_watermark,
        length=length,
        leader_epoch=leader_epoch,
    )
    if offset < epoch_start_offset:
        raise InvalidArgumentError(
            "replication APPEND starts before its epoch",
            offset=offset,
            epoch_start_offset=epoch_start_offset,
        )
    if epoch > leader_epoch:
        raise InvalidArgumentError(
            "replication APPEND of an epoch above its leader's",
            epoch=epoch,
            leader_epoch=leader_epoch,
        )
    APPEND_HEADER_STRUCT.pack_into(
        buffer,
        index,
        CURRENT_VERSION,
        flags,
        APPEND_TYPE,
        length,
        epoch,
        epoch_start_offset,
        offset,
        high_watermark,
        leader_epoch,
    )
    return APPEND_HEADER_LENGTH


def encode_append(
    epoch: int,
    epoch_start_offset: int,
    offset: int,
    high_watermark: int,
    payload: ReadableBuffer,
    flags: int = NO_FLAGS,
    *,
    leader_epoch: int | None = None,
) -> bytes:
    """An APPEND frame carrying ``payload``, the commit log bytes from ``offset`` (of epoch
    ``epoch``, sent by the leader of ``leader_epoch``: ``epoch`` when None)."""
    length = len(payload)
    frame = bytearray(APPEND_HEADER_LENGTH + length)
    write_append_header(
        frame,
        0,
        epoch,
        epoch_start_offset,
        offset,
        high_watermark,
        length,
        flags,
        leader_epoch=leader_epoch,
    )
    frame[PAYLOAD_OFFSET:] = payload
    return bytes(frame)


def encode_heartbeat(
    epoch: int, leader_leo: int, high_watermark: int, flags: int = NO_FLAGS
) -> bytes:
    """A HEARTBEAT frame."""
    _check_arguments("HEARTBEAT", epoch=epoch, leader_leo=leader_leo, high_watermark=high_watermark)
    return HEARTBEAT_STRUCT.pack(
        CURRENT_VERSION, flags, HEARTBEAT_TYPE, 0, epoch, leader_leo, high_watermark
    )


def encode_fetch(member_id: int, epoch: int, from_offset: int, flags: int = NO_FLAGS) -> bytes:
    """A FETCH frame."""
    _check_arguments("FETCH", member_id=member_id, epoch=epoch, from_offset=from_offset)
    return FETCH_STRUCT.pack(CURRENT_VERSION, flags, FETCH_TYPE, member_id, epoch, from_offset)


def encode_ack(
    member_id: int, epoch: int, fsynced_offset: int, leo: int, flags: int = NO_FLAGS
) -> bytes:
    """An ACK frame."""
    _check_arguments(
        "ACK", member_id=member_id, epoch=epoch, fsynced_offset=fsynced_offset, leo=leo
    )
    return ACK_STRUCT.pack(CURRENT_VERSION, flags, ACK_TYPE, member_id, epoch, fsynced_offset, leo)


# The frames of a fixed length; their i64 fields follow the header's 4 values.
_FIXED_STRUCTS: Final = {
    HEARTBEAT_TYPE: HEARTBEAT_STRUCT,
    FETCH_TYPE: FETCH_STRUCT,
    ACK_TYPE: ACK_STRUCT,
}
_HEADER_VALUES: Final = 4


def check_frame(buffer: ReadableBuffer) -> int:
    """The frame's type (:data:`APPEND_TYPE`, ...) if ``buffer`` holds exactly one well-formed
    frame, else a negative code (:data:`CHECK_CODE_NAMES` names them). Never raises."""
    length = len(buffer)
    if length < HEADER_LENGTH:
        return SHORT_FRAME
    version, _flags, frame_type, word = HEADER_STRUCT.unpack_from(buffer)
    if version != CURRENT_VERSION:
        return UNSUPPORTED_VERSION
    fixed = FRAME_LENGTHS.get(frame_type)
    if fixed is None:
        return UNKNOWN_TYPE
    if length < fixed:
        return SHORT_FRAME
    if frame_type == APPEND_TYPE:
        _, _, _, payload_length, epoch, epoch_start, offset, hw, leader_epoch = (
            APPEND_HEADER_STRUCT.unpack_from(buffer)
        )
        if payload_length < 0 or epoch < 0 or epoch_start < 0 or hw < 0 or leader_epoch < 0:
            return NEGATIVE_FIELD
        if length != fixed + payload_length:
            return SHORT_FRAME if length < fixed + payload_length else LENGTH_MISMATCH
        if offset < epoch_start:
            return OFFSET_BEFORE_EPOCH_START
        if epoch > leader_epoch:
            return EPOCH_ABOVE_LEADER_EPOCH
        return APPEND_TYPE
    if length != fixed:
        return LENGTH_MISMATCH
    if word < 0 or min(_FIXED_STRUCTS[frame_type].unpack_from(buffer)[_HEADER_VALUES:]) < 0:
        return NEGATIVE_FIELD
    return int(frame_type)


def decode_frame(buffer: ReadableBuffer) -> Frame:
    """The frame in ``buffer`` (exactly one frame). Raises :class:`MalformedFrameError` naming
    the failed check (``reason``) and the frame's ``length``, ``version`` and ``frame_type``."""
    code = check_frame(buffer)
    if code < 0:
        raise _malformed(buffer, code)
    return _decode(memoryview(buffer), code)


def decode_or_none(buffer: ReadableBuffer) -> Frame | None:
    """The frame in ``buffer``, or None when it is not exactly one well-formed frame: the
    receive path's :func:`check_frame` and :func:`decode_frame` in one, the frame checked once
    (never raises)."""
    code = check_frame(buffer)
    if code < 0:
        return None
    return _decode(memoryview(buffer), code)


def _decode(view: memoryview, code: int) -> Frame:
    """The frame of type ``code`` (its :func:`check_frame` code, not negative) in ``view``."""
    if code == APPEND_TYPE:
        _, flags, _, length, epoch, epoch_start, offset, hw, leader_epoch = (
            APPEND_HEADER_STRUCT.unpack_from(view)
        )
        payload = view[PAYLOAD_OFFSET : PAYLOAD_OFFSET + length]
        return AppendFrame(epoch, epoch_start, offset, hw, payload, flags, leader_epoch)
    if code == HEARTBEAT_TYPE:
        _, flags, _, _, epoch, leader_leo, hw = HEARTBEAT_STRUCT.unpack_from(view)
        return HeartbeatFrame(epoch, leader_leo, hw, flags)
    if code == FETCH_TYPE:
        _, flags, _, member_id, epoch, from_offset = FETCH_STRUCT.unpack_from(view)
        return FetchFrame(member_id, epoch, from_offset, flags)
    _, flags, _, member_id, epoch, fsynced, leo = ACK_STRUCT.unpack_from(view)
    return AckFrame(member_id, epoch, fsynced, leo, flags)


def _malformed(buffer: ReadableBuffer, code: int) -> MalformedFrameError:
    values: dict[str, object] = {"reason": CHECK_CODE_NAMES[code], "length": len(buffer)}
    if len(buffer) >= HEADER_LENGTH:
        version, _, frame_type, word = HEADER_STRUCT.unpack_from(buffer)
        values.update(version=version, frame_type=frame_type, header_word=word)
        expected = FRAME_LENGTHS.get(frame_type)
        if expected is not None:
            values["expected_length"] = expected + (word if frame_type == APPEND_TYPE else 0)
    else:
        values["expected_length"] = HEADER_LENGTH
    return MalformedFrameError("malformed replication frame", **values)
