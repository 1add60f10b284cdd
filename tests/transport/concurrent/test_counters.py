from __future__ import annotations

import struct

import pytest

from aeromq.transport import ConfigurationError, IndexOutOfBoundsError, TransportStateError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.clock import SettableClock
from aeromq.transport.concurrent.counters_descriptor import (
    COUNTER_LENGTH,
    FREE_FOR_REUSE_DEADLINE_OFFSET,
    KEY_OFFSET,
    LABEL_LENGTH_OFFSET,
    LABEL_OFFSET,
    MAX_KEY_LENGTH,
    MAX_LABEL_LENGTH,
    METADATA_LENGTH,
    NOT_FREE_TO_REUSE,
    NULL_COUNTER_ID,
    OWNER_ID_OFFSET,
    RECORD_ALLOCATED,
    RECORD_RECLAIMED,
    RECORD_UNUSED,
    REFERENCE_ID_OFFSET,
    REGISTRATION_ID_OFFSET,
    TYPE_ID_OFFSET,
    VALUE_OFFSET,
)
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.concurrent.counters_reader import CountersReader

# The records as C structs (Aeron's aeron_counter_value_descriptor_t and
# aeron_counter_metadata_descriptor_t), little-endian and packed.
VALUE_RECORD = struct.Struct("<qqqq96x")
METADATA_RECORD = struct.Struct("<iiq112si380s")

COUNTERS = 8


def make_manager(
    clock: SettableClock | None = None, timeout_ms: int = 0, counters: int = COUNTERS
) -> CountersManager:
    metadata = AtomicBuffer.allocate(counters * METADATA_LENGTH)
    values = AtomicBuffer.allocate(counters * COUNTER_LENGTH)
    return CountersManager(metadata, values, clock or SettableClock(), timeout_ms)


def test_should_match_documented_record_lengths_and_offsets() -> None:
    assert VALUE_RECORD.size == COUNTER_LENGTH == 128
    assert METADATA_RECORD.size == METADATA_LENGTH == 512
    assert (VALUE_OFFSET, REGISTRATION_ID_OFFSET, OWNER_ID_OFFSET, REFERENCE_ID_OFFSET) == (
        0,
        8,
        16,
        24,
    )
    assert (TYPE_ID_OFFSET, FREE_FOR_REUSE_DEADLINE_OFFSET, KEY_OFFSET) == (4, 8, 16)
    assert (LABEL_LENGTH_OFFSET, LABEL_OFFSET) == (128, 132)
    assert (MAX_KEY_LENGTH, MAX_LABEL_LENGTH) == (112, 380)
    assert (RECORD_UNUSED, RECORD_ALLOCATED, RECORD_RECLAIMED) == (0, 1, -1)
    assert NOT_FREE_TO_REUSE == 2**63 - 1
    assert NULL_COUNTER_ID == -1


def test_should_write_records_in_aerons_layout_byte_for_byte() -> None:
    manager = make_manager()
    manager.allocate("first", type_id=0)
    counter_id = manager.allocate(
        "sub-pos: 2 1985493803 1001 aeron:ipc @0",
        type_id=4,
        key=struct.pack("<qii", 77, 1985493803, 1001),
        registration_id=77,
        owner_id=5,
        reference_id=9,
    )
    manager.set_counter_value(counter_id, 4096)

    metadata = memoryview(manager.metadata_buffer)
    values = memoryview(manager.values_buffer)
    state, type_id, deadline, key, label_length, label = METADATA_RECORD.unpack_from(
        metadata, counter_id * METADATA_LENGTH
    )
    assert (state, type_id, deadline) == (RECORD_ALLOCATED, 4, NOT_FREE_TO_REUSE)
    assert key == struct.pack("<qii", 77, 1985493803, 1001).ljust(112, b"\0")
    assert label[:label_length] == b"sub-pos: 2 1985493803 1001 aeron:ipc @0"
    assert VALUE_RECORD.unpack_from(values, counter_id * COUNTER_LENGTH) == (4096, 77, 5, 9)
    metadata.release()
    values.release()


