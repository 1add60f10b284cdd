"""``bench hops`` at any rate: ``PYTHONPATH=. python hops_rate.py RATE COUNT`` from the
repository root; the suite's rows of one traced run, a line each."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench.suites.hops import rows_of, traced_run


def main() -> None:
    rate, count = int(sys.argv[1]), int(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        run = traced_run(Path(tmp), rate, count)
        for row in rows_of(run, rate, count):
            shown = {key: value for key, value in row.extra.items() if key != "what"}
            print(row.name, row.p50_us, shown)


if __name__ == "__main__":
    main()
