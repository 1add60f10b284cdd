"""``sendonly.py N SECONDS``: aeromq's ``send()`` one at a time with no consumer, for SECONDS, on
a fresh broker each of N times (the latency suite runs it on the broker its other cases ran on)."""

from __future__ import annotations

import sys

from _run import broker_with, print_row, run

from bench._schedule import Plan


def main() -> None:
    count, seconds = int(sys.argv[1]), float(sys.argv[2])
    for i in range(count):
        with broker_with({}) as (broker, admin):
            result = run(broker, admin, f"S{i}", Plan(None, 10**8, 0.0, seconds))
            print_row(
                i=i,
                msgs_per_s=result.msgs_per_s,
                send_p50_us=result.extra.get("send_p50_us"),
                send_p99_us=result.extra.get("send_p99_us"),
                cpu=result.extra.get("cpu"),
            )


if __name__ == "__main__":
    main()
