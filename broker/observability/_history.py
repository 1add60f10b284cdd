"""``History``: the last minutes of rates and lag, sampled for the console's charts.

Caller: its own sampler thread (``start``/``stop``), every ``interval_ms``; the console reads
``series()``. Affects: only its ring of samples (``capacity`` of them: 300 at 1 s is five
minutes). A sample reads the topic meter's totals and each group's total lag, the figures the
metrics collector reads; a rate is the difference of two samples over their time apart.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypedDict

__all__ = [
    "DEFAULT_HISTORY_CAPACITY",
    "DEFAULT_SAMPLE_INTERVAL_MS",
    "History",
    "Sample",
    "Series",
]

_log = logging.getLogger(__name__)

DEFAULT_SAMPLE_INTERVAL_MS: Final = 1_000
DEFAULT_HISTORY_CAPACITY: Final = 300


class Series(TypedDict):
    """The charts' data (JSON-ready): sample times, then one value per time of each line."""

    time_s: list[float]
    rates: dict[str, list[float]]
    lag: dict[str, list[int]]


@dataclass(frozen=True, slots=True)
class Sample:
    """Totals at ``time_s`` (wall clock): messages in and out by topic, lag by group."""

    time_s: float
    messages_in: Mapping[str, int]
    messages_out: Mapping[str, int]
    lag: Mapping[str, int]


class History:
    """Samples of ``read()`` every ``interval_ms``, the last ``capacity`` kept (see module)."""

    def __init__(
        self,
        read: Callable[[], Sample],
        *,
        interval_ms: int = DEFAULT_SAMPLE_INTERVAL_MS,
        capacity: int = DEFAULT_HISTORY_CAPACITY,
    ) -> None:
        if interval_ms <= 0 or capacity < 2:
            raise ValueError(
                f"interval_ms must be > 0 and capacity >= 2: interval_ms={interval_ms} "
                f"capacity={capacity}"
            )
        self._read = read
        self.interval_ms = interval_ms
        self._samples: collections.deque[Sample] = collections.deque(maxlen=capacity)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.sample()
        self._thread = threading.Thread(target=self._run, name="console-history", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_ms / 1000.0):
            try:
                self.sample()
            except Exception:  # a store shutting down under us: the next tick tries again
                _log.exception("console history sample failed")

    def sample(self) -> None:
        """Take one sample now."""
        sample = self._read()
        with self._lock:
            self._samples.append(sample)

    def series(self) -> Series:
        """The charts' data: ``time_s``, then per topic messages/s in and out, and per group
        its lag, one value per interval between samples (JSON-ready)."""
        with self._lock:
            samples = list(self._samples)
        times: list[float] = []
        rates: dict[str, list[float]] = {}
        lags: dict[str, list[int]] = {}
        for index, (before, after) in enumerate(itertools.pairwise(samples)):
            elapsed = max(after.time_s - before.time_s, 1e-3)
            times.append(after.time_s)
            for direction, now, then in (
                ("in", after.messages_in, before.messages_in),
                ("out", after.messages_out, before.messages_out),
            ):
                for topic, total in now.items():
                    line = rates.setdefault(f"{topic} {direction}", [0.0] * index)
                    line.append(round((total - then.get(topic, 0)) / elapsed, 3))
            for group, lag in after.lag.items():
                lags.setdefault(group, [0] * index).append(lag)
            for rate_line in rates.values():  # a topic gone since: 0 from now on
                if len(rate_line) < index + 1:
                    rate_line.append(0.0)
            for lag_line in lags.values():
                if len(lag_line) < index + 1:
                    lag_line.append(0)
        return Series(time_s=times, rates=rates, lag=lags)
