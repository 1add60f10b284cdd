"""``DutyCycleStallTracker``: an agent's longest duty cycle and the cycles over a threshold.

Aeron's ``DutyCycleStallTracker``, for the conductor, the sender and the receiver: each duty
cycle starts with :meth:`~DutyCycleStallTracker.measure_and_update`, which takes the time since
the last cycle began; a new longest one is written to the agent's ``... max cycle time`` counter
(ns), and one longer than ``cycle_threshold_ns`` counts once on its ``... cycle time threshold
exceeded`` counter. No I/O: the caller passes the clock's reading.
"""

from __future__ import annotations

from aeromq.transport.concurrent.atomic_counter import AtomicCounter

__all__ = ["DutyCycleStallTracker"]


class DutyCycleStallTracker:
    """Tracks one agent's duty cycle times (see module). The agent's thread only."""

    __slots__ = (
        "_cycle_threshold_ns",
        "_max_cycle_ns",
        "_max_cycle_time",
        "_threshold_exceeded",
        "_time_of_last_update_ns",
    )

    def __init__(
        self,
        max_cycle_time: AtomicCounter,
        threshold_exceeded: AtomicCounter,
        cycle_threshold_ns: int,
        now_ns: int,
    ) -> None:
        self._max_cycle_time = max_cycle_time
        self._threshold_exceeded = threshold_exceeded
        self._cycle_threshold_ns = cycle_threshold_ns
        self._time_of_last_update_ns = now_ns
        self._max_cycle_ns = 0

    def measure_and_update(self, now_ns: int) -> None:
        """A cycle begins at ``now_ns``: measure the one that ended (see module)."""
        cycle_ns = now_ns - self._time_of_last_update_ns
        self._time_of_last_update_ns = now_ns
        if cycle_ns > self._max_cycle_ns:
            self._max_cycle_ns = cycle_ns
            self._max_cycle_time.set_ordered(cycle_ns)
        if cycle_ns > self._cycle_threshold_ns:
            self._threshold_exceeded.increment_ordered()
