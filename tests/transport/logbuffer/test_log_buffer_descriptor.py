from __future__ import annotations

import struct

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import log_buffer_descriptor as d

SPEC_OFFSETS = {
    "TERM_TAIL_COUNTERS_OFFSET": 0,
    "LOG_ACTIVE_TERM_COUNT_OFFSET": 24,
    "LOG_END_OF_STREAM_POSITION_OFFSET": 128,
    "LOG_IS_CONNECTED_OFFSET": 136,
    "LOG_ACTIVE_TRANSPORT_COUNT_OFFSET": 140,
    "LOG_CORRELATION_ID_OFFSET": 256,
    "LOG_INITIAL_TERM_ID_OFFSET": 264,
    "LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET": 268,
    "LOG_MTU_LENGTH_OFFSET": 272,
    "LOG_TERM_LENGTH_OFFSET": 276,
    "LOG_PAGE_SIZE_OFFSET": 280,
    "LOG_PUBLICATION_WINDOW_LENGTH_OFFSET": 284,
    "LOG_RECEIVER_WINDOW_LENGTH_OFFSET": 288,
    "LOG_SOCKET_SNDBUF_LENGTH_OFFSET": 292,
    "LOG_OS_DEFAULT_SOCKET_SNDBUF_LENGTH_OFFSET": 296,
    "LOG_OS_MAX_SOCKET_SNDBUF_LENGTH_OFFSET": 300,
    "LOG_SOCKET_RCVBUF_LENGTH_OFFSET": 304,
    "LOG_OS_DEFAULT_SOCKET_RCVBUF_LENGTH_OFFSET": 308,
    "LOG_OS_MAX_SOCKET_RCVBUF_LENGTH_OFFSET": 312,
    "LOG_MAX_RESEND_OFFSET": 316,
    "LOG_DEFAULT_FRAME_HEADER_OFFSET": 320,
    "LOG_ENTITY_TAG_OFFSET": 448,
    "LOG_RESPONSE_CORRELATION_ID_OFFSET": 456,
    "LOG_LINGER_TIMEOUT_NS_OFFSET": 464,
    "LOG_UNTETHERED_WINDOW_LIMIT_TIMEOUT_NS_OFFSET": 472,
    "LOG_UNTETHERED_RESTING_TIMEOUT_NS_OFFSET": 480,
    "LOG_GROUP_OFFSET": 488,
    "LOG_IS_RESPONSE_OFFSET": 489,
    "LOG_REJOIN_OFFSET": 490,
    "LOG_RELIABLE_OFFSET": 491,
    "LOG_SPARSE_OFFSET": 492,
    "LOG_SIGNAL_EOS_OFFSET": 493,
    "LOG_SPIES_SIMULATE_CONNECTION_OFFSET": 494,
    "LOG_TETHER_OFFSET": 495,
    "LOG_IS_PUBLICATION_REVOKED_OFFSET": 496,
    "LOG_TYPE_OFFSET": 497,
    "LOG_UNTETHERED_LINGER_TIMEOUT_NS_OFFSET": 500,
}

# The metadata struct as the C reference declares it, packed to 4 (``#pragma pack(4)``).
_METADATA_STRUCT = struct.Struct("<3q i 100x q i i 112x q 14i 128x 5q 10B 2x q")


@pytest.mark.parametrize(("name", "offset"), SPEC_OFFSETS.items())
def test_should_place_each_metadata_field_at_its_spec_offset(name: str, offset: int) -> None:
    assert getattr(d, name) == offset


def test_should_match_the_documented_struct_and_page_lengths() -> None:
    assert _METADATA_STRUCT.size == d.LOG_META_DATA_USED_LENGTH == 508
    assert d.LOG_META_DATA_LENGTH == 4096
    assert d.LOG_DEFAULT_FRAME_HEADER_MAX_LENGTH == 128
    assert (d.PARTITION_COUNT, d.TERM_MIN_LENGTH, d.TERM_MAX_LENGTH) == (3, 64 * 1024, 1 << 30)
    assert (d.PAGE_MIN_SIZE, d.PAGE_MAX_SIZE) == (4096, 1 << 30)
    assert (d.LOG_TYPE_CONCURRENT, d.LOG_TYPE_EXCLUSIVE, d.LOG_TYPE_IMAGE) == (0, 1, 2)


