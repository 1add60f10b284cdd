"""Baselines a suite measures only where their server and client are installed: each one's
rows, or one row saying why it was skipped (``baseline:redis-streams skipped: redis-server not
installed ...``), so a run without them still measures aeromq and says what it left out.
``python -m bench SUITE --baselines LABEL[,LABEL...]`` (environment :data:`BASELINES_ENV`, so
the suites of ``all`` inherit it) measures only the baselines named; the others get a
``skipped: not selected`` row, and a target computed from one of them is not measured.

Used by the broker, consumer and latency suites.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from bench._harness import Result

__all__ = ["BASELINES_ENV", "Baseline", "baseline_rows", "selected_baselines"]

BASELINES_ENV: Final = "AEROMQ_BENCH_BASELINES"
"""The baselines to measure, comma-separated labels (unset: every one)."""

Baseline = tuple[str, str | None, Callable[[], Iterable[Result]]]
"""A baseline's label (``redis-streams``), why it cannot run here (None: it can), and its rows
(called only when it can run)."""


def baseline_rows(*baselines: Baseline) -> Iterator[Result]:
    """Each baseline's rows in turn, or its one ``skipped`` row."""
    selected = selected_baselines()
    for label, missing, rows in baselines:
        if selected is not None and label not in selected:
            missing = f"not selected ({BASELINES_ENV}={','.join(sorted(selected))})"
        if missing is not None:
            yield Result(f"baseline:{label} skipped: {missing}")
        else:
            yield from rows()


def selected_baselines() -> frozenset[str] | None:
    """The labels :data:`BASELINES_ENV` selects, or None when it is unset (every baseline)."""
    value = os.environ.get(BASELINES_ENV)
    if value is None:
        return None
    return frozenset(label.strip() for label in value.split(",") if label.strip())
