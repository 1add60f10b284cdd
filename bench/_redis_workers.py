"""The Redis Streams baseline's worker processes in ``python -m bench broker`` (the consumer
suite uses :func:`produce` too): the same shapes, messages and reports as the suite's aeromq
workers and :mod:`bench._nats_workers`.

- :func:`produce`: ``XADD`` pipelined 32 x 8 per round trip; latency per round.
- :func:`send_sync`: one ``XADD`` per call, each awaited.
- :func:`consume`: a consumer group's ``XREADGROUP COUNT 256 BLOCK``, each entry ``XACK``ed; live
  (end to end) or reading what :func:`produce` stored (pull).

The bodies and constants come from :mod:`bench.suites.broker`, imported inside each worker:
that module imports this one.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.suites.broker import Outbox

__all__ = ["consume", "produce", "send_sync"]


def produce(port: int, stream: str, count: int, out: Outbox) -> None:
    """``count`` entries added 32 x 8 per pipelined round trip: ("produced", elapsed ns, latency
    per round ns, CPU s)."""
    import redis

    from bench.suites.broker import BATCH, WINDOW, _body

    client = redis.Redis(port=port)
    latencies: list[int] = []
    cpu = time.process_time()
    began = time.monotonic_ns()
    step = BATCH * WINDOW
    for start in range(0, count, step):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(count, start + step)):
            pipe.xadd(stream, {"b": _body(i)})
        sent_ns = time.monotonic_ns()
        pipe.execute()
        latencies.append(time.monotonic_ns() - sent_ns)
    elapsed_ns = time.monotonic_ns() - began
    out.put(("produced", elapsed_ns, latencies, time.process_time() - cpu))


def send_sync(port: int, stream: str, count: int, out: Outbox) -> None:
    """One ``XADD`` per call, each waiting for its answer: ("produced", elapsed ns, latency per
    call ns, CPU s)."""
    import redis

    from bench.suites.broker import _body

    client = redis.Redis(port=port)
    client.xadd(stream, {"b": _body(-1)})
    latencies: list[int] = []
    cpu = time.process_time()
    began = time.monotonic_ns()
    for i in range(count):
        sent_ns = time.monotonic_ns()
        client.xadd(stream, {"b": _body(i)})
        latencies.append(time.monotonic_ns() - sent_ns)
    elapsed_ns = time.monotonic_ns() - began
    out.put(("produced", elapsed_ns, latencies, time.process_time() - cpu))


def consume(port: int, stream: str, count: int, long_poll: bool, out: Outbox) -> None:
    """Group reads (``XREADGROUP COUNT 256 BLOCK 1000``), each entry acked, until ``count``: live
    (end to end, ``long_poll``) or reading what :func:`produce` stored (pull). Reports
    ("consumed", elapsed ns, received, latency per read ns, end-to-end latency per entry ns, CPU
    s)."""
    import redis

    from bench.suites.broker import _STAMP, PULL_COUNT

    client: Any = redis.Redis(port=port)  # redis-py types replies as unions of every shape
    out.put(("ready",))
    received = 0
    began = last_ns = 0
    cpu = 0.0
    pull_latencies: list[int] = []
    e2e: list[int] = []
    deadline = time.monotonic() + 120
    while received < count and time.monotonic() < deadline:
        sent_ns = time.monotonic_ns()
        answer = client.xreadgroup("g", "c", {stream: ">"}, count=PULL_COUNT, block=1_000)
        now_ns = time.monotonic_ns()
        pull_latencies.append(now_ns - sent_ns)
        if not answer:
            continue
        entries = answer[0][1]
        if not began:
            stamp = _STAMP.unpack_from(entries[0][1][b"b"], 0)[0]
            began = min(sent_ns, stamp) if long_poll else sent_ns
            cpu = time.process_time()
        last_ns = now_ns
        received += len(entries)
        for _entry_id, fields in entries:
            e2e.append(now_ns - _STAMP.unpack_from(fields[b"b"], 0)[0])
        client.xack(stream, "g", *[entry_id for entry_id, _ in entries])
    out.put(("consumed", last_ns - began, received, pull_latencies, e2e, time.process_time() - cpu))
