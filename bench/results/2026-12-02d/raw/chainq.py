"""``python chainq.py PICKLE...`` (from ``stall.py``): each run's ``send()`` to ``poll()`` p50,
p99, p99.9 and max over the messages after the first 20,000, and the producer's gaps between
two ``send()`` calls over 1 ms (the schedule is every 200 us at 5,000 msgs/s)."""

from __future__ import annotations

import itertools
import pickle
import sys
from pathlib import Path

from bench import _hop_trace

_SKIP = 20_000


def main() -> None:
    steps = {name for _, name, _ in _hop_trace.CHAIN}
    for path in sys.argv[1:]:
        dumped = pickle.loads(Path(path).read_bytes())
        roles = {
            role: [_hop_trace.Event(*event) for event in events if event[1] in steps]
            for role, events in dumped.items()
        }
        waits = sorted(chain[-1] - chain[0] for chain in _hop_trace.chains(roles, skip=_SKIP))
        n = len(waits)
        sends = sorted(e.t_ns for e in roles["producer"] if e.name == "send_call")[_SKIP:]
        gaps = sorted(b - a for a, b in itertools.pairwise(sends))
        print(
            f"{path} {n} send->poll us p50 {waits[n // 2] // 1000} "
            f"p99 {waits[int(n * 0.99)] // 1000} p99.9 {waits[int(n * 0.999)] // 1000} "
            f"max {waits[-1] // 1000} | send gaps > 1 ms {sum(g > 1_000_000 for g in gaps)}, "
            f"the longest {gaps[-1] // 1000} us"
        )


if __name__ == "__main__":
    main()
