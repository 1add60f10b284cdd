"""``python lattable.py FILE...``: the rows of ``bench latency --json`` runs side by side (rate,
p50 / p99 and CPU a message for each case; the targets' ratios against the floor and Redis
Streams, a ``*`` where met)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _rows(path: str) -> dict[str, dict[str, object]]:
    lines = Path(path).read_text().splitlines()
    return {row["name"]: row for row in map(json.loads, lines)}


def _cell(row: dict[str, object]) -> str:
    def number(key: str) -> float:
        value = row.get(key, 0)
        return float(value) if isinstance(value, int | float) else 0.0

    if "p50_us" in row and "rate" in row:
        return (
            f"{number('msgs_per_s'):.0f}/s {number('p50_us'):.0f}/{number('p99_us'):.0f} "
            f"cpu {number('cpu_total_us_per_msg'):.0f}"
        )
    if "msgs_per_s" in row:
        return f"{number('msgs_per_s'):.0f}/s p50 {number('p50_us'):.0f}"
    if "cpu_pct_core" in row:
        return f"{number('cpu_pct_core'):.2f}%"
    if "p50_us" in row:
        return f"p50 {number('p50_us'):.0f} warm {number('warm_p50_us'):.0f}"
    return "-"


def main() -> None:
    runs = {Path(path).stem: _rows(path) for path in sys.argv[1:]}
    names = list(runs)
    print("case", *names, sep=" | ")
    for case in runs[names[0]]:
        if not case.startswith("target"):
            print(case, *(_cell(runs[name].get(case, {})) for name in names), sep=" | ")
    for name, rows in runs.items():
        met = [
            f"{case.split(':', 2)[2]}={row['measured']:.2f}{'*' if row['met'] else ''}"
            for case, row in rows.items()
            if case.startswith("target") and ("redis" in case or "floor" in case or "CPU" in case)
        ]
        print(name, " ".join(met))


if __name__ == "__main__":
    main()
