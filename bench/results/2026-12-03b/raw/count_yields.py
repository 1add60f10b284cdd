"""How often the session agent yields to a consumer after a quiet while, by rate:
``PYTHONPATH=TREE python count_yields.py``.

One broker (the latency suite's), then a paced producer and a consumer over IPC at 10, 100,
1,000 and 5,000 msgs/s in turn (10, 5, 5 and 4 s after a 2 s warm-up each); before and after
each, the broker's ``aeromq_session_events_total{event="quiet_yields"}`` from its ``/metrics``.
Prints the yields of each rate beside the messages received. It uses the 2026-12-02 round's
``_run.py``.
"""

from __future__ import annotations

import re
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "2026-12-02" / "raw"))
from _run import broker_with, paced, run  # (the path above)

_YIELDS = re.compile(r'aeromq_session_events_total\{event="quiet_yields"\} (\S+)')


def _yields(metrics_url: str) -> float:
    with urllib.request.urlopen(metrics_url, timeout=5) as answer:
        text = answer.read().decode()
    found = _YIELDS.search(text)
    return float(found.group(1)) if found else 0.0


def main() -> None:
    with broker_with({}) as (broker, admin):
        url = broker.ready["metrics"]
        for rate, seconds in ((10, 10), (100, 5), (1000, 5), (5000, 4)):
            before = _yields(url)
            result = run(broker, admin, f"Y{rate}", paced(rate, seconds))
            print(
                rate,
                "msgs/s: yields",
                int(_yields(url) - before),
                "messages received",
                result.extra.get("received"),
                "p50 us",
                result.p50_us,
            )


if __name__ == "__main__":
    main()
