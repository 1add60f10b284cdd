from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from aeromq.transport import ConfigurationError, TransportStateError
from aeromq.transport._errors import LogBufferFileError  # not yet re-exported by transport
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import LogBuffers, LogMetadata
from aeromq.transport.logbuffer import log_buffer_descriptor as d

TERM_LENGTH = 64 * 1024


def test_should_create_a_file_of_three_terms_and_a_metadata_page(shm_dir: Path) -> None:
    path = shm_dir / "1.logbuffer"
    with LogBuffers.create(path, TERM_LENGTH) as log:
        assert os.path.getsize(path) == 3 * TERM_LENGTH + 4096 == log.file_length
        assert log.path == path
        assert log.term_length == TERM_LENGTH
        assert [t.capacity for t in log.term_buffers] == [TERM_LENGTH] * 3
        assert log.meta_data_buffer.capacity == 4096
        base = log.term_buffers[0].address
        assert [t.address - base for t in log.term_buffers] == [0, TERM_LENGTH, 2 * TERM_LENGTH]
        assert log.meta_data_buffer.address - base == 3 * TERM_LENGTH
        assert (log.metadata.term_length, log.metadata.page_size) == (TERM_LENGTH, 4096)


def test_should_align_the_file_to_a_large_page_with_the_metadata_at_its_end(
    shm_dir: Path,
) -> None:
    page_size = 1024 * 1024
    with LogBuffers.create(shm_dir / "big.logbuffer", TERM_LENGTH, page_size) as log:
        assert log.file_length == page_size
        offset = log.meta_data_buffer.address - log.term_buffers[0].address
        assert offset == page_size - d.LOG_META_DATA_LENGTH


def test_should_allocate_the_whole_file_when_not_sparse(shm_dir: Path) -> None:
    path = shm_dir / "dense.logbuffer"
    with LogBuffers.create(path, TERM_LENGTH, sparse=False):
        assert os.stat(path).st_blocks * 512 >= 3 * TERM_LENGTH + 4096


def test_should_write_every_metadata_field_at_the_spec_offset_in_the_file(shm_dir: Path) -> None:
    path = shm_dir / "layout.logbuffer"
    with LogBuffers.create(path, TERM_LENGTH) as log:
        m = log.metadata
        meta = log.meta_data_buffer
        d.set_raw_tail(meta, 0, d.pack_tail(11, 96))
        d.set_raw_tail(meta, 1, d.pack_tail(9, 0))
        d.set_raw_tail(meta, 2, d.pack_tail(10, 0))
        d.set_active_term_count_ordered(meta, 4)
        d.set_end_of_stream_position(meta, 0x7FFF_FFFF_FFFF_FFFF)
        d.set_is_connected(meta, True)
        d.set_active_transport_count(meta, 2)
        m.correlation_id = 0x1122_3344_5566_7788
        m.initial_term_id = 7
        d.fill_default_header(meta, session_id=55, stream_id=1001, initial_term_id=7)
        m.mtu_length = 1408
        m.publication_window_length = 32768
        m.receiver_window_length = 131072
        m.socket_sndbuf_length = 1
        m.os_default_socket_sndbuf_length = 212992
        m.os_max_socket_sndbuf_length = 3
        m.socket_rcvbuf_length = 4
        m.os_default_socket_rcvbuf_length = 212993
        m.os_max_socket_rcvbuf_length = 6
        m.max_resend = 16
        m.entity_tag = -1
        m.response_correlation_id = -2
        m.linger_timeout_ns = 5_000_000_000
        m.untethered_window_limit_timeout_ns = 5_000_000_001
        m.untethered_resting_timeout_ns = 10_000_000_000
        m.group = True
        m.is_response = False
        m.rejoin = True
        m.reliable = True
        m.sparse = True
        m.signal_eos = True
        m.spies_simulate_connection = False
        m.tether = True
        d.set_is_publication_revoked(meta, True)
        m.log_type = d.LOG_TYPE_EXCLUSIVE
        m.untethered_linger_timeout_ns = -1

    page = path.read_bytes()[3 * TERM_LENGTH :]
    assert len(page) == 4096
    i32 = lambda offset: struct.unpack_from("<i", page, offset)[0]  # noqa: E731
    i64 = lambda offset: struct.unpack_from("<q", page, offset)[0]  # noqa: E731
    assert [i64(o) for o in (0, 8, 16)] == [(11 << 32) | 96, 9 << 32, 10 << 32]
    assert i32(24) == 4
    assert i64(128) == 0x7FFF_FFFF_FFFF_FFFF
    assert (i32(136), i32(140)) == (1, 2)
    assert i64(256) == 0x1122_3344_5566_7788
    assert [i32(o) for o in range(264, 320, 4)] == [
        7,
        32,
        1408,
        TERM_LENGTH,
        4096,
        32768,
        131072,
        1,
        212992,
        3,
        4,
        212993,
        6,
        16,
    ]
    assert struct.unpack_from("<iBBHiiiiq", page, 320) == (0, 0, 0xC0, 1, 0, 55, 1001, 7, 0)
    assert page[352:448] == bytes(96)
    assert [i64(o) for o in (448, 456, 464, 472, 480)] == [
        -1,
        -2,
        5_000_000_000,
        5_000_000_001,
        10_000_000_000,
    ]
    assert list(page[488:498]) == [1, 0, 1, 1, 1, 1, 0, 1, 1, 1]
    assert page[498:500] == bytes(2)
    assert i64(500) == -1
    assert page[508:] == bytes(4096 - 508)


