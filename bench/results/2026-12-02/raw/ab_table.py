"""The A/B runs' rows by rate and variant: ``python ab_table.py FILE...`` (``ab.py``'s JSON
lines): each run's p50, p99, CPU a message and send() p50, and the medians."""

import json
import statistics
import sys
from pathlib import Path

rows = [json.loads(line) for path in sys.argv[1:] for line in Path(path).read_text().splitlines()]


def figures(runs: list[dict[str, float]], key: str) -> str:
    values = [round(run[key]) for run in runs]
    return f"{values} med {round(statistics.median(values))}"


for rate in sorted({row["rate"] for row in rows}):
    for variant in sorted({row["variant"] for row in rows}):
        runs = [row for row in rows if row["rate"] == rate and row["variant"] == variant]
        print(
            rate,
            variant,
            "| p50",
            figures(runs, "p50_us"),
            "| p99",
            figures(runs, "p99_us"),
            "| cpu",
            figures(runs, "cpu_total_us_per_msg"),
            "| send p50",
            figures(runs, "send_p50_us"),
        )
