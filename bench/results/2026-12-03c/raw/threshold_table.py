"""``python threshold_table.py FILE...``: ``threshold_ab.py``'s rows by rate and threshold: the
medians over the brokers of the p50, the p99, the ``send()`` p50 and the CPU of the three
processes a message (us), then each broker's p50, p99 and max in the order they ran."""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

Row = dict[str, object]


def _number(row: Row, key: str) -> float:
    value = row[key]
    if not isinstance(value, int | float):
        raise TypeError(f"{key} is not a number: {value!r}")
    return float(value)


def main() -> None:
    rows: list[Row] = [
        json.loads(line) for name in sys.argv[1:] for line in Path(name).read_text().splitlines()
    ]
    groups: dict[tuple[int, str], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(int(_number(row, "rate")), str(row["variant"]))].append(row)
    for (rate, variant), runs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], -float(kv[0][1]))
    ):

        def median(key: str, runs: list[Row] = runs) -> float:
            return statistics.median(_number(run, key) for run in runs)

        def each(key: str, runs: list[Row] = runs) -> str:
            return "/".join(f"{_number(run, key):.0f}" for run in runs)

        print(
            f"{rate} msgs/s, {variant} ms: n {len(runs)} p50 {median('p50_us'):.0f} "
            f"p99 {median('p99_us'):.0f} send p50 {median('send_p50_us'):.0f} "
            f"cpu {median('cpu_total_us_per_msg'):.0f} | p50 {each('p50_us')} "
            f"p99 {each('p99_us')} max {each('max_us')}"
        )


if __name__ == "__main__":
    main()
