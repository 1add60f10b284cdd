"""Helpers for the lite pull consumer tests: a pull-task harness on the in-memory broker, and a
consumer made fast for tests (``FAST``, :func:`make`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aeromq.client import MessageExt, MessageQueue, SubscriptionData, build_subscription_data
from aeromq.consumer.assigned_queues import AssignedMessageQueue
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
from aeromq.consumer.consume_request_cache import ConsumeRequestCache
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.consumer.pull_task import FlowControlCounters, PullTask, PullTaskContext, PullTaskTable
from aeromq.consumer.testing import InMemoryBroker, ManualScheduler

TOPIC = "TopicTest"
GROUP = "group_test"


def config(**changes: Any) -> LitePullConsumerConfig:
    return LitePullConsumerConfig(consumer_group=GROUP, **changes)


class Harness:
    """Pull tasks of one consumer, driven step by step: a manual scheduler, a recording
    executor, the in-memory broker. Each run is one step unless ``run_on_answer`` (a task
    then runs on from the thread that read an answer, as a consumer's tasks do)."""

    def __init__(
        self, broker: InMemoryBroker, *, run_on_answer: bool = False, **changes: Any
    ) -> None:
        self.broker = broker
        self.config = config(**changes)
        self.assigned = AssignedMessageQueue()
        self.cache = ConsumeRequestCache()
        self.scheduler = ManualScheduler()
        self.counters = FlowControlCounters()
        self.executed: list[Callable[[], None]] = []
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.start_offset: Callable[[MessageQueue], int] = lambda queue: 0
        self.context = PullTaskContext(
            config=self.config,
            broker_api=broker,
            assigned=self.assigned,
            cache=self.cache,
            scheduler=self.scheduler,
            executor=self.executed.append,
            subscription_for=lambda topic: self.subscriptions.get(
                topic, build_subscription_data(topic, "*")
            ),
            compute_start_offset=lambda queue: self.start_offset(queue),
            counters=self.counters,
            run_on_answer=run_on_answer,
        )
        self.tasks = PullTaskTable(self.context)

    def task(self, queue: MessageQueue) -> PullTask:
        return PullTask(queue, self.context)

    def run_executed(self) -> None:
        while self.executed:
            self.executed.pop(0)()


def poll_until(
    consumer: DefaultLitePullConsumer,
    count: int,
    timeout_s: float = 10.0,
    poll_ms: int = 100,
) -> list[MessageExt]:
    """Poll until ``count`` messages or ``timeout_s``; what was polled."""
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got.extend(consumer.poll(poll_ms))
    return got


def wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


@contextmanager
def running(consumer: DefaultLitePullConsumer) -> Iterator[DefaultLitePullConsumer]:
    consumer.start()
    try:
        yield consumer
    finally:
        consumer.shutdown()


FAST: dict[str, Any] = {  # short delays and holds: the tests wait less
    "pull_time_delay_ms_when_pause": 20,
    "pull_time_delay_ms_when_exception": 20,
    "broker_suspend_max_time_ms": 300,
    "consume_from_where": ConsumeFromWhere.FIRST_OFFSET,
}


def make(broker: InMemoryBroker, **changes: Any) -> DefaultLitePullConsumer:
    """A consumer of :func:`config` with ``FAST`` and ``changes``, on ``broker``."""
    return DefaultLitePullConsumer(config=config(**{**FAST, **changes}), broker_api=broker)


def bodies(messages: list[Any]) -> list[bytes]:
    """The bodies of ``messages``, in order."""
    return [message.body for message in messages]
