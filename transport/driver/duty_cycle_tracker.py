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
    """Tracks one agent's duty cycle times (see module). The agent's thread only.

    A cycle no longer than :attr:`watch_ns` (the longest so far, or the threshold if that is
    shorter) changes no counter, and :meth:`measure_and_update` compares and returns: the
    counters are written only for a new longest cycle or one over the threshold.
    """

    __slots__ = (
        "_cycle_threshold_ns",
        "_last_ns",
        "_max_cycle_ns",
        "_max_cycle_time",
        "_threshold_exceeded",
        "watch_ns",
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
        self._max_cycle_ns = 0
        self._last_ns = now_ns
        """When the last cycle began (the clock's reading the agent passed)."""
        self.watch_ns = 0
        """A cycle longer than this changes a counter (see class)."""

    def measure_and_update(self, now_ns: int) -> None:
        """A cycle begins at ``now_ns``: measure the one that ended (see module)."""
        cycle_ns = now_ns - self._last_ns
        self._last_ns = now_ns
        if cycle_ns > self.watch_ns:
            self._on_long_cycle(cycle_ns)

    def _on_long_cycle(self, cycle_ns: int) -> None:
        """A cycle of ``cycle_ns`` ended, longer than :attr:`watch_ns`: a new longest one is
        written, one over the threshold counted."""
        if cycle_ns > self._max_cycle_ns:
            self._max_cycle_ns = cycle_ns
            self._max_cycle_time.set_ordered(cycle_ns)
        threshold_ns = self._cycle_threshold_ns
        if cycle_ns > threshold_ns:
            self._threshold_exceeded.increment_ordered()
        max_cycle_ns = self._max_cycle_ns
        self.watch_ns = max_cycle_ns if max_cycle_ns < threshold_ns else threshold_ns
