from __future__ import annotations

import struct

import pytest

from aeromq.transport import ConfigurationError, InvalidMessageTypeError
from aeromq.transport.concurrent import ring_buffer_descriptor as rbd


def test_should_place_trailer_counters_on_their_own_128_byte_lines() -> None:
    offsets = [
        rbd.TAIL_POSITION_OFFSET,
        rbd.HEAD_CACHE_POSITION_OFFSET,
        rbd.HEAD_POSITION_OFFSET,
        rbd.CORRELATION_COUNTER_OFFSET,
        rbd.CONSUMER_HEARTBEAT_OFFSET,
    ]
    assert offsets == [128, 256, 384, 512, 640]
    assert rbd.TRAILER_LENGTH == 768 == 6 * 2 * rbd.CACHE_LINE_LENGTH


def test_should_document_an_8_byte_record_header() -> None:
    assert rbd.HEADER_LENGTH == struct.calcsize("<ii") == 8
    assert (rbd.LENGTH_OFFSET, rbd.TYPE_OFFSET) == (0, 4)
    assert rbd.ALIGNMENT == 8
    assert rbd.PADDING_MSG_TYPE_ID == -1
    assert (rbd.length_offset(64), rbd.type_offset(64), rbd.encoded_msg_offset(64)) == (64, 68, 72)


def test_should_pack_header_as_the_i64_an_8_byte_load_returns() -> None:
    for length, type_id in [(16, 7), (-24, 3), (40, -1), (-8, -1)]:
        raw = struct.pack("<ii", length, type_id)
        assert rbd.make_header(length, type_id) == struct.unpack("<q", raw)[0]


def test_should_align_up_to_a_power_of_two() -> None:
    assert [rbd.align(v, 8) for v in (0, 1, 8, 9, 15, 16)] == [0, 8, 8, 16, 16, 16]


@pytest.mark.parametrize("capacity", [8, 64, 1024, 1 << 20])
def test_should_accept_power_of_two_capacity_plus_trailer(capacity: int) -> None:
    assert rbd.check_capacity(capacity + rbd.TRAILER_LENGTH) == capacity


@pytest.mark.parametrize("capacity", [0, 4, 100, 1000, 1023])
def test_should_reject_capacity_that_is_not_a_power_of_two_with_the_value(capacity: int) -> None:
    with pytest.raises(ConfigurationError, match=f"capacity={capacity} ") as info:
        rbd.check_capacity(capacity + rbd.TRAILER_LENGTH)
    assert info.value.buffer_capacity == capacity + rbd.TRAILER_LENGTH


def test_should_reject_capacity_below_the_minimum() -> None:
    with pytest.raises(ConfigurationError, match="min_capacity=16"):
        rbd.check_capacity(8 + rbd.TRAILER_LENGTH, min_capacity=16)


def test_should_make_max_message_an_eighth_of_capacity() -> None:
    assert rbd.max_msg_length(1024, 8) == 128
    assert rbd.max_msg_length(32, 16) == 8
    assert rbd.max_msg_length(16, 16) == 0


@pytest.mark.parametrize("msg_type_id", [0, -1, -5, 2**31])
def test_should_reject_message_type_ids_outside_positive_i32(msg_type_id: int) -> None:
    with pytest.raises(InvalidMessageTypeError, match=f"msg_type_id={msg_type_id}"):
        rbd.check_type_id(msg_type_id)