def test_should_read_back_each_metadata_field() -> None:
    m = LogMetadata(AtomicBuffer.allocate(4096))
    for name in ("correlation_id", "entity_tag", "untethered_linger_timeout_ns"):
        setattr(m, name, -(2**40))
        assert getattr(m, name) == -(2**40)
    for name in ("initial_term_id", "mtu_length", "max_resend", "receiver_window_length"):
        setattr(m, name, -9)
        assert getattr(m, name) == -9
    for name in ("group", "signal_eos", "tether", "sparse"):
        setattr(m, name, True)
        assert getattr(m, name) is True
    m.log_type = d.LOG_TYPE_IMAGE
    assert m.log_type == 2
    assert LogMetadata.mtu_length.offset == d.LOG_MTU_LENGTH_OFFSET


def test_should_refuse_a_metadata_buffer_shorter_than_a_page() -> None:
    with pytest.raises(ConfigurationError, match="capacity=512 required=4096"):
        LogMetadata(AtomicBuffer.allocate(512))


def test_should_map_an_existing_log_and_share_its_memory(shm_dir: Path) -> None:
    path = shm_dir / "shared.logbuffer"
    with LogBuffers.create(path, 128 * 1024) as created, LogBuffers.map(path) as mapped:
        assert mapped.term_length == 128 * 1024
        created.term_buffers[2].put_int64(64, 99)
        d.set_is_connected(created.meta_data_buffer, True)
        assert mapped.term_buffers[2].get_int64_volatile(64) == 99
        assert d.is_connected(mapped.meta_data_buffer)


def test_should_refuse_to_map_a_short_file_with_values(shm_dir: Path) -> None:
    path = shm_dir / "short.logbuffer"
    path.write_bytes(bytes(4096))
    with pytest.raises(LogBufferFileError, match="too short") as info:
        LogBuffers.map(path)
    assert info.value.length == 4096  # type: ignore[attr-defined]
    assert info.value.min_length == 3 * 65536 + 4096  # type: ignore[attr-defined]


def test_should_refuse_a_file_whose_length_disagrees_with_its_metadata(shm_dir: Path) -> None:
    path = shm_dir / "grown.logbuffer"
    LogBuffers.create(path, TERM_LENGTH).close()
    with path.open("r+b") as file:  # two terms' more, metadata now in the wrong place
        file.truncate(5 * TERM_LENGTH + 4096)
        file.seek(5 * TERM_LENGTH + d.LOG_TERM_LENGTH_OFFSET)
        file.write(struct.pack("<ii", TERM_LENGTH, 4096))
    with pytest.raises(LogBufferFileError, match="does not match its metadata") as info:
        LogBuffers.map(path)
    assert info.value.expected_length == 3 * TERM_LENGTH + 4096  # type: ignore[attr-defined]


def test_should_refuse_a_file_with_invalid_metadata(shm_dir: Path) -> None:
    path = shm_dir / "blank.logbuffer"
    path.write_bytes(bytes(3 * TERM_LENGTH + 4096))
    with pytest.raises(LogBufferFileError, match="metadata is not valid") as info:
        LogBuffers.map(path)
    assert isinstance(info.value.__cause__, ConfigurationError)
    assert info.value.term_length == 0  # type: ignore[attr-defined]


def test_should_refuse_bad_lengths_on_create(shm_dir: Path) -> None:
    with pytest.raises(ConfigurationError, match="term_length=1000"):
        LogBuffers.create(shm_dir / "x", 1000)
    with pytest.raises(ConfigurationError, match="page_size=100"):
        LogBuffers.create(shm_dir / "x", TERM_LENGTH, 100)


def test_should_close_once_and_refuse_use_after(shm_dir: Path) -> None:
    log = LogBuffers.create(shm_dir / "closed.logbuffer", TERM_LENGTH)
    log.close()
    log.close()
    with pytest.raises(TransportStateError):
        _ = log.file_length
