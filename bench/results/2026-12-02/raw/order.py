"""``order.py CASE...``: cases in order on one broker, a row each. ``ipcRATE`` and ``udpRATE``:
3 s at RATE msgs/s after a 2 s warm-up, a consumer polling; ``so``: ``send()`` alone for 3 s;
``sleepSECONDS``: nothing for that long; ``idleSECONDS``: the broker's CPU over that long (no
traffic) and its five busiest thread names with their microseconds (``bench._thread_stats``).
The idle rows in ``order.txt`` were read before this script used ``bench._thread_stats``: from
``/proc``'s user and system clock ticks (10 ms each), their names and counts in ticks."""

from __future__ import annotations

import sys
import time

from _run import broker_with, print_row, run

from bench._schedule import Plan
from bench._thread_stats import costs, sample


def main() -> None:
    with broker_with({}) as (broker, admin):
        for n, case in enumerate(sys.argv[1:]):
            started_s = time.monotonic()
            if case.startswith("idle"):
                seconds = float(case[4:])
                before = sample(broker.pid)
                time.sleep(seconds)
                used = costs(before, sample(broker.pid), messages=1)  # us over the window
                total_us = sum(row.cpu_us_per_msg for row in used)
                busiest = [(row.name, round(row.cpu_us_per_msg)) for row in used[:5]]
                print_row(
                    case=case, broker_pct=round(total_us / seconds / 1e4, 2), threads_us=busiest
                )
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
