"""The slowest 1% of messages, step by step: ``PYTHONPATH=TREE python tail.py RATE COUNT``.

Runs ``bench hops``'s traced run (a producer at RATE msgs/s, a consumer, a broker on its
defaults) for COUNT messages, the first tenth not followed, and prints, besides the suite's own
rows: each step's median for all messages and for the slowest 1% (by ``send()`` to ``poll()``),
which step was the longest in each of those, and, for those whose store-to-answer step took
more than 300 us, when (after the store) the consumer offered its next pull, the broker read a
pull, the consumer's ``poll()`` before that offer returned, and the broker's agent last slept
and woke.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench import _hop_trace
from bench.suites import hops

_LATE_ANSWER_NS = 300_000


def _last(events: list[_hop_trace.Event], name: str, before_ns: int) -> _hop_trace.Event | None:
    found = None
    for event in events:
        if event.t_ns > before_ns:
            break
        if event.name == name:
            found = event
    return found


def _after(event: _hop_trace.Event | None, t_ns: int) -> str:
    return f"{(event.t_ns - t_ns) / 1e3:9.0f}" if event is not None else "        -"


def _report(roles: dict[str, list[_hop_trace.Event]], skip: int) -> None:
    paths = _hop_trace.chains(roles, skip=skip)
    names = [name for _, name, _ in _hop_trace.CHAIN]
    paths.sort(key=lambda path: path[-1] - path[0])
    count = len(paths)
    tail = paths[int(count * 0.99) :]
    p50, p99 = paths[count // 2], paths[int(count * 0.99)]
    print(
        f"followed {count}; send() to poll() p50 {(p50[-1] - p50[0]) / 1e3:.0f} us, "
        f"p99 {(p99[-1] - p99[0]) / 1e3:.0f} us"
    )
    for i in range(1, len(names)):
        every = statistics.median(path[i] - path[i - 1] for path in paths) / 1e3
        slow = statistics.median(path[i] - path[i - 1] for path in tail) / 1e3
        longest = max(path[i] - path[i - 1] for path in tail) / 1e3
        print(f"  {names[i]:12s} p50 {every:8.1f}  tail p50 {slow:8.1f}  tail max {longest:8.1f}")
    biggest = Counter(
        max((path[i] - path[i - 1], names[i]) for i in range(1, len(names)))[1] for path in tail
    )
    print("  the longest step of each of the slowest:", dict(biggest))
    consumer = sorted(roles["consumer"], key=lambda event: event.t_ns)
    broker = sorted(roles["broker"], key=lambda event: event.t_ns)
    stored, answer = names.index("stored"), names.index("answer")
    print("  store to answer | consumer's offer | broker's pull | consumer's poll() returned |")
    print("  agent slept | agent woke (us after the store)")
    for path in sorted(tail, key=lambda path: path[answer] - path[stored], reverse=True)[:25]:
        stored_ns, answer_ns = path[stored], path[answer]
        if answer_ns - stored_ns < _LATE_ANSWER_NS:
            continue
        offer = _last(consumer, "offer", answer_ns)
        polled = _last(consumer, "polled", offer.t_ns if offer is not None else answer_ns)
        print(
            f"  {(answer_ns - stored_ns) / 1e3:9.0f}",
            _after(offer, stored_ns),
            _after(_last(broker, "pull", answer_ns), stored_ns),
            _after(polled, stored_ns),
            _after(_last(broker, "sleep", answer_ns), stored_ns),
            _after(_last(broker, "woken", answer_ns), stored_ns),
        )


def main() -> None:
    rate, count = int(sys.argv[1]), int(sys.argv[2])
    with tempfile.TemporaryDirectory() as root:
        run = hops.traced_run(Path(root), rate, count, warm_up=count // 10)
    _report(run.roles, run.skip)


if __name__ == "__main__":
    main()
