"""``AsyncLitePullConsumer`` on the in-memory broker: awaited polls woken by deliveries (no
thread per wait), ``async for`` until shutdown, ``async with`` starting once."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from aeromq.aio import AsyncLitePullConsumer
from aeromq.client import IllegalStateError, MessageExt
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
from aeromq.consumer.testing import InMemoryBroker

pytestmark = pytest.mark.anyio

TOPIC = "AsyncTopic"


def make(broker: InMemoryBroker, **changes: Any) -> AsyncLitePullConsumer:
    values: dict[str, Any] = {
        "consumer_group": "async_group",
        "broker_suspend_max_time_ms": 300,
        "consume_from_where": ConsumeFromWhere.FIRST_OFFSET,
        **changes,
    }
    return AsyncLitePullConsumer(config=LitePullConsumerConfig(**values), broker_api=broker)


async def poll_until(
    consumer: AsyncLitePullConsumer, count: int, timeout_s: float = 10.0
) -> list[MessageExt]:
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got.extend(await consumer.poll(200))
    return got


async def test_should_wake_waiting_polls_on_a_delivery_without_a_thread_per_wait(
    broker: InMemoryBroker,
) -> None:
    queues = broker.create_topic(TOPIC, 4)
    consumer = make(broker)
    consumer.sync.subscribe(TOPIC)
    async with consumer:
        await consumer.poll(50)  # the consumer's own workers start lazily: let them
        threads_before = threading.active_count()
        waiting = [asyncio.create_task(consumer.poll(20_000)) for _ in range(20)]
        await asyncio.sleep(0.2)
        assert not any(task.done() for task in waiting)
        # twenty waits, no thread of their own: a thread per wait would add 20; the margin of 2
        # is for a worker of the consumer's that starts late on a loaded machine (seen once)
        assert threading.active_count() <= threads_before + 2
        broker.send(queues[2], b"wake")
        done, _ = await asyncio.wait(waiting, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        assert done, "no waiting poll woke within 10 s of a delivery"
        await consumer.shutdown()  # the other waits end at once
        polled = await asyncio.wait_for(asyncio.gather(*waiting), 10)
    assert [m.body for batch in polled for m in batch] == [b"wake"]


async def test_should_return_nothing_after_the_timeout(broker: InMemoryBroker) -> None:
    broker.create_topic(TOPIC, 1)
    consumer = make(broker)
    await consumer.subscribe(TOPIC)
    async with consumer:
        started = time.monotonic()
        assert await consumer.poll(100) == []
        assert time.monotonic() - started >= 0.09


async def test_should_iterate_until_shutdown(broker: InMemoryBroker) -> None:
    (queue,) = broker.create_topic(TOPIC, 1)
    broker.send_many(queue, [b"%d" % index for index in range(5)])
    consumer = make(broker, poll_timeout_ms=200)
    await consumer.assign([queue])
    got: list[bytes] = []
    async with consumer:
        async for message in consumer:
            got.append(message.body)
            if len(got) == 5:
                await consumer.shutdown()
    assert got == [b"0", b"1", b"2", b"3", b"4"]
    assert not consumer.is_running


async def test_should_end_a_waiting_iteration_when_shut_down(broker: InMemoryBroker) -> None:
    broker.create_topic(TOPIC, 1)
    consumer = make(broker, poll_timeout_ms=30_000)
    await consumer.subscribe(TOPIC)
    await consumer.start()

    async def drain() -> list[MessageExt]:
        return [message async for message in consumer]

    iteration = asyncio.create_task(drain())
    await asyncio.sleep(0.2)
    await consumer.shutdown()
    assert await asyncio.wait_for(iteration, 10) == []


async def test_should_start_once_and_refuse_a_second_entry(broker: InMemoryBroker) -> None:
    (queue,) = broker.create_topic(TOPIC, 1)
    consumer = make(broker)
    await consumer.assign([queue])
    await consumer.start()
    async with consumer:
        assert consumer.is_running
        assert consumer.assignment() == {queue}
    with pytest.raises(IllegalStateError):
        async with consumer:
            pass
    with pytest.raises(IllegalStateError):
        await consumer.poll(0)


async def test_should_give_offsets_and_commit(broker: InMemoryBroker) -> None:
    queues = broker.create_topic(TOPIC, 2)
    broker.send_many(queues[0], [b"m"] * 4)
    consumer = make(broker, auto_commit=False)
    await consumer.assign([queues[0]])
    async with consumer:
        assert len(await poll_until(consumer, 4)) == 4
        assert await consumer.position(queues[0]) == 4
        assert await consumer.end_offsets(queues) == {queues[0]: 4, queues[1]: 0}
        assert await consumer.beginning_offsets(queues) == {queues[0]: 0, queues[1]: 0}
        await consumer.commit()
        assert await consumer.committed(queues[0]) == 4
        await consumer.seek(queues[0], 1)
        assert [m.queue_offset for m in await poll_until(consumer, 3)] == [1, 2, 3]
