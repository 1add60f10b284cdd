"""``python offerpull.py PICKLE`` (from ``stall.py``): how long each of the consumer's offers (its
next pull) waited for the broker to start processing a pull, after the first tenth of the run:
p50 to p99.9, the count over 1 ms, and the longest 15 with whether the broker's agent slept
meanwhile."""

from __future__ import annotations

import bisect
import pickle
import sys
from pathlib import Path


def main() -> None:
    dumped = pickle.loads(Path(sys.argv[1]).read_bytes())
    offers = sorted(e[0] for e in dumped["consumer"] if e[1] == "offer")
    pulls = sorted(e[0] for e in dumped["broker"] if e[1] == "pull")
    sleeps = sorted(e[0] for e in dumped["broker"] if e[1] == "sleep")
    start = offers[len(offers) // 10]
    waits: list[tuple[int, int, int]] = []
    for offered in offers:
        i = bisect.bisect_left(pulls, offered)
        if offered >= start and i < len(pulls):
            waits.append((pulls[i] - offered, offered, pulls[i]))
    waits.sort()
    n = len(waits)
    for q in (0.5, 0.9, 0.99, 0.999):
        print(f"p{q * 100:g} {waits[int(n * q)][0] / 1e3:.0f} us")
    print("over 1 ms:", sum(w[0] > 1_000_000 for w in waits))
    for wait, offered, pulled in waits[-15:]:
        slept = bisect.bisect_right(sleeps, pulled) - bisect.bisect_left(sleeps, offered)
        print(f"{offered / 1e9:.6f} {wait / 1e3:.0f} us, the agent slept {slept} times between")


if __name__ == "__main__":
    main()
