from __future__ import annotations

import struct

import pytest

from aeromq.transport import ConfigurationError, logbuffer
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import Header, HeaderWriter
from aeromq.transport.logbuffer import log_buffer_descriptor as d
from aeromq.transport.logbuffer.frame_descriptor import BEGIN_FLAG, HDR_TYPE_DATA, HDR_TYPE_PAD

HEADER = struct.Struct("<iBBHiiiiq")


def _default_header(session_id: int, stream_id: int, term_id: int) -> bytes:
    meta = AtomicBuffer.allocate(d.LOG_META_DATA_LENGTH)
    d.fill_default_header(meta, session_id, stream_id, term_id)
    return d.default_frame_header(meta)


@pytest.mark.parametrize(
    ("session_id", "stream_id", "term_id"),
    [(1, 2, 3), (-1, -2, -3), (2**31 - 1, -(2**31), 2**31 - 1)],
)
def test_should_write_the_default_header_with_the_length_negated(
    session_id: int, stream_id: int, term_id: int
) -> None:
    writer = HeaderWriter(_default_header(session_id, stream_id, 0))
    term = AtomicBuffer.allocate(256)
    writer.write(term, 96, 1000, term_id)
    assert HEADER.unpack(term.get_bytes(96, 32)) == (
        -1000,
        0,
        0xC0,
        HDR_TYPE_DATA,
        96,
        session_id,
        stream_id,
        term_id,
        0,
    )


def test_should_write_and_publish_a_padding_frame() -> None:
    writer = HeaderWriter(_default_header(5, 6, 0))
    term = AtomicBuffer.allocate(256)
    writer.write_padding(term, 128, 128, -9)
    assert HEADER.unpack(term.get_bytes(128, 32)) == (128, 0, 0xC0, HDR_TYPE_PAD, 128, 5, 6, -9, 0)


def test_should_refuse_a_short_default_header() -> None:
    with pytest.raises(ConfigurationError, match="length=16 required=32"):
        HeaderWriter(bytes(16))


def test_should_read_every_field_of_the_frame_it_points_at() -> None:
    term = AtomicBuffer.allocate(256)
    term.put_bytes(64, HEADER.pack(1000, 0, BEGIN_FLAG, HDR_TYPE_DATA, 64, -5, 77, 11, -123))
    header = Header(initial_term_id=10, position_bits_to_shift=16, context="ctx")
    header.buffer = term
    header.offset = 64
    assert (header.frame_length, header.version, header.flags, header.type) == (1000, 0, 0x80, 1)
    assert (header.term_offset, header.session_id, header.stream_id, header.term_id) == (
        64,
        -5,
        77,
        11,
    )
    assert header.reserved_value == -123
    assert header.next_term_offset == 64 + 1024
    assert header.position == (1 << 16) + 1088
    assert (header.initial_term_id, header.context) == (10, "ctx")
    assert "frame_length=1000" in repr(header)


def test_should_place_an_assembled_message_after_its_last_fragment() -> None:
    term = AtomicBuffer.allocate(64)
    term.put_bytes(0, HEADER.pack(32 + 3000, 0, 0xC0, HDR_TYPE_DATA, 64, 1, 1, 10, 0))
    header = Header(10, 16)
    header.buffer = term
    header.fragmented_frame_length = d.compute_fragmented_frame_length(3000, 1376)
    assert header.next_term_offset == 64 + 1408 + 1408 + 288
    assert header.position == header.next_term_offset


def test_should_export_a_sorted_public_api() -> None:
    assert logbuffer.__all__ == sorted(logbuffer.__all__)
    for name in logbuffer.__all__:
        assert getattr(logbuffer, name) is not None
