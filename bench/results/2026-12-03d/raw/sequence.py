"""Runs in turn on one broker: ``PYTHONPATH=. python sequence.py STEP,STEP,...`` from the
repository root.

A STEP is ``so`` (``send()`` one at a time as fast as it returns, no consumer, 4 s) or
``ipc:RATE`` / ``udp:RATE`` (a producer paced at RATE msgs/s and a consumer, 3 s after a 2 s
warm-up, as the latency suite's roles; ``STEP_S`` in the environment sets other seconds); a JSON
line a step. The broker's environment is this process's (``AEROMQ_BROKER_SESSION_IDLE_STRATEGY``
set there reaches it). It uses the 2026-12-02 round's ``_run.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "2026-12-02" / "raw"))
from _run import broker_with, paced, print_row, run  # (the path above)

from bench._schedule import Plan


def main() -> None:
    with broker_with({}) as (broker, admin):
        for i, step in enumerate(sys.argv[1].split(",")):
            if step == "so":
                result = run(broker, admin, f"S{i}", Plan(None, 10**8, 0.0, 4.0))
            else:
                transport, _, rate = step.partition(":")
                plan = paced(int(rate), float(os.environ.get("STEP_S", "3")))
                result = run(broker, admin, f"R{i}", plan, "udp" if transport == "udp" else "auto")
            cpu = result.extra.get("cpu", {})
            print_row(
                step=step,
                msgs_per_s=round(result.msgs_per_s or 0.0),
                p50=result.p50_us,
                p99=result.p99_us,
                send_p50_us=result.extra.get("send_p50_us"),
                cpu_us=result.extra.get("cpu_total_us_per_msg"),
                cpu={role: figures["pct_core"] for role, figures in cpu.items()},
            )


if __name__ == "__main__":
    main()
