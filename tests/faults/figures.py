"""The fault suite's runs and figures: how many times a scenario runs (once by default, 20 with
``-m faults``), each run's figures written to a file, and their summary per scenario.

Each passing run of a scenario appends one JSON line to the file ``AEROMQ_FAULT_FIGURES``
names (nothing when unset): the scenario, its history's counts (acknowledged, lost, duplicated,
unknown: see ``tests/faults/history.py``) and its failover time (the fault to the first
acknowledged send after it). ``python -m tests.faults.figures FILE`` prints one row per
scenario: runs, the counts summed, and the failover time's p50, p99 and max.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Final

import pytest

from tests.faults.history import CheckResult, Op, OpType, check, recovery_times

__all__ = [
    "CLIENT_PROCESS",
    "FIGURES_ENV",
    "RUNS_ENV",
    "fault_runs",
    "first_ack_after",
    "percentile",
    "record",
    "summary",
    "verdict",
]

FIGURES_ENV: Final = "AEROMQ_FAULT_FIGURES"
RUNS_ENV: Final = "AEROMQ_FAULT_RUNS"
_SELECTED_RUNS: Final = 20


def fault_runs(config: pytest.Config) -> int:
    """Runs of each scenario: 1, or 20 when the run selects ``-m faults`` (``AEROMQ_FAULT_RUNS``
    sets another count then)."""
    expression = config.option.markexpr or ""
    if "faults" not in expression or "not faults" in expression:
        return 1
    return int(os.environ.get(RUNS_ENV, str(_SELECTED_RUNS)))


def record(
    scenario: str,
    run: int,
    result: CheckResult,
    failover_s: float | None,
    client_failover_s: float | None = None,
) -> None:
    """Append a passing run's figures to the file ``AEROMQ_FAULT_FIGURES`` names, if any."""
    path = os.environ.get(FIGURES_ENV)
    if not path:
        return
    figures = {
        "scenario": scenario,
        "run": run,
        "acknowledged": result.stats.get("acknowledged", 0),
        "lost": len(result.lost),
        "duplicated": len(result.duplicated),
        "offset_conflicts": len(result.offset_conflicts),
        "reordered": len(result.reordered),
        "unknown": result.stats.get("unknown", 0),
        "failover_s": failover_s,
        "client_failover_s": client_failover_s,
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(figures) + "\n")


def verdict(
    scenario: str, run: int, ops: tuple[Op, ...], fault: int = 0
) -> tuple[CheckResult, float | None]:
    """Check a finished history: valid (nothing acknowledged lost, no offset given twice, no
    duplicate, no reordering...) with acknowledged sends; record its figures; returns the
    result and the failover time after its ``fault``-th mark (None without it or an ack)."""
    result = check(ops)
    assert result.valid, result.summary()
    assert result.stats["acknowledged"] > 0, result.summary()
    times = recovery_times(ops)
    failover_s = times[fault][1] if len(times) > fault else None
    record(scenario, run, result, failover_s, first_ack_after(ops, fault, CLIENT_PROCESS))
    return result, failover_s


CLIENT_PROCESS: Final = "p1"
"""The sender whose failover is the clients' own (one idempotent producer given every member)."""


def first_ack_after(ops: tuple[Op, ...], fault: int, process: str) -> float | None:
    """Seconds from the ``fault``-th mark to ``process``'s first acknowledged send after it."""
    marks = [op for op in ops if op.f == "mark"]
    if len(marks) <= fault:
        return None
    mark = marks[fault]
    acked = (op for op in ops if op.index > mark.index and op.process == process and op.f == "send")
    first = next((op for op in acked if op.type is OpType.OK), None)
    return None if first is None else (first.time_ns - mark.time_ns) / 1e9


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def summary(path: Path) -> str:
    """One row per scenario of the figures in ``path`` (see module)."""
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            figures = json.loads(line)
            rows[figures["scenario"]].append(figures)
    lines = [
        "| scenario | runs | acked | lost | duplicated | unknown | failover p50 | p99 | max "
        "| client's p50 | p99 | max |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for scenario, runs in rows.items():
        counts = [sum(int(r[k]) for r in runs) for k in ("acknowledged", "lost", "duplicated")]
        unknown = sum(int(r["unknown"]) for r in runs)
        cells = [scenario, str(len(runs)), *map(str, counts), str(unknown)]
        for key in ("failover_s", "client_failover_s"):
            cells += _timing([r[key] for r in runs if r.get(key) is not None])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _timing(times: list[float]) -> list[str]:
    """p50, p99 and max of ``times`` (dashes when none)."""
    if not times:
        return ["-", "-", "-"]
    return [f"{percentile(times, p):.2f} s" for p in (0.5, 0.99)] + [f"{max(times):.2f} s"]


if __name__ == "__main__":
    print(summary(Path(sys.argv[1])))
