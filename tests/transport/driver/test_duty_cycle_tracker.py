"""The duty cycle tracker the conductor, the sender and the receiver share."""

from __future__ import annotations

from aeromq.transport.concurrent import AtomicBuffer, AtomicCounter
from aeromq.transport.concurrent.counters_descriptor import COUNTER_LENGTH
from aeromq.transport.driver.duty_cycle_tracker import DutyCycleStallTracker

MS = 1_000_000


def test_should_keep_the_longest_cycle_and_count_those_over_the_threshold() -> None:
    values = AtomicBuffer.allocate(2 * COUNTER_LENGTH)
    max_cycle_time, exceeded = AtomicCounter(values, 0), AtomicCounter(values, 1)
    tracker = DutyCycleStallTracker(max_cycle_time, exceeded, 10 * MS, now_ns=100 * MS)
    for now_ms, longest, over in ((105, 5, 0), (125, 20, 1), (128, 20, 1), (140, 20, 2)):
        tracker.measure_and_update(now_ms * MS)
        assert (max_cycle_time.get(), exceeded.get()) == (longest * MS, over)
