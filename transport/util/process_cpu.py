"""CPU time of another process, for the reports that give CPU per message (the quick start,
``python -m bench``): Linux ``/proc/<pid>/stat``, no dependency."""

from __future__ import annotations

import os

__all__ = ["process_cpu_s"]


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (0.0 where ``/proc`` cannot tell:
    another system, or the process gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