def test_should_read_back_every_field_through_the_reader() -> None:
    manager = make_manager()
    counter_id = manager.allocate(
        "label", type_id=7, key=b"\x01\x02", registration_id=11, owner_id=12, reference_id=13
    )
    reader = CountersReader(manager.metadata_buffer, manager.values_buffer)
    manager.set_counter_value(counter_id, -5)
    assert reader.max_counter_id == COUNTERS - 1
    assert reader.get_counter_value(counter_id) == -5
    assert reader.get_counter_state(counter_id) == RECORD_ALLOCATED
    assert reader.get_counter_type_id(counter_id) == 7
    assert reader.get_counter_label(counter_id) == "label"
    assert reader.get_counter_key(counter_id) == b"\x01\x02".ljust(MAX_KEY_LENGTH, b"\0")
    key_buffer = reader.get_counter_key_buffer(counter_id)
    assert (key_buffer.capacity, key_buffer.get_uint8(1)) == (MAX_KEY_LENGTH, 2)
    assert reader.get_counter_registration_id(counter_id) == 11
    assert reader.get_counter_owner_id(counter_id) == 12
    assert reader.get_counter_reference_id(counter_id) == 13
    assert reader.get_free_for_reuse_deadline(counter_id) == NOT_FREE_TO_REUSE
    assert reader.get_counter_state(counter_id + 1) == RECORD_UNUSED


def test_should_set_ids_and_key_after_allocation() -> None:
    manager = make_manager()
    counter_id = manager.allocate("x")
    manager.set_counter_registration_id(counter_id, 21)
    manager.set_counter_owner_id(counter_id, 22)
    manager.set_counter_reference_id(counter_id, 23)
    manager.set_counter_key(counter_id, lambda key: key.put_int64(0, 99))
    assert manager.get_counter_registration_id(counter_id) == 21
    assert manager.get_counter_owner_id(counter_id) == 22
    assert manager.get_counter_reference_id(counter_id) == 23
    assert manager.get_counter_key(counter_id)[:8] == struct.pack("<q", 99)
    manager.set_counter_key(counter_id, b"\x05")
    assert manager.get_counter_key(counter_id) == b"\x05".ljust(MAX_KEY_LENGTH, b"\0")


def test_should_write_key_through_a_key_writer_of_exact_key_length() -> None:
    manager = make_manager()
    seen: list[int] = []

    def write_key(key: AtomicBuffer) -> None:
        seen.append(key.capacity)
        key.put_int64(0, 123)
        key.put_int32(8, 456)

    counter_id = manager.allocate("with key", type_id=3, key=write_key)
    assert seen == [MAX_KEY_LENGTH]
    assert struct.unpack_from("<qi", manager.get_counter_key(counter_id)) == (123, 456)


def test_should_not_take_an_id_when_the_key_writer_raises() -> None:
    manager = make_manager()

    def failing_key(key: AtomicBuffer) -> None:
        key.put_int64(0, -1)
        raise RuntimeError("key writer failed")

    with pytest.raises(RuntimeError, match="key writer failed"):
        manager.allocate("bad", key=failing_key)
    assert manager.available_counter_ids() == COUNTERS
    counter_id = manager.allocate("good")
    assert counter_id == 0
    assert manager.get_counter_key(counter_id) == bytes(MAX_KEY_LENGTH)


def test_should_reject_a_key_longer_than_the_key_area() -> None:
    manager = make_manager()
    with pytest.raises(ConfigurationError, match="key_length=113") as info:
        manager.allocate("x", key=bytes(113))
    assert info.value.max_key_length == MAX_KEY_LENGTH
    counter_id = manager.allocate("x", key=bytes(112))
    with pytest.raises(ConfigurationError, match="key_length=200"):
        manager.set_counter_key(counter_id, bytes(200))


def test_should_truncate_long_labels_at_a_character_boundary() -> None:
    manager = make_manager()
    ascii_id = manager.allocate("a" * 500)
    assert manager.get_counter_label(ascii_id) == "a" * MAX_LABEL_LENGTH
    # 379 ASCII bytes then a 2-byte character: the character does not fit and is dropped.
    mixed_id = manager.allocate("b" * 379 + "é")
    assert manager.get_counter_label(mixed_id) == "b" * 379
    unicode_id = manager.allocate("pos: ünïcode")
    assert manager.get_counter_label(unicode_id) == "pos: ünïcode"


