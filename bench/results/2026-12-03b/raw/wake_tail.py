"""The consumer's wake-ups against the session agent's cycle, message by message:
``PYTHONPATH=TREE python wake_tail.py RATE COUNT [SHARE]``.

Runs ``bench hops``'s traced run for COUNT messages at RATE msgs/s (the first tenth not
followed) and prints: a summary over every message (the broker's steps after the pull's answer:
the send's answer queued, the next ring, the agent's sleep; the consumer's wake-up, and whether
it came after the agent slept: medians, for all messages and for each group); then, for the
slowest SHARE (default 0.02) by ``send()`` to ``poll()``, every traced event of the consumer and
the broker (any thread) from 300 us before the pull's answer was offered to the consumer's read
of it, in us after the answer's offer. ``wake-summary-10.txt``: ``10 600 0``;
``wake-tail-10.txt``: ``10 1000 0.03``, run before the summary was added.
"""

from __future__ import annotations

import bisect
import statistics
import sys
import tempfile
from pathlib import Path

from bench import _hop_trace
from bench.suites import hops


def _report(roles: dict[str, list[_hop_trace.Event]], skip: int, share: float) -> None:
    paths = _hop_trace.chains(roles, skip=skip)
    names = [name for _, name, _ in _hop_trace.CHAIN]
    answer, read = names.index("answer"), names.index("answer_read")
    paths.sort(key=lambda path: path[-1] - path[0])
    tail = paths[int(len(paths) * (1 - share)) :]
    events = sorted(
        ((event, role) for role in ("consumer", "broker") for event in roles[role]),
        key=lambda pair: pair[0].t_ns,
    )
    _summary(paths, events, answer, read)
    for path in tail:
        answer_ns, read_ns = path[answer], path[read]
        print(
            f"send->poll {(path[-1] - path[0]) / 1e3:.0f} us; answer->read "
            f"{(read_ns - answer_ns) / 1e3:.0f} us"
        )
        for event, role in events:
            if answer_ns - 300_000 <= event.t_ns <= read_ns:
                print(
                    f"    {(event.t_ns - answer_ns) / 1e3:8.0f} {role:8s} {event.thread:32s} "
                    f"{event.name} cpu {event.cpu_ns / 1e3:.0f}"
                )


def _summary(
    paths: list[list[int]],
    events: list[tuple[_hop_trace.Event, str]],
    answer: int,
    read: int,
) -> None:
    """For every message: the broker's steps after the pull's answer (the send's answer queued,
    the next ring, its sleep) and the consumer's wake-up against the broker's sleep."""
    broker = [event for event, role in events if role == "broker"]
    consumer_woken = [e.t_ns for e, role in events if role == "consumer" and e.name == "woken"]
    times = [e.t_ns for e in broker]
    rows = []
    for path in paths:
        answer_ns = path[answer]
        i = bisect.bisect_right(times, answer_ns)
        queued = ring = sleep = None
        for event in broker[i : i + 40]:
            if event.name == "queued" and queued is None:
                queued = event.t_ns
            elif event.name == "ring" and queued is not None and ring is None:
                ring = event.t_ns
            elif event.name == "sleep":
                sleep = event.t_ns
                break
        j = bisect.bisect_right(consumer_woken, answer_ns)
        woken = consumer_woken[j] if j < len(consumer_woken) else None
        if queued is None or ring is None or sleep is None or woken is None:
            continue
        rows.append(
            (
                (queued - answer_ns) / 1e3,
                (ring - queued) / 1e3,
                (sleep - answer_ns) / 1e3,
                (woken - answer_ns) / 1e3,
                woken > sleep,
                (path[read] - answer_ns) / 1e3,
                (path[-1] - path[0]) / 1e3,
            )
        )
    after = [r for r in rows if r[4]]
    before = [r for r in rows if not r[4]]
    print(f"summary of {len(rows)}: consumer woken after the broker slept in {len(after)}")
    for label, subset in (("all", rows), ("woken after sleep", after), ("before", before)):
        if not subset:
            continue
        med = [statistics.median(r[k] for r in subset) for k in (0, 1, 2, 3, 5, 6)]
        print(
            f"  {label:18s} n {len(subset):4d} answer->queued {med[0]:6.0f} queued->ring "
            f"{med[1]:6.0f} answer->sleep {med[2]:6.0f} answer->woken {med[3]:6.0f} "
            f"answer->read {med[4]:6.0f} send->poll {med[5]:6.0f}"
        )


def main() -> None:
    rate, count = int(sys.argv[1]), int(sys.argv[2])
    share = float(sys.argv[3]) if len(sys.argv) > 3 else 0.02
    with tempfile.TemporaryDirectory() as root:
        run = hops.traced_run(Path(root), rate, count, warm_up=count // 10)
    _report(run.roles, run.skip, share)


if __name__ == "__main__":
    main()
