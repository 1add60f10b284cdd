"""``python cpugap.py PICKLE`` (from ``stall.py``): every pair of consecutive events of one thread
between which that thread ran more than 1 ms of CPU (its ``thread_time_ns``), after the run's
first 8 s: where a thread was busy, not waiting."""

from __future__ import annotations

import itertools
import pickle
import sys
from pathlib import Path

_WARM_UP_NS = 8_000_000_000


def main() -> None:
    dumped = pickle.loads(Path(sys.argv[1]).read_bytes())
    for role, events in dumped.items():
        events = sorted(events)
        by_thread: dict[str, list[tuple[int, str, str, int, int]]] = {}
        for event in events:
            by_thread.setdefault(event[2], []).append(event)
        for thread, mine in by_thread.items():
            for a, b in itertools.pairwise(mine):
                if b[4] - a[4] > 1_000_000 and a[0] > events[0][0] + _WARM_UP_NS:
                    print(
                        f"{role} {thread} {a[0] / 1e9:.6f} {a[1]} -> {b[1]} "
                        f"cpu {(b[4] - a[4]) / 1e3:.0f} us wall {(b[0] - a[0]) / 1e3:.0f} us"
                    )


if __name__ == "__main__":
    main()
