"""The NATS JetStream baseline's worker processes in ``python -m bench broker`` and ``python -m
bench consumer``: the same shapes, messages and reports as those suites' Redis workers.

- :func:`produce`: ``js.publish_async`` 32 x 8 in flight, then every acknowledgement awaited
  (as Redis's pipelined ``XADD`` 32 x 8 per round trip); latency per round.
- :func:`send_sync`: ``await js.publish`` one message at a time (as one ``XADD`` per call).
- :func:`consume`: a durable pull consumer's ``fetch`` (:func:`bench._nats.fetch_next`: up to
  256 messages pending, as Redis's ``COUNT 256``), each message acked; live (end to end) or
  reading what :func:`produce` stored (pull).
- :func:`group_consume`: one of 1 or 3 processes of one durable pull consumer, in the consumer
  suite's loop (``bench.suites.consumer._consume_loop``), 200 ms fetches as Redis's ``BLOCK
  200``.

The bodies and constants come from :mod:`bench.suites.broker`, imported inside each worker:
that module imports this one.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from bench._nats import connect, fetch_next

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event

    from bench.suites.broker import Outbox

__all__ = ["DURABLE", "consume", "group_consume", "produce", "send_sync"]

DURABLE = "bench"
"""The durable pull consumer of every stream (made by :meth:`bench._nats.NatsServer.add_streams`)."""


def produce(url: str, stream: str, count: int, out: Outbox) -> None:
    """``count`` messages published 32 x 8 at a time: ("produced", elapsed ns, latency per
    round ns, CPU s)."""
    from bench.suites.broker import BATCH, WINDOW, _body

    async def run() -> tuple[int, list[int], float]:
        client = await connect(url)
        try:
            publish = client.jetstream().publish_async
            latencies: list[int] = []
            cpu = time.process_time()
            began = time.monotonic_ns()
            step = BATCH * WINDOW
            for start in range(0, count, step):
                sent_ns = time.monotonic_ns()
                acks = [
                    await publish(stream, _body(i)) for i in range(start, min(count, start + step))
                ]
                await asyncio.gather(*acks)
                latencies.append(time.monotonic_ns() - sent_ns)
            return time.monotonic_ns() - began, latencies, time.process_time() - cpu
        finally:
            await client.close()

    out.put(("produced", *asyncio.run(run())))


def send_sync(url: str, stream: str, count: int, out: Outbox) -> None:
    """One ``js.publish`` per message, each awaited: ("produced", elapsed ns, latency per
    message ns, CPU s)."""
    from bench.suites.broker import _body

    async def run() -> tuple[int, list[int], float]:
        client = await connect(url)
        try:
            publish = client.jetstream().publish
            await publish(stream, _body(-1))
            latencies: list[int] = []
            cpu = time.process_time()
            began = time.monotonic_ns()
            for i in range(count):
                sent_ns = time.monotonic_ns()
                await publish(stream, _body(i))
                latencies.append(time.monotonic_ns() - sent_ns)
            return time.monotonic_ns() - began, latencies, time.process_time() - cpu
        finally:
            await client.close()

    out.put(("produced", *asyncio.run(run())))


def consume(url: str, stream: str, count: int, long_poll: bool, out: Outbox) -> None:
    """Read ``count`` messages of ``stream``: ("ready",), then ("consumed", elapsed ns,
    received, fetch latencies ns, end-to-end latencies ns, CPU s), as the Redis consumer of
    ``bench.suites.broker``."""
    from bench.suites.broker import _STAMP

    async def run() -> tuple[int, int, list[int], list[int], float]:
        client = await connect(url)
        try:
            subscription = await client.jetstream().pull_subscribe(stream, durable=DURABLE)
            out.put(("ready",))
            received = pending = began = last_ns = 0
            cpu = 0.0
            fetch_latencies: list[int] = []
            e2e: list[int] = []
            deadline = time.monotonic() + 120
            while received < count and time.monotonic() < deadline:
                sent_ns = time.monotonic_ns()
                messages, pending = await fetch_next(subscription, pending, 1.0)
                now_ns = time.monotonic_ns()
                fetch_latencies.append(now_ns - sent_ns)
                if not messages:
                    continue
                if not began:
                    stamp = _STAMP.unpack_from(messages[0].data, 0)[0]
                    began = min(sent_ns, stamp) if long_poll else sent_ns
                    cpu = time.process_time()
                last_ns = now_ns
                received += len(messages)
                for message in messages:
                    e2e.append(now_ns - _STAMP.unpack_from(message.data, 0)[0])
                    await message.ack()
            return last_ns - began, received, fetch_latencies, e2e, time.process_time() - cpu
        finally:
            await client.close()

    out.put(("consumed", *asyncio.run(run())))


def group_consume(url: str, stream: str, index: int, stop: Event, out: Outbox) -> None:
    """Consumer ``index`` of the durable pull consumer, in the consumer suite's loop."""
    from bench.suites.consumer import _consume_loop

    loop = asyncio.new_event_loop()
    client = loop.run_until_complete(connect(url))
    subscription = loop.run_until_complete(
        client.jetstream().pull_subscribe(stream, durable=DURABLE)
    )
    out.put(("ready", index))
    pending = 0

    async def fetch_bodies() -> list[bytes]:
        nonlocal pending
        messages, pending = await fetch_next(subscription, pending, 0.2)
        for message in messages:
            await message.ack()
        return [message.data for message in messages]

    def close() -> None:
        loop.run_until_complete(client.close())
        loop.close()

    _consume_loop(index, lambda: loop.run_until_complete(fetch_bodies()), stop, out, close)
