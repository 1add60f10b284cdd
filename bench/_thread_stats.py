"""The CPU and the wake-ups of every thread of a process, from ``/proc``, and their difference
over a run, a message at a time, summed by thread name.

A thread's CPU is the first field of ``/proc/PID/task/TID/schedstat`` (nanoseconds on a core,
user and system); its wake-ups are ``voluntary_ctxt_switches`` of its ``status`` (each time it
went to sleep, and so was woken). Both hardly depend on the machine's load, unlike latencies.
aeromq's threads name themselves in the kernel (``comm``: ``broker-sessions``, the media
driver's agents, a session's poller), so the rows say which part of a process the cost is in.

Used by ``bench threads`` (``bench/suites/threads.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["ThreadCost", "ThreadSample", "costs", "sample"]

ThreadSample = dict[int, tuple[str, int, int]]
"""Thread id -> (name, CPU ns so far, voluntary context switches so far)."""


@dataclass(frozen=True)
class ThreadCost:
    """One thread name's share of a run: CPU (us) and wake-ups a message."""

    name: str
    cpu_us_per_msg: float
    wakeups_per_msg: float


def sample(pid: int) -> ThreadSample:
    """Every thread of ``pid`` now (a thread that ends while read is left out)."""
    threads: ThreadSample = {}
    root = f"/proc/{pid}/task"
    for tid in os.listdir(root):
        try:
            with open(f"{root}/{tid}/comm", encoding="utf-8") as comm:
                name = comm.read().strip()
            with open(f"{root}/{tid}/schedstat", encoding="ascii") as schedstat:
                cpu_ns = int(schedstat.read().split()[0])
            with open(f"{root}/{tid}/status", encoding="utf-8") as status:
                switches = next(
                    int(line.split()[1])
                    for line in status
                    if line.startswith("voluntary_ctxt_switches:")
                )
        except (OSError, StopIteration):
            continue
        threads[int(tid)] = (name, cpu_ns, switches)
    return threads


def costs(before: ThreadSample, after: ThreadSample, messages: int) -> list[ThreadCost]:
    """What each thread name spent between the samples, a message (threads started meanwhile
    count from zero), most CPU first; the process's total is the sum."""
    by_name: dict[str, list[int]] = {}
    for tid, (name, cpu_ns, switches) in after.items():
        _, cpu_then, switches_then = before.get(tid, (name, 0, 0))
        total = by_name.setdefault(name, [0, 0])
        total[0] += cpu_ns - cpu_then
        total[1] += switches - switches_then
    count = max(1, messages)
    rows = [
        ThreadCost(name, cpu_ns / 1_000 / count, switches / count)
        for name, (cpu_ns, switches) in by_name.items()
    ]
    return sorted(rows, key=lambda row: -row.cpu_us_per_msg)
