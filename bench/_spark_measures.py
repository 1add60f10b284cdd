"""What the cases of ``bench spark`` measure and report, reads and writes alike: the CPU of a
process tree, a rate row with its CPU per row, and the median of a case's runs.

Caller: ``bench/suites/spark.py`` (the reads, the stream) and ``bench/_spark_writes.py`` (the
writes).
"""

from __future__ import annotations

import os

from bench._harness import Result
from bench.suites.broker import BODY_LENGTH

__all__ = ["BODY_LENGTH", "median_run", "rate_row", "tree_cpu_s"]


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and all its descendants so far, those already
    reaped included (from /proc)."""
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(value) for value in fields[11:15])
    tree: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        tree.add(current)
        todo.extend(child for child, parent in parents.items() if parent == current)
    return sum(times.get(member, 0) for member in tree) / os.sysconf("SC_CLK_TCK")


def rate_row(name: str, rows: int, seconds: float, cpu_s: float, partitions: int) -> Result:
    """A case's row: ``rows`` in ``seconds`` over ``partitions``, using ``cpu_s`` of CPU."""
    rate = rows / seconds
    return Result(
        name,
        msgs_per_s=rate,
        MB_per_s=rate * BODY_LENGTH / 1e6,
        extra={"rows_per_s": round(rate, 1), "rows": rows, "partitions": partitions,
               "seconds": round(seconds, 3), "cpu_us_per_row": round(cpu_s * 1e6 / rows, 3)},
    )  # fmt: skip


def median_run(runs: list[Result]) -> Result:
    """The run of median rate (the lower of the two middle ones for an even count), with
    every run's rate and failure; the first failure when none was measured."""
    measured = sorted((r for r in runs if r.error is None), key=lambda r: r.msgs_per_s or 0.0)
    if not measured:
        return runs[0]
    row = measured[(len(measured) - 1) // 2]
    if len(runs) > 1:
        row.extra["runs_rows_per_s"] = [round(r.msgs_per_s or 0.0) for r in runs if r.error is None]
        failed = [r.error for r in runs if r.error is not None]
        if failed:
            row.extra["failed_runs"] = failed
    return row
