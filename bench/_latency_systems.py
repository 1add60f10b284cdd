"""Each system's producer and consumer of ``python -m bench latency``, as a user of its client
writes them: one message per send, awaited; a consumer on the client's defaults where it has
them. Each is the target of a spawned process (:mod:`bench._latency_roles` runs the steps).

- aeromq: ``Producer.send(Message(topic, body))`` (acknowledged) and a
  ``DefaultLitePullConsumer`` on its defaults (subscribe, ``poll()``); ``transport`` is
  ``"auto"`` (IPC through the broker's media driver, on one host) or ``"udp"`` (each client's
  own embedded media driver, the broker's UDP ingress on 127.0.0.1). Their processes' garbage
  collector is Python's default unless ``AEROMQ_BENCH_CLIENT_GC=tuned`` asks for
  ``aeromq.common.tune_gc()`` once the client has started (each row's ``gc``).
- Redis Streams (redis-py): ``XADD`` one at a time; the consumer, of a group, ``XREADGROUP
  COUNT 100 BLOCK 1000`` then ``XACK`` of what it read.
- NATS JetStream (nats-py): ``await js.publish(...)`` one at a time (it waits for the
  stream's acknowledgement); a durable pull consumer's ``fetch``
  (:func:`bench._nats.fetch_next`), each message acked.
- The floor: no broker; the producer writes each body to a pipe, a relay process
  (:func:`bench._latency_roles.relay`) copies it to a second pipe, the consumer reads it.

The time a fetch returned is read as soon as its call returns, before its messages are
unpacked or acknowledged; the send's duration is that of the send call alone.
"""

from __future__ import annotations

import asyncio
import time
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from bench._gc_stats import client_gc
from bench._latency_roles import Link, consume, consume_async, produce, produce_async
from bench._nats import connect, fetch_next
from bench._schedule import Plan

if TYPE_CHECKING:  # redis-py is in the bench extra: imported where a Redis case runs
    from redis.typing import EncodableT, FieldT

__all__ = [
    "LATENCY_GROUP",
    "aeromq_consumer",
    "aeromq_producer",
    "floor_consumer",
    "floor_producer",
    "nats_consumer",
    "nats_producer",
    "redis_consumer",
    "redis_producer",
]

LATENCY_GROUP = "latency"
"""The consumer group (aeromq, Redis) or durable consumer (NATS) of every run."""
_REDIS_COUNT = 100
_BLOCK_MS = 1_000


def aeromq_producer(grpc: str, topic: str, transport: str, plan: Plan, link: Link) -> None:
    """``Producer.send`` one message at a time over ``transport``."""
    from aeromq.client import Message
    from aeromq.producer import Producer, ProducerConfig

    with Producer("latency-producer", grpc, config=ProducerConfig(transport=transport)) as producer:
        _tune_gc_if_asked()
        produce(plan, link, producer.send, lambda body: Message(topic, body))


def aeromq_consumer(grpc: str, topic: str, transport: str, plan: Plan, link: Link) -> None:
    """A ``DefaultLitePullConsumer`` on its defaults, ``poll()`` in a loop."""
    from aeromq import consumer

    config = consumer.LitePullConsumerConfig(
        consumer_group=LATENCY_GROUP, endpoints=(grpc,), transport=transport
    )
    lite = consumer.DefaultLitePullConsumer(config=config)
    lite.subscribe(topic, "*")
    lite.start()
    _tune_gc_if_asked()
    poll = lite.poll
    clock = time.monotonic_ns

    def fetch() -> tuple[int, list[bytes]]:
        messages = poll()
        now_ns = clock()
        return now_ns, [message.body for message in messages]

    try:
        consume(plan, link, fetch)
    finally:
        lite.shutdown()


def _tune_gc_if_asked() -> None:
    """``aeromq.common.tune_gc()`` once the client has started, when the run asks for it
    (``AEROMQ_BENCH_CLIENT_GC=tuned``: its rows say ``"gc": "tuned"``); else the collector
    stays as a user's process has it."""
    if client_gc() == "tuned":
        from aeromq.common import tune_gc

        tune_gc()


def redis_producer(port: int, stream: str, plan: Plan, link: Link) -> None:
    """``XADD`` one entry at a time."""
    import redis

    client = redis.Redis(port=port)
    xadd = client.xadd

    def entry(body: bytes) -> dict[FieldT, EncodableT]:
        return {"b": body}

    try:
        produce(plan, link, lambda fields: xadd(stream, fields), entry)
    finally:
        client.close()


def redis_consumer(port: int, stream: str, plan: Plan, link: Link) -> None:
    """``XREADGROUP ... BLOCK`` of the group, then ``XACK`` of what came."""
    import redis

    client: Any = redis.Redis(port=port)  # redis-py types replies as unions of every shape
    read, ack = client.xreadgroup, client.xack
    clock = time.monotonic_ns

    def fetch() -> tuple[int, list[bytes]]:
        answer = read(LATENCY_GROUP, "c", {stream: ">"}, count=_REDIS_COUNT, block=_BLOCK_MS)
        now_ns = clock()
        if not answer:
            return now_ns, []
        entries = answer[0][1]
        ack(stream, LATENCY_GROUP, *[entry_id for entry_id, _ in entries])
        return now_ns, [fields[b"b"] for _, fields in entries]

    try:
        consume(plan, link, fetch)
    finally:
        client.close()


def nats_producer(url: str, stream: str, plan: Plan, link: Link) -> None:
    """``await js.publish`` one message at a time (each waits for the stream's ack)."""

    async def run() -> None:
        client = await connect(url)
        try:
            publish = client.jetstream().publish
            await produce_async(plan, link, lambda body: publish(stream, body))
        finally:
            await client.close()

    asyncio.run(run())


def nats_consumer(url: str, stream: str, plan: Plan, link: Link) -> None:
    """A durable pull consumer's ``fetch`` (one message held when none is pending, else what
    is pending), each message acked."""

    async def run() -> None:
        client = await connect(url)
        try:
            subscription = await client.jetstream().pull_subscribe(stream, durable=LATENCY_GROUP)
            pending = 0
            clock = time.monotonic_ns

            async def fetch() -> tuple[int, list[bytes]]:
                nonlocal pending
                messages, pending = await fetch_next(subscription, pending, _BLOCK_MS / 1000)
                now_ns = clock()
                for message in messages:
                    await message.ack()
                return now_ns, [message.data for message in messages]

            await consume_async(plan, link, fetch)
        finally:
            await client.close()

    asyncio.run(run())


def floor_producer(sink: Connection, plan: Plan, link: Link) -> None:
    """Each body written to the relay's pipe."""
    try:
        produce(plan, link, sink.send_bytes, bytes)
    finally:
        sink.close()


def floor_consumer(source: Connection, plan: Plan, link: Link) -> None:
    """Each body read from the relay's pipe, one wake-up per message (a wait for it to be
    readable, bounded as the others' fetches are, then the read)."""
    readable, receive = source.poll, source.recv_bytes
    clock = time.monotonic_ns

    def fetch() -> tuple[int, list[bytes]]:
        if not readable(_BLOCK_MS / 1000):
            return clock(), []
        data = receive()
        return clock(), [data]

    try:
        consume(plan, link, fetch)
    finally:
        source.close()
