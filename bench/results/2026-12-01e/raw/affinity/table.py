"""Print the latency rows of ``bench latency --json`` files: ``python table.py FILE...``."""

import json
import sys

for path in sys.argv[1:]:
    print("==", path)
    with open(path) as lines:
        for line in lines:
            row = json.loads(line)
            name = row.get("name", "")
            if "failed" in row:
                print(f"{name:45} FAILED {row['failed'][:80]}")
            elif "p50_us" in row and "cpu_total_us_per_msg" in row:
                figures = " ".join(
                    f"{label} {row.get(key) or 0:7.0f}"
                    for label, key in (
                        ("p50", "p50_us"),
                        ("p99", "p99_us"),
                        ("p999", "p999_us"),
                        ("send50", "send_p50_us"),
                        ("cpu", "cpu_total_us_per_msg"),
                    )
                )
                behind = "BEHIND" if row.get("fell_behind") else ""
                print(
                    f"{name:45} {figures} us/msg {row.get('msgs_per_s') or 0:7.0f}/s {behind} "
                    f"{row.get('cpu_affinity', '')}"
                )
