from __future__ import annotations

import struct

import pytest

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import frame_descriptor as f


def test_should_lay_out_the_data_header_as_the_spec_says() -> None:
    assert (
        f.FRAME_LENGTH_FIELD_OFFSET,
        f.VERSION_FIELD_OFFSET,
        f.FLAGS_FIELD_OFFSET,
        f.TYPE_FIELD_OFFSET,
        f.TERM_OFFSET_FIELD_OFFSET,
        f.SESSION_ID_FIELD_OFFSET,
        f.STREAM_ID_FIELD_OFFSET,
        f.TERM_ID_FIELD_OFFSET,
        f.RESERVED_VALUE_FIELD_OFFSET,
    ) == (0, 4, 5, 6, 8, 12, 16, 20, 24)
    # the documented header is a 32-byte little-endian struct with no padding
    assert struct.calcsize("<iBBhiiiiq") == f.HDR_LENGTH == f.DATA_OFFSET == 32
    assert f.FRAME_ALIGNMENT == 32


def test_should_define_the_spec_flags_and_types() -> None:
    assert (f.BEGIN_FLAG, f.END_FLAG, f.UNFRAGMENTED, f.EOS_FLAG) == (0x80, 0x40, 0xC0, 0x20)
    assert (
        f.HDR_TYPE_PAD,
        f.HDR_TYPE_DATA,
        f.HDR_TYPE_NAK,
        f.HDR_TYPE_SM,
        f.HDR_TYPE_ERR,
        f.HDR_TYPE_SETUP,
        f.HDR_TYPE_RTTM,
        f.HDR_TYPE_RES,
        f.HDR_TYPE_RSP_SETUP,
        f.HDR_TYPE_EXT,
    ) == (0, 1, 2, 3, 4, 5, 6, 7, 0x0B, 0xFFFF)


@pytest.mark.parametrize(
    ("value", "alignment", "aligned"),
    [(0, 32, 0), (1, 32, 32), (32, 32, 32), (33, 32, 64), (4097, 4096, 8192)],
)
def test_should_align_up_to_a_power_of_two(value: int, alignment: int, aligned: int) -> None:
    assert f.align(value, alignment) == aligned


def test_should_tell_powers_of_two() -> None:
    assert [v for v in range(-2, 70) if f.is_power_of_two(v)] == [1, 2, 4, 8, 16, 32, 64]


@pytest.mark.parametrize(
    ("term_length", "max_length"),
    [(64 * 1024, 8 * 1024), (16 * 1024 * 1024, 2 * 1024 * 1024), (1 << 30, 16 * 1024 * 1024)],
)
def test_should_cap_the_max_message_length(term_length: int, max_length: int) -> None:
    assert f.compute_max_message_length(term_length) == max_length


def test_should_read_and_write_each_header_field_at_its_offset() -> None:
    buffer = AtomicBuffer.allocate(128)
    f.frame_length_ordered(buffer, 32, 45)
    f.set_frame_flags(buffer, 32, f.BEGIN_FLAG)
    f.set_frame_type(buffer, 32, f.HDR_TYPE_EXT)
    f.set_frame_term_offset(buffer, 32)
    f.set_frame_term_id(buffer, 32, -5)
    raw = memoryview(buffer).tobytes()[32:64]
    assert struct.unpack("<iBBHiiiiq", raw) == (45, 0, 0x80, 0xFFFF, 32, 0, 0, -5, 0)
    assert f.frame_length(buffer, 32) == f.frame_length_volatile(buffer, 32) == 45
    assert f.frame_version(buffer, 32) == 0
    assert f.frame_flags(buffer, 32) == 0x80
    assert f.frame_type(buffer, 32) == 0xFFFF
    assert not f.is_padding_frame(buffer, 32)
    f.set_frame_type(buffer, 32, f.HDR_TYPE_PAD)
    assert f.is_padding_frame(buffer, 32)
