"""A one-at-a-time ``send()``'s round trip, hop by hop: ``python rt_hops.py N`` from a tree's
root with it on ``PYTHONPATH``. A producer process sends N messages back to back (after 3,000
unfollowed) to a broker process with a topic of one queue, both traced by ``bench/_hop_trace.py``
(through the tree's ``bench/_hop_site``); prints each segment's median and 90th percentile over
the sends (about a microsecond an event of tracing included) and the round's median."""

from __future__ import annotations

import bisect
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from multiprocessing.queues import Queue
from pathlib import Path

from bench import _hop_trace
from bench._traced_run import traced_broker, traced_environment

SITE = Path(_hop_trace.__file__).resolve().parent / "_hop_site"
TOPIC = "RT"
WARM_UP = 3_000
ORDER = (
    ("producer", "send_call"),
    ("producer", "offer"),
    ("broker", "request"),
    ("broker", "send_start"),
    ("broker", "queued"),
    ("producer", "send_return"),
)
"""The followed events in order; ``queued``: the send's answer offered (at once since
2026-12-01, in the send's own completion; at the cycle's end before)."""


def _produce(grpc: str, count: int, out: Queue[float]) -> None:
    from aeromq.client import Message
    from aeromq.producer import Producer

    with Producer("rt", grpc) as producer:
        for _ in range(WARM_UP):
            producer.send(Message(TOPIC, b"w" * 100))
        started = time.perf_counter()
        for _ in range(count):
            producer.send(Message(TOPIC, b"m" * 100))
        out.put(count / (time.perf_counter() - started))


def _paths(roles: dict[str, list[_hop_trace.Event]], count: int) -> list[list[int]]:
    """Each followed send's event times in :data:`ORDER`, then the next ``send_call``."""
    times = {
        (role, name): [
            e.t_ns
            for e in roles[role]
            if e.name == name and (role == "broker" or e.thread == "MainThread")
        ]
        for role, name in ORDER
    }
    calls = times[("producer", "send_call")]
    paths = []
    for first in calls[-(count - 500) : -1]:
        path = [first]
        for key in ORDER[1:]:
            found = times[key]
            i = bisect.bisect_left(found, path[-1])
            if i >= len(found):
                break
            path.append(found[i])
        else:
            j = bisect.bisect_right(calls, path[-1])
            if j < len(calls):
                paths.append([*path, calls[j]])
    return paths


def main() -> None:
    count = int(sys.argv[1])
    root = Path(tempfile.mkdtemp(prefix="rt-"))
    trace = root / "trace"
    trace.mkdir()
    try:
        with (
            traced_environment(SITE, {_hop_trace.HOPS_DIR_ENV: str(trace)}),
            traced_broker(root / "b", TOPIC) as broker,
        ):
            context = multiprocessing.get_context("spawn")
            out: Queue[float] = context.Queue()
            producer = context.Process(
                target=_produce, args=(broker.grpc_address, count, out), daemon=True
            )
            producer.start()
            rate = out.get(timeout=300)
            producer.join(60)
            os.kill(broker.pid, signal.SIGUSR1)  # the broker writes its events
            time.sleep(1.0)
        paths = _paths(_hop_trace.load(trace), count)
        print(f"rate {rate:.0f}/s (traced)")
        print(f"{len(paths)} followed")
        names = [name for _, name in ORDER] + ["next send_call"]
        for k in range(1, len(names)):
            steps = sorted(path[k] - path[k - 1] for path in paths)
            print(
                f"{names[k - 1]:>12s} -> {names[k]:<15s} p50 {steps[len(steps) // 2] / 1e3:6.1f} us"
                f"  p90 {steps[len(steps) * 9 // 10] / 1e3:6.1f}"
            )
        rounds = sorted(path[-1] - path[0] for path in paths)
        print(f"round p50 {rounds[len(rounds) // 2] / 1e3:.1f} us")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
