"""The medians of alternating runs: ``python summary.py FILE...`` over ``sequence.py``'s output as
``alternate.sh`` writes it (a ``# SIDE time load`` line before each run's JSON lines). A step is
keyed by its place in the run and its name (``2:so``: ``send()`` alone, second step)."""

from __future__ import annotations

import json
import statistics
import sys


def main() -> None:
    rows: dict[str, dict[str, list[tuple[float, float, float]]]] = {}  # (sent/s, CPU, p50)
    side = ""
    for name in sys.argv[1:]:
        place = 0
        with open(name) as lines:
            for line in lines:
                if line.startswith("#"):
                    side, place = line.split()[1], 0
                    continue
                if not line.startswith("{"):
                    continue
                row = json.loads(line)
                place += 1
                figures = (float(row["msgs_per_s"]), float(row["cpu_us"]), float(row["p50"]))
                rows.setdefault(side, {}).setdefault(f"{place}:{row['step']}", []).append(figures)
    keys = {key: None for runs in rows.values() for key in runs}
    for key in keys:
        for side in sorted(rows):
            runs = rows[side].get(key, [])
            if not runs:
                continue
            rates = sorted(round(run[0]) for run in runs)
            cpu = sorted(round(run[1]) for run in runs)
            p50 = statistics.median(round(run[2]) for run in runs)
            print(
                f"{side} {key} sent/s {rates} median {statistics.median(rates)}"
                f" | p50 median {p50} us | CPU us/msg {cpu} median {statistics.median(cpu)}"
            )


if __name__ == "__main__":
    main()
