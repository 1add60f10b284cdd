"""``order.py CASE...``: cases in order on one broker, a row each. ``ipcRATE`` and ``udpRATE``:
3 s at RATE msgs/s after a 2 s warm-up, a consumer polling; ``so``: ``send()`` alone for 3 s;
``sleepSECONDS``: nothing for that long; ``idleSECONDS``: the broker's CPU over that long (no
traffic) and its five busiest threads in clock ticks, from ``/proc``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from _run import broker_with, print_row, run

from bench._schedule import Plan


def thread_ticks(pid: int) -> dict[tuple[str, str], int]:
    """(thread id, name) -> its user and system clock ticks so far."""
    ticks = {}
    for tid in (path.name for path in Path(f"/proc/{pid}/task").iterdir()):
        stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks[(tid, name)] = int(fields[11]) + int(fields[12])
    return ticks


def main() -> None:
    with broker_with({}) as (broker, admin):
        for n, case in enumerate(sys.argv[1:]):
            started_s = time.monotonic()
            if case.startswith("idle"):
                seconds = float(case[4:])
                before = thread_ticks(broker.pid)
                time.sleep(seconds)
                after = thread_ticks(broker.pid)
                used = sorted(
                    ((t - before.get(k, 0), k[1]) for k, t in after.items()), reverse=True
                )
                total = sum(ticks for ticks, _ in used)  # 100 ticks a second: % of a core
                print_row(case=case, broker_pct=round(total / seconds, 2), threads_ticks=used[:5])
                continue
            if case.startswith("sleep"):
                time.sleep(float(case[5:]))
                continue
            if case == "so":
                plan = Plan(None, 10**8, 0.0, 3.0)
                result = run(broker, admin, f"O{n}", plan)
            else:
                rate = int(case[3:])
                transport = "auto" if case.startswith("ipc") else "udp"
                result = run(broker, admin, f"O{n}", Plan(rate, rate * 3, 2.0, 11.0), transport)
            print_row(
                case=case,
                s=round(time.monotonic() - started_s, 1),
                msgs_per_s=round(result.msgs_per_s or 0),
                p50=result.p50_us,
                send_p50_us=result.extra.get("send_p50_us"),
                cpu=result.extra.get("cpu_total_us_per_msg"),
                behind=result.extra.get("fell_behind"),
            )


if __name__ == "__main__":
    main()
