from __future__ import annotations

import threading

import pytest

from aeromq.transport import IndexOutOfBoundsError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.counters_descriptor import COUNTER_LENGTH, METADATA_LENGTH
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.concurrent.position import Position, ReadablePosition


@pytest.fixture
def values() -> AtomicBuffer:
    return AtomicBuffer.allocate(4 * COUNTER_LENGTH)


def test_should_run_every_atomic_counter_operation(values: AtomicBuffer) -> None:
    counter = AtomicCounter(values, 1)
    assert counter.id == 1
    assert counter.get() == 0
    assert counter.increment() == 0
    assert counter.increment_ordered() == 1
    assert counter.get() == 2
    assert counter.get_and_add(10) == 2
    assert counter.add_ordered(-2) == 12
    assert counter.get_weak() == 10
    counter.set(100)
    assert values.get_int64(COUNTER_LENGTH) == 100
    counter.set_ordered(200)
    assert counter.get() == 200
    counter.set_weak(300)
    assert counter.get() == 300
    assert counter.get_and_set(7) == 300
    assert counter.compare_and_set(7, 8)
    assert not counter.compare_and_set(7, 9)
    assert counter.get() == 8
    assert counter.propose_max_ordered(20)
    assert not counter.propose_max_ordered(19)
    assert counter.get() == 20
    # Only its own 8 bytes are touched.
    assert values.get_int64(0) == 0
    assert values.get_int64(2 * COUNTER_LENGTH) == 0
    assert "value=20" in repr(counter)


def test_should_count_exactly_with_many_threads_incrementing(values: AtomicBuffer) -> None:
    counter = AtomicCounter(values, 0)
    per_thread = 20_000

    def work() -> None:
        increment = counter.increment
        for _ in range(per_thread):
            increment()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert counter.get() == 4 * per_thread


def test_should_reject_counter_ids_outside_the_values_buffer(values: AtomicBuffer) -> None:
    for cls in (AtomicCounter, Position, ReadablePosition):
        with pytest.raises(IndexOutOfBoundsError, match="counter_id=4") as info:
            cls(values, 4)
        assert info.value.max_counter_id == 3
        with pytest.raises(IndexOutOfBoundsError, match="counter_id=-1"):
            cls(values, -1)


def test_should_run_every_position_operation(values: AtomicBuffer) -> None:
    position = Position(values, 2)
    reader = ReadablePosition(values, 2)
    assert (position.id, reader.id) == (2, 2)
    position.set(64)
    assert position.get() == 64
    assert reader.get_volatile() == 64
    position.set_ordered(128)
    assert position.get_volatile() == 128
    assert position.propose_max(256)
    assert not position.propose_max(255)
    assert position.propose_max_ordered(512)
    assert not position.propose_max_ordered(512)
    assert reader.get_volatile() == 512
    assert values.get_int64(2 * COUNTER_LENGTH) == 512
    assert "value=512" in repr(position)


def test_should_free_positions_through_the_manager_once_on_close() -> None:
    manager = CountersManager(
        AtomicBuffer.allocate(2 * METADATA_LENGTH), AtomicBuffer.allocate(2 * COUNTER_LENGTH)
    )
    position = Position(manager.values_buffer, manager.allocate("sub-pos"), manager)
    readable = ReadablePosition(manager.values_buffer, manager.allocate("pub-lmt"), manager)
    position.close()
    position.close()
    readable.close()
    assert position.is_closed and readable.is_closed
    assert "closed" in repr(position)
    assert manager.available_counter_ids() == 2


def test_should_leave_the_counter_allocated_when_closing_without_a_manager(
    values: AtomicBuffer,
) -> None:
    counter = AtomicCounter(values, 0)
    counter.set(5)
    counter.close()
    assert counter.is_closed
    assert counter.get() == 5
    assert repr(counter) == "AtomicCounter(id=0, closed)"
