"""What a slow one-at-a-time send waited for: ``PYTHONPATH=. python slow_sends.py [RATE COUNT]``
from the repository root. One traced run of ``bench hops`` (``traced_run``: a producer paced at
RATE msgs/s, default 1,000, COUNT messages, default 10,000, a consumer polling, every process
traced), then each send cut into segments by the producer's and the broker's events:

- ``code``: ``send_call`` to ``offer`` (the producer's own code);
- ``to_agent``: ``offer`` to the session agent's ``request`` (its wake-up, or its cycle under
  way), with ``agent_asleep`` whether the agent's last event before the offer was a ``sleep``;
- ``agent``: ``request`` to the ``queued`` after the send's ``send_end`` (the agent's read,
  the send processor and the answer offered, the consumer's held pull answered between);
- ``back``: ``queued`` to the producer's ``send_return`` (its wake-up, read and return).

Printed: the segments' medians over every send and over the sends slower than 2 ms, and for
those which segment was the longest."""

from __future__ import annotations

import bisect
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench._hop_trace import Event
from bench.suites.hops import traced_run

SLOW_NS = 2_000_000
SEGMENTS = ("code", "to_agent", "agent", "back")


def _times(events: list[Event], name: str, thread: str | None = None) -> list[int]:
    return [e.t_ns for e in events if e.name == name and (thread is None or e.thread == thread)]


def _after(times: list[int], t_ns: int) -> int | None:
    index = bisect.bisect_left(times, t_ns)
    return times[index] if index < len(times) else None


def _longest(parts: dict[str, int]) -> str:
    return max(SEGMENTS, key=parts.__getitem__)


def main() -> None:
    rate = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    with tempfile.TemporaryDirectory() as root:
        run = traced_run(Path(root), rate, count)
    producer, broker = run.roles["producer"], run.roles["broker"]
    calls = _times(producer, "send_call")[run.skip :]
    offers, returns = _times(producer, "offer"), _times(producer, "send_return")
    agent = "broker-sessions"
    requests, ends = _times(broker, "request", agent), _times(broker, "send_end", agent)
    queued = _times(broker, "queued", agent)
    agent_events = [e for e in broker if e.thread == agent]
    agent_t = [e.t_ns for e in agent_events]
    rows: list[tuple[int, dict[str, int], bool]] = []
    for call in calls:
        offer = _after(offers, call)
        done = _after(returns, call)
        if offer is None or done is None or offer > done:
            continue
        request = _after(requests, offer)
        end = None if request is None else _after(ends, request)
        answer = None if end is None else _after(queued, end)
        if request is None or answer is None or answer > done:
            continue
        last = bisect.bisect_left(agent_t, offer) - 1
        asleep = last >= 0 and agent_events[last].name == "sleep"
        parts = {
            "code": offer - call,
            "to_agent": request - offer,
            "agent": answer - request,
            "back": done - answer,
        }
        rows.append((done - call, parts, asleep))
    slow = [row for row in rows if row[0] > SLOW_NS]
    print(f"rate {rate}, sends followed {len(rows)}, slower than 2 ms {len(slow)}")
    for label, chosen in (("all", rows), ("slow", slow)):
        if not chosen:
            continue
        medians = {s: round(statistics.median(r[1][s] for r in chosen) / 1e3) for s in SEGMENTS}
        sleeping = sum(1 for r in chosen if r[2])
        p50_us = round(statistics.median(r[0] for r in chosen) / 1e3)
        print(
            f"  {label}: send p50 {p50_us} us; segment medians (us) {medians};"
            f" agent asleep at the offer {sleeping} of {len(chosen)}"
        )
    longest = Counter(_longest(parts) for _, parts, _ in slow)
    print(f"  the longest segment of each slow send: {dict(longest)}")
    for took_ns, parts, was_asleep in sorted(slow, key=lambda r: -r[0])[:12]:
        shown = {s: round(parts[s] / 1e3) for s in SEGMENTS}
        print(f"    {took_ns / 1e3:7.0f} us {shown} agent asleep {was_asleep}")


if __name__ == "__main__":
    main()
