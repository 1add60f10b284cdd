"""Where a latency run's slow messages came from: ``python late_sends.py DIR [RATE]`` over the files
that ``AEROMQ_BENCH_LATENCY_DUMP=DIR`` made (a producer's and a consumer's a run, paired in the
order they were written). For each run: the messages over 2 ms, how many of them were sent more
than 1 ms late, sent on time by a send over 1 ms, or stored on time and read late; the
consumer's receipt after the send returned; the stretches of sends more than 1 ms late and
what began each (a slow send before, else the producer's own gap); the send's percentiles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SLOW_NS = 2_000_000
LATE_NS = 1_000_000


def _pct(values: list[int], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] / 1e3


def report(consumer: Path, producer: Path, rate: int) -> None:
    received = json.loads(consumer.read_text())
    sent = json.loads(producer.read_text())
    latency = dict(zip(received["sequence"], received["latency_ns"], strict=True))
    send: list[int] = sent["send_ns"]
    lag: list[int] = sent["lag_ns"]
    skip = len(latency) - len(send)  # the warm-up's messages: not among the sends
    measured = [s for s in sorted(latency) if s >= skip]
    slow = [s for s in measured if latency[s] > SLOW_NS]
    late = sum(1 for s in slow if lag[s - skip] > LATE_NS)
    slow_send = sum(1 for s in slow if lag[s - skip] <= LATE_NS < send[s - skip])
    read_late = len(slow) - late - slow_send
    after = [latency[s] - lag[s - skip] - send[s - skip] for s in measured]
    period_ns = 1_000_000_000 // rate
    starts = [j for j in range(1, len(send)) if lag[j] > LATE_NS >= lag[j - 1]]
    after_slow = sum(1 for j in starts if lag[j - 1] + send[j - 1] - period_ns > LATE_NS // 2)
    print(f"{consumer.name} / {producer.name}: {len(measured)} measured")
    print(
        f"  p50 {_pct([latency[s] for s in measured], 0.5):.0f} us,"
        f" p99 {_pct([latency[s] for s in measured], 0.99):.0f} us"
    )
    print(
        f"  over 2 ms {len(slow)}: sent > 1 ms late {late}, on time with a send > 1 ms"
        f" {slow_send}, stored on time and read late {read_late}"
    )
    print(
        f"  receipt after the send returned: p50 {_pct(after, 0.5):.0f} us,"
        f" p99 {_pct(after, 0.99):.0f} us"
    )
    print(
        f"  stretches > 1 ms late {len(starts)}: after a slow send {after_slow},"
        f" the producer's own gap {len(starts) - after_slow}"
    )
    print(
        f"  send() p50 {_pct(send, 0.5):.0f} p99 {_pct(send, 0.99):.0f}"
        f" p99.9 {_pct(send, 0.999):.0f} max {max(send) / 1e3:.0f} us"
    )


def main() -> None:
    folder = Path(sys.argv[1])
    rate = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000
    by_time = sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime)
    consumers = [path for path in by_time if path.name.startswith("consumer-")]
    producers = [path for path in by_time if path.name.startswith("producer-")]
    for consumer, producer in zip(consumers, producers, strict=True):
        report(consumer, producer, rate)


if __name__ == "__main__":
    main()
