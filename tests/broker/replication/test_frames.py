"""The replication frames: the layout the descriptor draws, round trips of every frame
(hypothesis), and the decoder against truncated, extended, mutated and random inputs."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.broker import InvalidArgumentError
from aeromq.broker.replication import (
    CHECK_CODE_NAMES,
    EPOCH_ABOVE_LEADER_EPOCH,
    LENGTH_MISMATCH,
    NEGATIVE_FIELD,
    OFFSET_BEFORE_EPOCH_START,
    SHORT_FRAME,
    UNKNOWN_TYPE,
    UNSUPPORTED_VERSION,
    AckFrame,
    AppendFrame,
    FetchFrame,
    HeartbeatFrame,
    MalformedFrameError,
    ReplicationError,
    check_frame,
    decode_frame,
    decode_or_none,
    encode_ack,
    encode_append,
    encode_fetch,
    encode_heartbeat,
    frame_descriptor,
    write_append_header,
)
from aeromq.broker.replication.frame_descriptor import (
    ACK_FRAME_LENGTH,
    ACK_TYPE,
    APPEND_HEADER_LENGTH,
    APPEND_TYPE,
    CURRENT_VERSION,
    EPOCH_OFFSET,
    EPOCH_START_OFFSET_OFFSET,
    FETCH_FRAME_LENGTH,
    FETCH_TYPE,
    FROM_OFFSET_OFFSET,
    FSYNCED_OFFSET_OFFSET,
    HEARTBEAT_FRAME_LENGTH,
    HEARTBEAT_HIGH_WATERMARK_OFFSET,
    HEARTBEAT_TYPE,
    HIGH_WATERMARK_OFFSET,
    LEADER_EPOCH_OFFSET,
    LEADER_LEO_OFFSET,
    LENGTH_OFFSET,
    LEO_OFFSET,
    MEMBER_ID_OFFSET,
    OFFSET_OFFSET,
    PAYLOAD_OFFSET,
    TYPE_OFFSET,
    VERSION_OFFSET,
)

I64 = st.integers(min_value=0, max_value=2**63 - 1)
I32 = st.integers(min_value=0, max_value=2**31 - 1)
PAYLOAD = st.binary(max_size=512)


def _i64(frame: bytes, offset: int) -> int:
    return int(struct.unpack_from("<q", frame, offset)[0])


def _i32(frame: bytes, offset: int) -> int:
    return int(struct.unpack_from("<i", frame, offset)[0])


def test_should_lay_out_an_append_as_the_diagram_draws() -> None:
    frame = encode_append(7, 1000, 1200, 900, b"batch", leader_epoch=9)

    assert (frame[VERSION_OFFSET], frame[VERSION_OFFSET + 1]) == (CURRENT_VERSION, 0)
    assert struct.unpack_from("<H", frame, TYPE_OFFSET)[0] == APPEND_TYPE
    assert _i32(frame, LENGTH_OFFSET) == 5
    assert _i64(frame, EPOCH_OFFSET) == 7
    assert _i64(frame, EPOCH_START_OFFSET_OFFSET) == 1000
    assert _i64(frame, OFFSET_OFFSET) == 1200
    assert _i64(frame, HIGH_WATERMARK_OFFSET) == 900
    assert _i64(frame, LEADER_EPOCH_OFFSET) == 9
    assert frame[PAYLOAD_OFFSET:] == b"batch"
    assert len(frame) == APPEND_HEADER_LENGTH + 5 == 53


def test_should_lay_out_the_fixed_frames_as_the_diagrams_draw() -> None:
    heartbeat = encode_heartbeat(3, 4096, 2048)
    fetch = encode_fetch(2, 3, 512)
    ack = encode_ack(1, 3, 256, 1024)

    assert [len(heartbeat), len(fetch), len(ack)] == [32, 24, 32]
    assert [HEARTBEAT_FRAME_LENGTH, FETCH_FRAME_LENGTH, ACK_FRAME_LENGTH] == [32, 24, 32]
    assert struct.unpack_from("<H", heartbeat, TYPE_OFFSET)[0] == HEARTBEAT_TYPE
    assert (
        _i64(heartbeat, LEADER_LEO_OFFSET),
        _i64(heartbeat, HEARTBEAT_HIGH_WATERMARK_OFFSET),
    ) == (
        4096,
        2048,
    )
    assert struct.unpack_from("<H", fetch, TYPE_OFFSET)[0] == FETCH_TYPE
    assert (_i32(fetch, MEMBER_ID_OFFSET), _i64(fetch, FROM_OFFSET_OFFSET)) == (2, 512)
    assert struct.unpack_from("<H", ack, TYPE_OFFSET)[0] == ACK_TYPE
    assert (_i64(ack, FSYNCED_OFFSET_OFFSET), _i64(ack, LEO_OFFSET)) == (256, 1024)


def test_should_keep_every_i64_field_8_byte_aligned() -> None:
    offsets = [
        EPOCH_OFFSET,
        EPOCH_START_OFFSET_OFFSET,
        OFFSET_OFFSET,
        HIGH_WATERMARK_OFFSET,
        LEADER_EPOCH_OFFSET,
        PAYLOAD_OFFSET,
        LEADER_LEO_OFFSET,
        HEARTBEAT_HIGH_WATERMARK_OFFSET,
        FROM_OFFSET_OFFSET,
        FSYNCED_OFFSET_OFFSET,
        LEO_OFFSET,
    ]
    assert [offset % 8 for offset in offsets] == [0] * len(offsets)
    assert (frame_descriptor.LEADER_STREAM_ID, frame_descriptor.FOLLOWER_STREAM_ID) == (1001, 1002)


@given(I64, I64, I64, I64, PAYLOAD, I64)
def test_should_round_trip_an_append(
    epoch: int, epoch_start: int, delta: int, hw: int, payload: bytes, newer: int
) -> None:
    offset = min(epoch_start + delta, 2**63 - 1)
    leader_epoch = min(epoch + newer, 2**63 - 1)
    frame = encode_append(epoch, epoch_start, offset, hw, payload, leader_epoch=leader_epoch)

    decoded = decode_frame(frame)

    assert check_frame(frame) == APPEND_TYPE
    assert isinstance(decoded, AppendFrame)
    assert (decoded.epoch, decoded.epoch_start_offset, decoded.offset) == (
        epoch,
        epoch_start,
        offset,
    )
    assert (decoded.high_watermark, bytes(decoded.payload), decoded.flags) == (hw, payload, 0)
    assert decoded.leader_epoch == leader_epoch
    assert decoded.end_offset == offset + len(payload)


@given(I64, I64, I64)
def test_should_round_trip_a_heartbeat(epoch: int, leo: int, hw: int) -> None:
    assert decode_frame(encode_heartbeat(epoch, leo, hw)) == HeartbeatFrame(epoch, leo, hw)


@given(I32, I64, I64)
def test_should_round_trip_a_fetch(member_id: int, epoch: int, from_offset: int) -> None:
    assert decode_frame(encode_fetch(member_id, epoch, from_offset)) == FetchFrame(
        member_id, epoch, from_offset
    )


@given(I32, I64, I64, I64)
def test_should_round_trip_an_ack(member_id: int, epoch: int, fsynced: int, leo: int) -> None:
    assert decode_frame(encode_ack(member_id, epoch, fsynced, leo)) == AckFrame(
        member_id, epoch, fsynced, leo
    )


def test_should_decode_an_append_payload_without_copying() -> None:
    frame = bytearray(encode_append(1, 0, 0, 0, b"abcd"))

    decoded = decode_frame(frame)
    frame[PAYLOAD_OFFSET] = ord("z")

    assert isinstance(decoded, AppendFrame)
    assert bytes(decoded.payload) == b"zbcd"


def test_should_write_an_append_header_where_the_caller_fills_the_payload() -> None:
    buffer = bytearray(16 + APPEND_HEADER_LENGTH + 3)
    written = write_append_header(buffer, 16, 2, 10, 12, 11, 3)
    buffer[16 + PAYLOAD_OFFSET :] = b"xyz"

    decoded = decode_frame(memoryview(buffer)[16:])

    assert written == APPEND_HEADER_LENGTH
    assert decoded == AppendFrame(2, 10, 12, 11, memoryview(b"xyz"), leader_epoch=2)


def _frames() -> list[bytes]:
    return [
        encode_append(5, 100, 140, 120, b"0123456789"),
        encode_append(5, 100, 100, 0, b""),
        encode_heartbeat(5, 150, 140),
        encode_fetch(1, 5, 130),
        encode_ack(2, 5, 120, 150),
    ]


@pytest.mark.parametrize("frame", _frames(), ids=["append", "empty-append", "hb", "fetch", "ack"])
def test_should_refuse_every_truncation_of_a_frame(frame: bytes) -> None:
    for length in range(len(frame)):
        truncated = frame[:length]

        assert check_frame(truncated) == SHORT_FRAME, length
        with pytest.raises(MalformedFrameError, match="reason='SHORT_FRAME'") as caught:
            decode_frame(truncated)
        assert caught.value.length == length  # type: ignore[attr-defined]


@pytest.mark.parametrize("frame", _frames(), ids=["append", "empty-append", "hb", "fetch", "ack"])
def test_should_refuse_a_frame_with_bytes_past_its_end(frame: bytes) -> None:
    assert check_frame(frame + b"\x00") == LENGTH_MISMATCH
    with pytest.raises(MalformedFrameError, match="LENGTH_MISMATCH") as caught:
        decode_frame(frame + b"\x00")
    assert caught.value.expected_length == len(frame)  # type: ignore[attr-defined]


def test_should_refuse_another_version_and_unknown_types() -> None:
    frame = bytearray(encode_fetch(1, 2, 3))
    frame[VERSION_OFFSET] = 2
    unknown = bytearray(encode_fetch(1, 2, 3))
    struct.pack_into("<H", unknown, TYPE_OFFSET, 9)

    assert check_frame(frame) == UNSUPPORTED_VERSION
    assert check_frame(unknown) == UNKNOWN_TYPE
    with pytest.raises(MalformedFrameError, match=r"reason='UNKNOWN_TYPE'.*frame_type=9"):
        decode_frame(unknown)


@pytest.mark.parametrize(
    ("frame", "field_offset"),
    [
        (encode_append(1, 0, 8, 0, b"ab"), EPOCH_OFFSET),
        (encode_append(1, 0, 8, 0, b"ab"), HIGH_WATERMARK_OFFSET),
        (encode_append(1, 0, 8, 0, b"ab"), LEADER_EPOCH_OFFSET),
        (encode_heartbeat(1, 2, 3), LEADER_LEO_OFFSET),
        (encode_fetch(1, 2, 3), MEMBER_ID_OFFSET),
        (encode_ack(1, 2, 3, 4), LEO_OFFSET),
    ],
)
def test_should_refuse_negative_fields(frame: bytes, field_offset: int) -> None:
    mutated = bytearray(frame)
    width = 4 if field_offset == MEMBER_ID_OFFSET else 8
    mutated[field_offset : field_offset + width] = b"\xff" * width

    assert check_frame(mutated) == NEGATIVE_FIELD


def test_should_refuse_an_append_that_starts_before_its_epoch() -> None:
    frame = bytearray(encode_append(3, 100, 100, 0, b"x"))
    struct.pack_into("<q", frame, OFFSET_OFFSET, 99)

    assert check_frame(frame) == OFFSET_BEFORE_EPOCH_START
    with pytest.raises(InvalidArgumentError, match="offset=99 epoch_start_offset=100"):
        encode_append(3, 100, 99, 0, b"x")


def test_should_refuse_an_append_of_an_epoch_above_its_leader_epoch() -> None:
    frame = bytearray(encode_append(3, 100, 100, 0, b"x", leader_epoch=4))
    struct.pack_into("<q", frame, LEADER_EPOCH_OFFSET, 2)

    assert check_frame(frame) == EPOCH_ABOVE_LEADER_EPOCH
    with pytest.raises(InvalidArgumentError, match="epoch=3 leader_epoch=2"):
        encode_append(3, 100, 100, 0, b"x", leader_epoch=2)


def test_should_refuse_to_encode_what_the_decoder_would_drop() -> None:
    with pytest.raises(InvalidArgumentError, match="field='epoch'"):
        encode_heartbeat(-1, 0, 0)
    with pytest.raises(InvalidArgumentError, match="field='member_id'"):
        encode_ack(-2, 0, 0, 0)
    with pytest.raises(InvalidArgumentError, match="field='from_offset'"):
        encode_fetch(0, 0, -5)


def test_should_name_every_check_code_and_root_the_error() -> None:
    assert sorted(CHECK_CODE_NAMES) == list(range(-7, 0))
    assert issubclass(MalformedFrameError, ReplicationError)


@given(st.binary(max_size=96))
def test_should_never_fail_on_random_bytes_but_with_a_code(data: bytes) -> None:
    code = check_frame(data)

    if code < 0:
        assert code in CHECK_CODE_NAMES
        with pytest.raises(MalformedFrameError):
            decode_frame(data)
    else:
        decoded = decode_frame(data)
        assert check_frame(data) == code
        assert decoded.epoch >= 0


_CLASSES: dict[int, type] = {
    APPEND_TYPE: AppendFrame,
    HEARTBEAT_TYPE: HeartbeatFrame,
    FETCH_TYPE: FetchFrame,
    ACK_TYPE: AckFrame,
}


@given(st.sampled_from(_frames()), st.data())
def test_should_check_or_refuse_every_mutation_of_a_frame(
    frame: bytes, data: st.DataObject
) -> None:
    mutated = bytearray(frame)
    index = data.draw(st.integers(0, len(frame) - 1))
    mutated[index] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(mutated)))

    for candidate in (bytes(mutated), bytes(mutated[:cut])):
        code = check_frame(candidate)
        if code < 0:
            with pytest.raises(MalformedFrameError):
                decode_frame(candidate)
            assert decode_or_none(candidate) is None
        else:
            assert type(decode_frame(candidate)) is _CLASSES[code]
            assert decode_or_none(candidate) == decode_frame(candidate)


@pytest.mark.parametrize("frame", _frames(), ids=["append", "empty-append", "hb", "fetch", "ack"])
def test_should_decode_on_the_receive_path_as_decode_frame_does_or_give_none(frame: bytes) -> None:
    decoded = decode_or_none(frame)

    assert decoded == decode_frame(frame)
    assert type(decoded) is _CLASSES[check_frame(frame)]
    for malformed in (frame[:-1], frame + b"\x00", b"\x09" + frame[1:]):
        assert check_frame(malformed) < 0
        assert decode_or_none(malformed) is None