def test_should_replace_and_append_to_labels() -> None:
    manager = make_manager()
    counter_id = manager.allocate("pub-pos (sampled): 4")
    manager.set_counter_label(counter_id, "snd-pos: 4")
    assert manager.get_counter_label(counter_id) == "snd-pos: 4"
    manager.append_to_label(counter_id, " aeron:udp?endpoint=localhost:40123")
    assert manager.get_counter_label(counter_id) == "snd-pos: 4 aeron:udp?endpoint=localhost:40123"
    manager.append_to_label(counter_id, "z" * 1000)
    label = manager.get_counter_label(counter_id)
    assert len(label) == MAX_LABEL_LENGTH
    assert label.endswith("z")


def test_should_iterate_allocated_counters_and_skip_freed_ones() -> None:
    manager = make_manager()
    ids = [manager.allocate(f"c{i}", type_id=i, key=bytes([i])) for i in range(4)]
    for counter_id in ids:
        manager.set_counter_value(counter_id, counter_id * 10)
    manager.free(ids[1])
    seen: list[tuple[int, int, int, str]] = []
    manager.for_each(
        lambda counter_id, type_id, key, label: seen.append(
            (counter_id, type_id, key.get_uint8(0), label)
        )
    )
    assert seen == [(0, 0, 0, "c0"), (2, 2, 2, "c2"), (3, 3, 3, "c3")]
    values: list[tuple[int, int, str]] = []
    manager.for_each_counter(
        lambda value, counter_id, label: values.append((value, counter_id, label))
    )
    assert values == [(0, 0, "c0"), (20, 2, "c2"), (30, 3, "c3")]


def test_should_find_counters_by_type_and_registration_id() -> None:
    manager = make_manager()
    manager.allocate("a", type_id=1, registration_id=100)
    b = manager.allocate("b", type_id=2, registration_id=100)
    c = manager.allocate("c", type_id=2, registration_id=200)
    assert manager.find_by_type_id_and_registration_id(2, 100) == b
    assert manager.find_by_type_id_and_registration_id(2, 200) == c
    assert manager.find_by_type_id_and_registration_id(3, 100) == NULL_COUNTER_ID
    assert manager.find_by_registration_id(100) == 0
    manager.free(c)
    assert manager.find_by_type_id_and_registration_id(2, 200) == NULL_COUNTER_ID
    assert manager.find_by_registration_id(999) == NULL_COUNTER_ID


def test_should_not_reuse_a_freed_id_before_its_deadline() -> None:
    clock = SettableClock()
    clock.set_time_ms(1_000)
    manager = make_manager(clock, timeout_ms=500, counters=3)
    first = manager.allocate("first")
    manager.allocate("second")
    manager.free(first)
    assert manager.get_counter_state(first) == RECORD_RECLAIMED
    assert manager.get_free_for_reuse_deadline(first) == 1_500
    assert manager.available_counter_ids() == 1

    assert manager.allocate("third") == 2
    assert manager.available_counter_ids() == 0
    clock.set_time_ms(1_499)
    with pytest.raises(TransportStateError, match="buffers are full") as info:
        manager.allocate("too early")
    assert info.value.capacity == 3

    clock.set_time_ms(1_500)
    assert manager.available_counter_ids() == 1
    assert manager.allocate("reused") == first
    assert manager.get_counter_label(first) == "reused"
    assert manager.get_free_for_reuse_deadline(first) == NOT_FREE_TO_REUSE


def test_should_reuse_freed_ids_oldest_first_and_clear_their_records() -> None:
    clock = SettableClock()
    manager = make_manager(clock, timeout_ms=10, counters=4)
    ids = [
        manager.allocate(
            f"c{i}", key=b"\xff" * 8, registration_id=50 + i, owner_id=7, reference_id=8
        )
        for i in range(4)
    ]
    for counter_id in ids:
        manager.set_counter_value(counter_id, 1234)
    manager.free(ids[2])
    clock.advance_ms(5)
    manager.free(ids[0])
    assert manager.get_counter_key(ids[2]) == bytes(MAX_KEY_LENGTH)

    clock.advance_ms(5)  # ids[2] is due, ids[0] is not yet
    reused = manager.allocate("again")
    assert reused == ids[2]
    assert manager.get_counter_value(reused) == 0
    assert manager.get_counter_registration_id(reused) == 0
    assert manager.get_counter_owner_id(reused) == 0
    assert manager.get_counter_reference_id(reused) == 0
    assert manager.get_counter_key(reused) == bytes(MAX_KEY_LENGTH)
    clock.advance_ms(5)
    assert manager.allocate("again too") == ids[0]


