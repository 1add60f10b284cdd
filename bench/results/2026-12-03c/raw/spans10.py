"""Where a message's time goes at 10 msgs/s, from the twenty-seventh round's scheduler record:
``python spans10.py ../../2026-12-03b/raw/wake-cpus-10-sched.txt.gz AGENT_TID`` (the session
agent's thread id: ``broker-sessions`` in the record; the roles' pids are read from the
``-pids.json`` beside the record).

For each time the producer's main thread woke the agent (the send's ring), it takes the
producer's last wake-up before that from outside the three processes (its pacing sleep's end),
the broker's next wake-up of the consumer's main thread (the pull's answer's ring) and that
thread's last sleep before the broker's next ring of it, and prints the three spans' quantiles
(us): producer woken to agent rung, agent rung to consumer rung, consumer rung to its sleep.
Messages whose events the record missed (a span over 20 ms) are left out. Output of this round:
``spans10.txt``."""

from __future__ import annotations

import bisect
import gzip
import json
import re
import sys
from pathlib import Path

_LINE = re.compile(r"^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)$")
_WOKEN = re.compile(r"comm=(.+?) pid=(\d+) ")
_PREV = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+)")
_MISSED_US = 20_000.0


def _quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    n = len(ordered)
    return (
        f"p50 {ordered[n // 2]:.0f} p90 {ordered[int(n * 0.9)]:.0f} "
        f"p99 {ordered[min(n - 1, int(n * 0.99))]:.0f} max {ordered[-1]:.0f}"
    )


def main() -> None:
    record, agent = Path(sys.argv[1]), int(sys.argv[2])
    pids = json.loads(Path(str(record).replace("-sched.txt.gz", "-pids.json")).read_text())["pids"]
    broker, consumer, producer = pids["broker"], pids["consumer"], pids["producer"]
    producer_woken: list[float] = []
    agent_rung: list[float] = []
    consumer_rung: list[float] = []
    consumer_slept: list[float] = []
    with gzip.open(record, "rt") as lines:
        for line in lines:
            match = _LINE.match(line)
            if match is None:
                continue
            pid, t_us = int(match.group(2)), float(match.group(5)) * 1e6
            event, rest = match.group(6), match.group(7)
            if event == "sched_wakeup":
                woken = _WOKEN.search(rest)
                if woken is None:
                    continue
                target = int(woken.group(2))
                if target == producer and pid not in (broker, consumer, producer):
                    producer_woken.append(t_us)
                elif target == agent and pid == producer:
                    agent_rung.append(t_us)
                elif target == consumer and pid == broker:
                    consumer_rung.append(t_us)
            elif event == "sched_switch":
                previous = _PREV.search(rest)
                if previous and int(previous.group(1)) == consumer and previous.group(2) == "S":
                    consumer_slept.append(t_us)
    spans: list[tuple[float, float, float]] = []
    for rung in agent_rung:
        i = bisect.bisect_right(producer_woken, rung) - 1
        j = bisect.bisect_left(consumer_rung, rung)
        if i < 0 or j >= len(consumer_rung):
            continue
        answered = consumer_rung[j]
        next_ring = consumer_rung[j + 1] if j + 1 < len(consumer_rung) else float("inf")
        k = bisect.bisect_left(consumer_slept, next_ring) - 1
        if k < 0 or consumer_slept[k] < answered:
            continue
        span = (rung - producer_woken[i], answered - rung, consumer_slept[k] - answered)
        if max(span) <= _MISSED_US:
            spans.append(span)
    print(f"messages {len(spans)} of {len(agent_rung)} sends")
    for index, name in enumerate(
        (
            "producer woken -> agent rung",
            "agent rung -> consumer rung",
            "consumer rung -> its sleep",
        )
    ):
        print(f"  {name:30s} {_quantiles([span[index] for span in spans])}")
    totals = [sum(span) for span in spans]
    print(f"  {'producer woken -> consumer sleep':30s} {_quantiles(totals)}")


if __name__ == "__main__":
    main()
