"""``python threadcpu.py SECONDS PID...``: each thread's CPU (``/proc/PID/task/TID/schedstat``)
and voluntary context switches (its wake-ups) over SECONDS, the busiest first. Run beside a
paced run (``../../2026-12-02/raw/ab.py D 1 25``: one message a second, so what is measured is
what a producer and a consumer connected to a broker cost while nearly idle)."""

from __future__ import annotations

import os
import sys
import time

Snapshot = dict[tuple[str, str], tuple[str, int, int]]


def _snapshot(pids: list[str]) -> Snapshot:
    """(pid, tid) -> (thread name, CPU ns, voluntary switches)."""
    out: Snapshot = {}
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            base = f"/proc/{pid}/task/{tid}"
            try:
                with open(f"{base}/stat") as stat:
                    text = stat.read()
                with open(f"{base}/schedstat") as schedstat:
                    cpu_ns = int(schedstat.read().split()[0])
                with open(f"{base}/status") as status:
                    switches = int(status.read().split("voluntary_ctxt_switches:")[1].split()[0])
            except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
                continue
            out[(pid, tid)] = (text[text.index("(") + 1 : text.rindex(")")], cpu_ns, switches)
    return out


def main() -> None:
    seconds, pids = float(sys.argv[1]), sys.argv[2:]
    before = _snapshot(pids)
    time.sleep(seconds)
    after = _snapshot(pids)
    rows = []
    for key, (name, cpu_ns, switches) in after.items():
        if key in before:
            rows.append((cpu_ns - before[key][1], switches - before[key][2], key[0], name))
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
