"""``LatencyHistogram``: durations counted into fixed buckets, cheap enough for once per batch.

The broker's per-topic produce and pull latencies, the store's flush latency and the clients'
send and pull latencies all keep one. An observation is a ``bisect`` and two additions under a
lock, with no allocation; whoever exports the figures (a Prometheus collector, ``metrics()``)
reads a :class:`LatencySnapshot` at its own pace. No I/O, no dependency: the exposition format
is the exporter's business.

Buckets are upper bounds in seconds, Prometheus style: an observation counts in the first
bucket whose bound is at or above it, and in none when it is above them all (the ``+Inf``
bucket is ``count``).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_LATENCY_BUCKETS_S", "LatencyHistogram", "LatencySnapshot"]

DEFAULT_LATENCY_BUCKETS_S: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
"""100 us to 30 s: a local append or pull up to a long poll's whole wait."""

_NS_PER_S: Final = 1e9


@dataclass(frozen=True, slots=True)
class LatencySnapshot:
    """A histogram's figures at one moment: ``bucket_counts[i]`` observations at or below
    ``bounds_s[i]`` and above the bound before (not cumulative), their ``count`` and
    ``sum_s``."""

    bounds_s: tuple[float, ...]
    bucket_counts: tuple[int, ...]
    count: int
    sum_s: float

    def cumulative(self) -> list[tuple[str, int]]:
        """``(upper bound, observations at or below it)`` pairs ending with ``+Inf``: the
        buckets of a Prometheus histogram."""
        pairs: list[tuple[str, int]] = []
        running = 0
        for bound, count in zip(self.bounds_s, self.bucket_counts, strict=True):
            running += count
            pairs.append((repr(bound), running))
        pairs.append(("+Inf", self.count))
        return pairs

    @property
    def mean_s(self) -> float:
        """The mean duration (0.0 before the first observation)."""
        return self.sum_s / self.count if self.count else 0.0


class LatencyHistogram:
    """Counts durations into ``bounds_s`` (sorted, positive seconds); thread-safe."""

    __slots__ = ("_bounds_ns", "_counts", "_lock", "_sum_ns", "_total", "bounds_s")

    def __init__(self, bounds_s: Sequence[float] = DEFAULT_LATENCY_BUCKETS_S) -> None:
        bounds = tuple(float(b) for b in bounds_s)
        if not bounds or any(b <= 0 for b in bounds) or list(bounds) != sorted(set(bounds)):
            raise ValueError(f"bounds_s must be increasing positive seconds: bounds_s={bounds!r}")
        self.bounds_s = bounds
        self._bounds_ns = [int(b * _NS_PER_S) for b in bounds]
        self._counts = [0] * (len(bounds) + 1)  # the last one: above every bound
        self._sum_ns = 0
        self._total = 0
        self._lock = threading.Lock()

    def observe_ns(self, duration_ns: int) -> None:
        """Count one duration of ``duration_ns`` nanoseconds (negative counts as 0)."""
        duration_ns = max(0, duration_ns)
        index = bisect.bisect_left(self._bounds_ns, duration_ns)
        with self._lock:
            self._counts[index] += 1
            self._sum_ns += duration_ns
            self._total += 1

    def snapshot(self) -> LatencySnapshot:
        """The figures counted so far, copied under the lock (the counts are never reset)."""
        with self._lock:
            counts = tuple(self._counts[:-1])
            total, sum_ns = self._total, self._sum_ns
        return LatencySnapshot(self.bounds_s, counts, total, sum_ns / _NS_PER_S)
