"""CPU time of other processes, read from ``/proc`` in nanoseconds, over a window this process
marks: how much of a core each process of a latency run used, and what that is per message.

:func:`cpu_ns` sums ``/proc/PID/task/*/schedstat`` (the scheduler's run time of every live
thread, in ns; ``/proc/PID/stat``'s user + system time comes in 10 ms ticks, too coarse for an
idle broker or a producer at 10 msgs/s). A thread that ends inside a window takes its time with
it: the processes measured here keep their threads for the whole run.

Used by the latency suite (:mod:`bench.suites.latency`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from aeromq.transport.util import process_cpu_s

__all__ = ["CpuWindow", "cpu_ns"]


def cpu_ns(pid: int) -> int:
    """Run time so far of every live thread of process ``pid``, in ns (from the 10 ms ticks of
    ``/proc/PID/stat`` where schedstat is missing; 0 when the process is gone)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as stat:
                total += int(stat.read().split()[0])
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        except (OSError, ValueError, IndexError):  # no schedstat on this kernel
            return int(process_cpu_s(pid) * 1e9)
    return total


@dataclass
class CpuWindow:
    """The CPU each of ``pids`` (role -> pid) used between :meth:`start` and :meth:`stop`.

    Caller: the latency suite, around a run. Affects: nothing (reads ``/proc``)."""

    pids: dict[str, int]
    used_ns: dict[str, int] = field(default_factory=dict)
    wall_ns: int = 0
    _start_ns: dict[str, int] = field(default_factory=dict)
    _started_at_ns: int = 0

    def start(self) -> None:
        """Mark the window's start."""
        self._started_at_ns = time.monotonic_ns()
        self._start_ns = {role: cpu_ns(pid) for role, pid in self.pids.items()}

    def stop(self) -> None:
        """Mark the window's end: :attr:`used_ns` and :attr:`wall_ns` are set."""
        self.used_ns = {role: cpu_ns(pid) - self._start_ns[role] for role, pid in self.pids.items()}
        self.wall_ns = time.monotonic_ns() - self._started_at_ns

    def report(self, messages: int) -> dict[str, dict[str, float]]:
        """Per role: ``pct_core`` (CPU time over the window's wall time, in % of one core) and
        ``us_per_msg`` (CPU microseconds per message of the ``messages`` the run handled)."""
        return {
            role: {
                "pct_core": round(100.0 * used / self.wall_ns, 2) if self.wall_ns else 0.0,
                "us_per_msg": round(used / 1000.0 / messages, 2) if messages else 0.0,
            }
            for role, used in self.used_ns.items()
        }