@pytest.mark.parametrize(
    ("term_length", "message"),
    [
        (32 * 1024, "term length less than min length: term_length=32768 min_length=65536"),
        (2 << 30, "term length more than max length"),
        (96 * 1024, "term length not a power of 2: term_length=98304"),
    ],
)
def test_should_refuse_bad_term_lengths_with_values(term_length: int, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as info:
        d.check_term_length(term_length)
    assert info.value.term_length == term_length  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("page_size", "message"),
    [
        (2048, "page size less than min size: page_size=2048 min_size=4096"),
        (2 << 30, "page size more than max size"),
        (12 * 1024, "page size not a power of 2: page_size=12288"),
    ],
)
def test_should_refuse_bad_page_sizes_with_values(page_size: int, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        d.check_page_size(page_size)


def test_should_accept_the_bounds() -> None:
    for term_length in (d.TERM_MIN_LENGTH, d.TERM_MAX_LENGTH):
        d.check_term_length(term_length)
    for page_size in (d.PAGE_MIN_SIZE, d.PAGE_MAX_SIZE):
        d.check_page_size(page_size)


def test_should_compute_the_log_length_aligned_to_the_page() -> None:
    assert d.compute_log_length(64 * 1024, 4096) == 3 * 64 * 1024 + 4096
    assert d.compute_log_length(64 * 1024, 2 * 1024 * 1024) == 2 * 1024 * 1024
    assert d.compute_log_length(16 << 20, 4096) == 3 * (16 << 20) + 4096


def test_should_compute_positions_from_term_ids_and_offsets() -> None:
    bits = d.position_bits_to_shift(64 * 1024)
    assert bits == 16
    assert d.compute_position(10, 96, bits, 7) == 3 * 65536 + 96
    assert d.compute_term_begin_position(10, bits, 7) == 3 * 65536
    assert d.compute_term_id_from_position(3 * 65536 + 96, bits, 7) == 10
    assert d.compute_term_offset_from_position(3 * 65536 + 96, bits) == 96
    assert d.compute_term_count(10, 7) == 3


def test_should_wrap_term_ids_like_32_bit_integers() -> None:
    bits = 16
    initial = 2**31 - 2
    wrapped = -(2**31) + 1  # initial + 3, wrapped
    assert d.compute_term_count(wrapped, initial) == 3
    assert d.compute_position(wrapped, 0, bits, initial) == 3 << bits
    assert d.compute_term_id_from_position(3 << bits, bits, initial) == wrapped
    assert d.index_by_term(initial, wrapped) == 0


def test_should_pick_partitions_by_term_count_and_position() -> None:
    assert [d.index_by_term_count(c) for c in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert [d.index_by_position(p << 16, 16) for p in range(4)] == [0, 1, 2, 0]
    assert d.index_by_position((5 << 16) + 100, 16) == 2
    assert d.index_by_term(7, 11) == 1


def test_should_refuse_a_bad_term_length_when_computing_the_shift() -> None:
    with pytest.raises(ConfigurationError):
        d.position_bits_to_shift(1000)


def test_should_compute_the_term_space_of_a_fragmented_message() -> None:
    assert d.compute_fragmented_frame_length(1376, 1376) == 1408
    assert d.compute_fragmented_frame_length(1377, 1376) == 1408 + 64
    assert d.compute_fragmented_frame_length(2 * 1376 + 10, 1376) == 2 * 1408 + 64


def test_should_pack_and_unpack_raw_tails() -> None:
    raw = d.pack_tail(-3, 4096)
    assert d.term_id(raw) == -3
    assert d.term_offset(raw, 65536) == 4096
    assert d.term_offset(d.pack_tail(5, 70000), 65536) == 65536  # capped at the term length
    assert d.pack_tail(2**31 - 1, 0) == (2**31 - 1) << 32


@pytest.fixture
def meta() -> AtomicBuffer:
    return AtomicBuffer.allocate(d.LOG_META_DATA_LENGTH)


def test_should_initialise_tails_so_that_rotation_reuses_each_partition(
    meta: AtomicBuffer,
) -> None:
    d.initialise_tails(meta, 100)
    assert [d.raw_tail(meta, i) >> 32 for i in range(3)] == [100, 98, 99]
    assert d.active_term_count(meta) == 0
    assert d.active_raw_tail_volatile(meta) == d.pack_tail(100, 0)
    for expected_count, term_id in enumerate((100, 101, 102, 103, 104), start=1):
        assert d.rotate_log(meta, expected_count - 1, term_id)
        assert d.active_term_count(meta) == expected_count
        assert d.active_raw_tail_volatile(meta) == d.pack_tail(term_id + 1, 0)


def test_should_initialise_tails_at_a_starting_term_and_offset(meta: AtomicBuffer) -> None:
    d.initialise_tails(meta, 100, term_id=104, term_offset=512)
    assert d.active_term_count(meta) == 4
    assert d.raw_tail_volatile(meta, 1) == d.pack_tail(104, 512)
    assert [d.raw_tail(meta, i) >> 32 for i in (2, 0)] == [102, 103]


def test_should_read_the_producer_position_from_the_active_tail(meta: AtomicBuffer) -> None:
    d.initialise_tails(meta, 100, term_id=104, term_offset=512)
    assert d.producer_position(meta, 65536, 16, 100) == 4 * 65536 + 512
    d.set_raw_tail(meta, 1, d.pack_tail(104, 70000))  # writers overshot the end of the term
    assert d.producer_position(meta, 65536, 16, 100) == 5 * 65536
    d.initialise_tails(meta, 2**31 - 1, term_id=-(2**31))  # the term id wrapped
    assert d.producer_position(meta, 65536, 16, 2**31 - 1) == 65536


def test_should_let_only_one_racing_writer_rotate(meta: AtomicBuffer) -> None:
    d.initialise_tails(meta, 0)
    d.set_raw_tail(meta, 0, d.pack_tail(0, 70000))  # writers overshot the end
    assert d.rotate_log(meta, 0, 0)
    # a delayed writer that saw the same term count rotates again: nothing changes
    assert not d.rotate_log(meta, 0, 0)
    assert d.active_term_count(meta) == 1
    assert d.raw_tail_volatile(meta, 1) == d.pack_tail(1, 0)


def test_should_not_reset_a_tail_already_in_use(meta: AtomicBuffer) -> None:
    d.initialise_tails(meta, 0)
    d.initialise_tail_with_term_id(meta, 1, 1)
    d.set_raw_tail(meta, 1, d.pack_tail(1, 640))  # another writer rotated and appended
    assert not d.rotate_log(meta, 5, 0)  # a stale count: the CAS of the count fails
    assert d.raw_tail_volatile(meta, 1) == d.pack_tail(1, 640)


def test_should_compare_and_set_tails_and_term_counts(meta: AtomicBuffer) -> None:
    assert d.cas_raw_tail(meta, 2, 0, d.pack_tail(4, 32))
    assert not d.cas_raw_tail(meta, 2, 0, 1)
    assert d.raw_tail_volatile(meta, 2) == d.pack_tail(4, 32)
    assert d.tail_counter_offset(2) == 16
    assert d.cas_active_term_count(meta, 0, 9)
    assert not d.cas_active_term_count(meta, 0, 10)
    d.set_active_term_count_ordered(meta, 11)
    assert d.active_term_count(meta) == 11


def test_should_keep_stream_state_at_its_offsets(meta: AtomicBuffer) -> None:
    d.set_end_of_stream_position(meta, 2**62)
    d.set_is_connected(meta, True)
    d.set_active_transport_count(meta, 3)
    assert d.end_of_stream_position(meta) == 2**62
    assert d.is_connected(meta)
    assert d.active_transport_count(meta) == 3
    assert meta.get_int64(128) == 2**62
    assert (meta.get_int32(136), meta.get_int32(140)) == (1, 3)
    d.set_is_connected(meta, False)
    assert not d.is_connected(meta)


def test_should_flip_the_revoked_byte_without_touching_its_neighbours(meta: AtomicBuffer) -> None:
    meta.put_int8(d.LOG_TETHER_OFFSET, 1)
    meta.put_int8(d.LOG_TYPE_OFFSET, 2)
    meta.put_int16(498, 0x7F7F)
    d.set_is_publication_revoked(meta, True)
    assert d.is_publication_revoked(meta)
    assert meta.get_uint8(496) == 1
    assert (meta.get_uint8(495), meta.get_uint8(497), meta.get_int16(498)) == (1, 2, 0x7F7F)
    d.set_is_publication_revoked(meta, False)
    assert not d.is_publication_revoked(meta)
    assert meta.get_uint8(497) == 2


def test_should_fill_store_and_apply_the_default_header(meta: AtomicBuffer) -> None:
    d.fill_default_header(meta, session_id=-77, stream_id=1001, initial_term_id=42)
    assert meta.get_int32(d.LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET) == 32
    header = d.default_frame_header(meta)
    assert struct.unpack("<iBBHiiiiq", header) == (0, 0, 0xC0, 1, 0, -77, 1001, 42, 0)
    term = AtomicBuffer.allocate(128)
    term.set_memory(0, 128, 0xAB)
    d.apply_default_header(meta, term, 64)
    assert memoryview(term).tobytes()[64:96] == header
    assert memoryview(term).tobytes()[96:] == b"\xab" * 32


def test_should_refuse_a_default_header_of_the_wrong_length(meta: AtomicBuffer) -> None:
    with pytest.raises(ConfigurationError, match="length=31 expected=32"):
        d.store_default_frame_header(meta, bytes(31))
