"""``python idlepull.py TIMEHIST``: from ``perf sched timehist --state`` output, every wait for
a CPU (its ``sch delay``) of the latency run's threads (``python``, ``broker-sessions``), by
length, with how much of it the other CPU sat idle; then, for the waits over 1 ms, what ran on
the waiting thread's CPU and on the other one meanwhile. Two CPUs (0 and 1)."""

from __future__ import annotations

import bisect
import sys
from collections import defaultdict
from pathlib import Path

Run = tuple[float, float, str]  # start s, end s, task
Wait = tuple[str, int, float, float]  # task, CPU, from s, to s

_BUCKETS = ((1e-4, "<0.1ms"), (5e-4, "0.1-0.5ms"), (2e-3, "0.5-2ms"), (float("inf"), ">2ms"))


def _read(path: Path) -> tuple[dict[int, list[Run]], list[Wait]]:
    runs: dict[int, list[Run]] = defaultdict(list)
    waits: list[Wait] = []
    for line in path.read_text().splitlines()[3:]:
        parts = line.split()
        if len(parts) < 7 or not parts[1].startswith("["):
            continue
        try:
            end = float(parts[0])
            cpu = int(parts[1][1:-1])
            run = float(parts[-2]) / 1e3
            delay = float(parts[-3]) / 1e3
        except ValueError:  # a wake-up or migration line, not a switch
            continue
        task = " ".join(parts[2:-4])
        start = end - run
        runs[cpu].append((start, end, task))
        if delay > 0 and ("python" in task or "broker-sessions" in task):
            waits.append((task, cpu, start - delay, start))
    for cpu_runs in runs.values():
        cpu_runs.sort()
    return runs, waits


def _idle(idle: list[tuple[float, float]], start: float, end: float) -> float:
    total = 0.0
    at = max(0, bisect.bisect_left(idle, (start, start)) - 1)
    while at < len(idle) and idle[at][0] < end:
        total += max(0.0, min(idle[at][1], end) - max(idle[at][0], start))
        at += 1
    return total


def _who_ran(runs: list[Run], start: float, end: float) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for run_start, run_end, task in runs:
        if run_end > start and run_start < end:
            out[task.split("[")[0]] += min(run_end, end) - max(run_start, start)
    return out


def main() -> None:
    runs, waits = _read(Path(sys.argv[1]))
    idle = {
        cpu: [(s, e) for s, e, task in r if task.startswith("<idle>")] for cpu, r in runs.items()
    }
    buckets: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    same: dict[str, float] = defaultdict(float)
    other: dict[str, float] = defaultdict(float)
    for _task, cpu, start, end in waits:
        length = end - start
        idle_other = _idle(idle.get(1 - cpu, []), start, end)
        label = next(name for bound, name in _BUCKETS if length < bound)
        bucket = buckets[label]
        bucket[0] += 1
        bucket[1] += length
        bucket[2] += idle_other
        if length >= 1e-3:
            for task, seconds in _who_ran(runs[cpu], start, end).items():
                same[task] += seconds
            for task, seconds in _who_ran(runs.get(1 - cpu, []), start, end).items():
                other[task] += seconds
    for _bound, label in _BUCKETS:
        count, total, idle_other = buckets[label]
        if count:
            print(
                f"{label:10s} {int(count):7d} waits, {total * 1e3:8.1f} ms, the other CPU idle "
                f"{idle_other * 1e3:7.1f} ms ({100 * idle_other / total:.0f}%)"
            )
    for title, table in (("the waiter's CPU", same), ("the other CPU", other)):
        top = sorted(table.items(), key=lambda item: -item[1])[:8]
        print(f"waits over 1 ms, on {title}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in top))


if __name__ == "__main__":
    main()
