"""``PYTHONPATH=TREE python stall.py RATE COUNT OUT``: ``bench hops``' traced run (a producer at
RATE msgs/s, a consumer, a broker on its defaults) for COUNT messages, every process's events
pickled to OUT as ``{role: [(t_ns, name, thread, count, cpu_ns), ...]}`` for ``chainq.py``,
``offerpull.py`` and ``cpugap.py``. Run it beside ``perf sched record -k CLOCK_MONOTONIC`` to
read the scheduler's record on the tracer's clock."""

from __future__ import annotations

import pickle
import sys
import tempfile
from pathlib import Path

from bench.suites import hops

Dumped = dict[str, list[tuple[int, str, str, int, int]]]


def main() -> None:
    rate, count, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    with tempfile.TemporaryDirectory() as root:
        run = hops.traced_run(Path(root), rate, count, warm_up=count // 10)
    dumped: Dumped = {
        role: [(e.t_ns, e.name, e.thread, e.count, e.cpu_ns) for e in events]
        for role, events in run.roles.items()
    }
    out.write_bytes(pickle.dumps(dumped))
    for row in hops.rows_of(run, rate, count):
        print(row)


if __name__ == "__main__":
    main()
