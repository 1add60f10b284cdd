"""try_fill_gap: pad over an empty gap for an unreliable stream, never over data."""

from __future__ import annotations

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.term_gap_filler import try_fill_gap
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_META_DATA_LENGTH,
    fill_default_header,
)
from aeromq.transport.protocol import HDR_TYPE_PAD, DataHeaderFlyweight


def test_should_pad_an_empty_gap_with_the_streams_header() -> None:
    meta = AtomicBuffer.allocate(LOG_META_DATA_LENGTH)
    fill_default_header(meta, 11, 22, 5)
    term = AtomicBuffer.allocate(64 * 1024)
    assert try_fill_gap(meta, term, 9, 128, 256)
    header = DataHeaderFlyweight(term, 128)
    assert header.frame_length == 256
    assert header.header_type == HDR_TYPE_PAD
    assert (header.session_id, header.stream_id, header.term_id, header.term_offset) == (
        11,
        22,
        9,
        128,
    )


def test_should_leave_a_gap_that_data_reached() -> None:
    meta = AtomicBuffer.allocate(LOG_META_DATA_LENGTH)
    term = AtomicBuffer.allocate(64 * 1024)
    term.put_int32(192, 64)
    assert not try_fill_gap(meta, term, 9, 128, 256)
    assert term.get_int32(128) == 0
    assert not try_fill_gap(meta, term, 9, 64 * 1024 - 32, 64)  # past the term
