"""``PYTHONPATH=TREE python stall.py RATE COUNT OUT``: ``bench hops``' traced run (a producer at
RATE msgs/s, a consumer, a broker on its defaults) for COUNT messages, every process's events
pickled to OUT as ``{role: [(t_ns, name, thread, count, cpu_ns), ...]}`` for ``chainq.py``,
``offerpull.py`` and ``cpugap.py``. Run it beside ``perf sched record -k CLOCK_MONOTONIC`` to
read the scheduler's record on the tracer's clock."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from bench import _hop_trace
from bench._harness import Result
from bench.suites import hops

Dumped = dict[str, list[tuple[int, str, str, int, int]]]


def main() -> None:
    rate, count, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    hops.RATES = (rate,)  # type: ignore[assignment]  # (one rate: the suite's are two)
    hops.QUICK_MESSAGES = {**hops.QUICK_MESSAGES, rate: count}
    hops.WARM_UP = {**hops.WARM_UP, rate: count // 10}
    rows = hops._rows

    def dump_then_rows(
        roles: dict[str, list[_hop_trace.Event]],
        rate: int,
        count: int,
        usage: dict[str, tuple[int, int]],
        skip: int,
    ) -> list[Result]:
        dumped: Dumped = {
            role: [(e.t_ns, e.name, e.thread, e.count, e.cpu_ns) for e in events]
            for role, events in roles.items()
        }
        out.write_bytes(pickle.dumps(dumped))
        return rows(roles, rate, count, usage, skip)

    hops._rows = dump_then_rows
    for row in hops.run(True):
        print(row)


if __name__ == "__main__":
    main()
