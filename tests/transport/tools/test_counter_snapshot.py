"""``read_counters``: what a snapshot copies out of the counters buffers."""

from __future__ import annotations

from aeromq.transport.concurrent import AtomicBuffer, CountersManager, SettableClock
from aeromq.transport.concurrent.counters_descriptor import MAX_KEY_LENGTH
from aeromq.transport.tools import CounterSnapshot, read_counters


def manager() -> CountersManager:
    values = AtomicBuffer.allocate(16 * 128)
    return CountersManager(AtomicBuffer.allocate(16 * 512), values, SettableClock())


def test_should_copy_each_allocated_counter_with_its_ids_and_key() -> None:
    counters = manager()
    first = counters.allocate("first", 3, b"\x01\x02", registration_id=10, owner_id=11)
    counters.set_counter_value(first, -42)
    counters.set_counter_reference_id(first, 12)
    assert read_counters(counters) == [
        CounterSnapshot(0, 3, -42, "first", b"\x01\x02".ljust(MAX_KEY_LENGTH, b"\0"), 10, 11, 12)
    ]


def test_should_skip_freed_counters_and_stop_at_the_first_never_used() -> None:
    counters = manager()
    for label in ("a", "b", "c"):
        counters.allocate(label)
    counters.free(1)
    assert [(c.counter_id, c.label) for c in read_counters(counters)] == [(0, "a"), (2, "c")]
    counters.free(0)
    counters.free(2)
    assert read_counters(counters) == []
    assert read_counters(manager()) == []
