"""``PYTHONPATH=. python PATH/threadcpu.py SECONDS PID...`` (from the repository root): each
thread's CPU and voluntary context switches (its wake-ups) over SECONDS, the busiest first, from
``bench._thread_stats.sample`` (``/proc``), thread by thread rather than summed by name as ``bench
threads`` does. Run beside a paced run (``../../2026-12-02/raw/ab.py D 1 25``: one message a
second, so what is measured is what a producer and a consumer connected to a broker cost while
nearly idle)."""

from __future__ import annotations

import sys
import time

from bench._thread_stats import sample


def main() -> None:
    seconds, pids = float(sys.argv[1]), [int(pid) for pid in sys.argv[2:]]
    before = {pid: sample(pid) for pid in pids}
    time.sleep(seconds)
    rows = []
    for pid in pids:
        for tid, (name, cpu_ns, switches) in sample(pid).items():
            then = before[pid].get(tid)
            if then is not None:
                rows.append((cpu_ns - then[1], switches - then[2], pid, name))
    rows.sort(reverse=True)
    for cpu_ns, switches, pid, name in rows:
        if cpu_ns <= 0:
            continue
        share = cpu_ns / seconds / 1e7  # % of a core
        per_wake_us = cpu_ns / max(switches, 1) / 1e3
        print(
            f"{pid} {name:18s} {share:6.3f}% of a core, {switches / seconds:6.1f} wake-ups/s, "
            f"{per_wake_us:6.1f} us a wake-up"
        )


if __name__ == "__main__":
    main()
