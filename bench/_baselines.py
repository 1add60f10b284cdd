"""Baselines a suite measures only where their server and client are installed: each one's
rows, or one row saying why it was skipped (``baseline:redis-streams skipped: redis-server not
installed ...``), so a run without them still measures aeromq and says what it left out.

Used by the broker, consumer and latency suites.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from bench._harness import Result

__all__ = ["Baseline", "baseline_rows"]

Baseline = tuple[str, str | None, Callable[[], Iterable[Result]]]
"""A baseline's label (``redis-streams``), why it cannot run here (None: it can), and its rows
(called only when it can run)."""


def baseline_rows(*baselines: Baseline) -> Iterator[Result]:
    """Each baseline's rows in turn, or its one ``skipped`` row."""
    for label, missing, rows in baselines:
        if missing is not None:
            yield Result(f"baseline:{label} skipped: {missing}")
        else:
            yield from rows()