def test_should_reuse_at_once_with_a_zero_timeout() -> None:
    manager = make_manager(counters=1)
    counter_id = manager.allocate("only")
    manager.free(counter_id)
    assert manager.allocate("only again") == counter_id


def test_should_raise_typed_errors_for_bad_counter_ids() -> None:
    manager = make_manager()
    for bad_id in (-1, COUNTERS, 1 << 20):
        with pytest.raises(IndexOutOfBoundsError, match=f"counter_id={bad_id}") as info:
            manager.get_counter_value(bad_id)
        assert info.value.max_counter_id == COUNTERS - 1
    for call in (
        manager.get_counter_label,
        manager.get_counter_state,
        manager.get_counter_type_id,
        manager.get_counter_key,
        manager.get_counter_registration_id,
        manager.get_counter_owner_id,
        manager.get_counter_reference_id,
        manager.get_free_for_reuse_deadline,
        manager.free,
    ):
        with pytest.raises(IndexOutOfBoundsError, match="max_counter_id=7"):
            call(COUNTERS)
    with pytest.raises(IndexOutOfBoundsError):
        manager.set_counter_value(-1, 0)


def test_should_refuse_to_free_a_counter_that_is_not_allocated() -> None:
    manager = make_manager()
    counter_id = manager.allocate("x")
    manager.free(counter_id)
    with pytest.raises(TransportStateError, match="state=-1"):
        manager.free(counter_id)
    with pytest.raises(TransportStateError, match="state=0"):
        manager.free(counter_id + 1)


def test_should_raise_when_full_with_the_capacity() -> None:
    manager = make_manager(counters=2)
    manager.allocate("a")
    manager.new_counter("b")
    assert manager.available_counter_ids() == 0
    with pytest.raises(TransportStateError, match="capacity=2"):
        manager.allocate("c")


def test_should_reject_a_metadata_buffer_smaller_than_four_times_the_values() -> None:
    values = AtomicBuffer.allocate(4 * COUNTER_LENGTH)
    with pytest.raises(ConfigurationError, match="metadata_length=1536"):
        CountersManager(AtomicBuffer.allocate(3 * METADATA_LENGTH), values)
    with pytest.raises(ConfigurationError, match="metadata_length=1536"):
        CountersReader(AtomicBuffer.allocate(3 * METADATA_LENGTH), values)
    with pytest.raises(ConfigurationError, match="free_to_reuse_timeout_ms=-1"):
        CountersManager(AtomicBuffer.allocate(4 * METADATA_LENGTH), values, None, -1)


def test_should_reject_misaligned_buffers() -> None:
    base = AtomicBuffer.allocate(8 * METADATA_LENGTH)
    with pytest.raises(ConfigurationError, match="aligned"):
        CountersReader(base.slice(4, 4 * METADATA_LENGTH), AtomicBuffer.allocate(COUNTER_LENGTH))


def test_should_free_through_a_new_counter_on_close() -> None:
    manager = make_manager()
    counter = manager.new_counter("errors", type_id=0)
    counter.increment()
    assert manager.get_counter_value(counter.id) == 1
    with counter:
        pass
    assert counter.is_closed
    assert manager.get_counter_state(counter.id) == RECORD_RECLAIMED
    counter.close()  # idempotent: does not free twice
    assert manager.available_counter_ids() == COUNTERS


def test_should_default_to_the_system_clock_for_deadlines() -> None:
    metadata = AtomicBuffer.allocate(METADATA_LENGTH)
    values = AtomicBuffer.allocate(COUNTER_LENGTH)
    manager = CountersManager(metadata, values, free_to_reuse_timeout_ms=60_000)
    counter_id = manager.allocate("x")
    manager.free(counter_id)
    with pytest.raises(TransportStateError):
        manager.allocate("y")
    assert manager.get_free_for_reuse_deadline(counter_id) > 1_600_000_000_000 + 60_000
