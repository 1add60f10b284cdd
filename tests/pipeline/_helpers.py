"""Helpers of the Spark connector tests: send known messages, read a topic back with a
``DefaultLitePullConsumer``."""

from __future__ import annotations

import itertools
import time

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message, MessageExt, MessageQueue
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer

_groups = itertools.count()


def produce(broker: ServerProcess, topic: str, per_queue: int, first: int = 0) -> list[Message]:
    """``per_queue`` messages to each of the topic's 4 queues: body ``b"<queue>-<n>"``, tag
    ``even``/``odd``, key ``k<n>``, a property ``n``; returns them in the order sent."""
    sent: list[Message] = []
    with Producer("pipeline-test-producer", broker.grpc_address) as producer:
        for queue_id in range(4):
            batch = [
                Message(
                    topic,
                    b"%d-%d" % (queue_id, n),
                    tags="even" if n % 2 == 0 else "odd",
                    keys=f"k{n}",
                    properties={"n": str(n)},
                )
                for n in range(first, first + per_queue)
            ]
            producer.send_batch(batch, queue=MessageQueue(topic, broker.name, queue_id))
            sent += batch
    return sent


def consume_all(
    broker: ServerProcess, topic: str, count: int, timeout_s: float = 60.0
) -> list[MessageExt]:
    """Every message of ``topic`` with a fresh group from the first offset, until ``count``
    arrived (or the timeout); then a short wait proves no more come."""
    config = LitePullConsumerConfig(
        consumer_group=f"pipeline-check-{next(_groups)}",
        endpoints=(broker.grpc_address,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=500,
    )
    got: list[MessageExt] = []
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(topic, "*")
    with consumer:
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            got += consumer.poll(500)
        got += consumer.poll(1000)
    return got
