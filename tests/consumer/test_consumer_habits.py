"""``DefaultLitePullConsumer`` on the in-memory broker: the start offset fixed at allocation,
argument and lifecycle checks (issue 14, points 1, 3 and 4), and the Python habits: iteration,
the context manager, ``position``, ``beginning_offsets``, ``end_offsets`` and a value
deserializer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from aeromq.client import (
    IllegalArgumentError,
    IllegalStateError,
    InvalidExpressionError,
    MessageQueue,
    MessageSelector,
)
from aeromq.consumer.config import ConsumeFromWhere
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.consumer.testing import InMemoryBroker
from tests.consumer._lite import TOPIC, config, poll_until, running, wait_for

FAST: dict[str, Any] = {
    "pull_time_delay_ms_when_pause": 20,
    "pull_time_delay_ms_when_exception": 20,
    "broker_suspend_max_time_ms": 300,
}


def make(broker: InMemoryBroker, **changes: Any) -> DefaultLitePullConsumer:
    return DefaultLitePullConsumer(config=config(**{**FAST, **changes}), broker_api=broker)


@pytest.fixture
def queues(broker: InMemoryBroker) -> list[MessageQueue]:
    return broker.create_topic(TOPIC, 4)


@pytest.fixture
def consumer(broker: InMemoryBroker) -> Iterator[DefaultLitePullConsumer]:
    instance = make(broker)
    try:
        yield instance
    finally:
        instance.shutdown()


# -- point 1: the start offset is fixed when the queue is allocated ----------------------


def test_should_fix_last_offset_starts_before_start_returns(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    for queue in queues:
        broker.send_many(queue, [b"before"] * 2)
    consumer.subscribe(TOPIC)
    consumer.start()
    assert consumer.assignment() == set(queues)
    assert all(consumer.position(queue) == 2 for queue in queues)
    for queue in queues:
        broker.send(queue, b"after")
    got = poll_until(consumer, 4)
    assert sorted(m.body for m in got) == [b"after"] * 4


def test_should_deliver_what_was_sent_while_paused_before_start(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    broker.send_many(queues[0], [b"old"])
    consumer.assign([queues[0]])
    consumer.pause([queues[0]])
    consumer.start()
    broker.send_many(queues[0], [b"while paused"] * 3)
    assert consumer.poll(100) == []
    consumer.resume([queues[0]])
    assert [m.body for m in poll_until(consumer, 3)] == [b"while paused"] * 3


def test_should_fix_the_start_of_a_queue_assigned_while_running_before_it_is_owned(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    consumer.assign([queues[0]])
    consumer.start()
    broker.send_many(queues[1], [b"old"] * 2)
    consumer.assign([queues[0], queues[1]])
    assert consumer.position(queues[1]) == 2
    broker.send(queues[1], b"new")
    assert [m.body for m in poll_until(consumer, 1)] == [b"new"]


# -- point 3: assign and set_sub_expression_for_assign check topics as subscribe does ----


@pytest.mark.parametrize("topic", ["", "bad topic", "a/b"])
def test_should_refuse_a_bad_topic_in_assign_and_set_sub_expression(
    consumer: DefaultLitePullConsumer, topic: str
) -> None:
    with pytest.raises(IllegalArgumentError):
        consumer.subscribe(topic)
    with pytest.raises(IllegalArgumentError):
        consumer.assign([MessageQueue(topic, "broker-a", 0)])
    with pytest.raises(IllegalArgumentError):
        consumer.set_sub_expression_for_assign(topic, "*")
    assert consumer.assignment() == set()


@pytest.mark.parametrize(
    "queue",
    [MessageQueue(TOPIC, "", 0), MessageQueue(TOPIC, "broker-a", -1), ("TopicTest", "b", 0)],
    ids=["no-broker", "negative-id", "not-a-queue"],
)
def test_should_refuse_a_malformed_queue_in_assign(
    consumer: DefaultLitePullConsumer, queue: Any
) -> None:
    with pytest.raises(IllegalArgumentError):
        consumer.assign([queue])
    assert consumer.assignment() == set()


def test_should_refuse_a_sql_expression_that_does_not_compile_at_subscribe(
    consumer: DefaultLitePullConsumer,
) -> None:
    with pytest.raises(InvalidExpressionError) as raised:
        consumer.subscribe(TOPIC, MessageSelector.by_sql("a > 1 AND (b = 'x'"))
    assert raised.value.values["position"] == 18  # the end: a ")" is missing
    consumer.subscribe(TOPIC, MessageSelector.by_sql("a > 1 AND (b = 'x')"))


# -- point 4: a shut-down consumer refuses subscribe and assign ---------------------------


def test_should_refuse_subscribe_assign_and_unsubscribe_after_shutdown(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    subscribed = make(broker)
    subscribed.subscribe(TOPIC)
    with running(subscribed):
        pass
    with pytest.raises(IllegalStateError, match="shut down"):
        subscribed.subscribe("OtherTopic")
    with pytest.raises(IllegalStateError, match="shut down"):
        subscribed.unsubscribe(TOPIC)
    assigned = make(broker)
    assigned.assign([queues[0]])
    with running(assigned):
        pass
    with pytest.raises(IllegalStateError, match="shut down"):
        assigned.assign([queues[1]])
    assert assigned.assignment() == {queues[0]}


# -- Python habits -------------------------------------------------------------------------


def test_should_iterate_messages_until_shutdown_from_another_thread(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[0], [b"%d" % index for index in range(5)])
    consumer = make(broker, consume_from_where=ConsumeFromWhere.FIRST_OFFSET, poll_timeout_ms=200)
    consumer.assign([queues[0]])
    got: list[bytes] = []
    with consumer:
        for message in consumer:
            got.append(message.body)
            if len(got) == 5:
                threading.Thread(target=consumer.shutdown).start()
    assert got == [b"0", b"1", b"2", b"3", b"4"]
    assert not consumer.is_running


def test_should_start_once_in_a_with_block_and_refuse_to_enter_again(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    consumer = make(broker)
    consumer.assign([queues[0]])
    consumer.start()
    with consumer as entered:  # entering a started consumer does not start it again
        assert entered is consumer and consumer.is_running
    assert not consumer.is_running
    with pytest.raises(IllegalStateError), consumer:
        pass
    with pytest.raises(IllegalStateError):
        next(iter(consumer))


def test_should_give_position_beginning_and_end_offsets(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[0], [b"m"] * 6)
    consumer = make(broker, consume_from_where=ConsumeFromWhere.FIRST_OFFSET)
    consumer.assign([queues[0]])
    with running(consumer):
        assert consumer.position(queues[0]) == 0
        assert len(poll_until(consumer, 6)) == 6
        assert consumer.position(queues[0]) == 6
        consumer.seek(queues[0], 2)
        assert consumer.position(queues[0]) == 2
        assert consumer.beginning_offsets(queues[:2]) == {queues[0]: 0, queues[1]: 0}
        assert consumer.end_offsets(queues[:2]) == {queues[0]: 6, queues[1]: 0}
        with pytest.raises(IllegalStateError, match="not in the assigned list"):
            consumer.position(queues[1])


def test_should_deserialize_values_and_keep_the_body(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[0], [json.dumps({"n": index}).encode() for index in range(3)])
    consumer = DefaultLitePullConsumer(
        config=config(**FAST, consume_from_where=ConsumeFromWhere.FIRST_OFFSET),
        broker_api=broker,
        value_deserializer=json.loads,
    )
    consumer.assign([queues[0]])
    with running(consumer):
        got = poll_until(consumer, 3)
    assert [m.value for m in got] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert got[0].body == b'{"n": 0}'


def test_should_give_the_body_as_value_without_a_deserializer(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    consumer.assign([queues[0]])
    consumer.start()
    broker.send(queues[0], b"raw")
    assert [m.value for m in poll_until(consumer, 1)] == [b"raw"]


def test_should_refuse_a_deserializer_that_is_not_callable(broker: InMemoryBroker) -> None:
    with pytest.raises(IllegalArgumentError, match="callable"):
        DefaultLitePullConsumer(config=config(), broker_api=broker, value_deserializer=b"x")  # type: ignore[arg-type]


def test_should_call_delivery_listeners_when_messages_arrive_and_at_shutdown(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    calls: list[int] = []
    consumer.add_delivery_listener(lambda: calls.append(1))
    consumer.assign([queues[0]])
    consumer.start()
    broker.send(queues[0], b"x")
    assert wait_for(lambda: len(calls) >= 1)
    before = len(calls)
    consumer.shutdown()
    assert len(calls) == before + 1


def test_should_own_a_topic_subscribed_while_running_when_subscribe_returns(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    other = broker.create_topic("OtherTopic", 2)
    consumer.subscribe("OtherTopic")
    consumer.start()
    for queue in queues:
        broker.send(queue, b"before")
    consumer.subscribe(TOPIC)
    assert consumer.assignment() == set(queues) | set(other)
    for queue in queues:
        broker.send(queue, b"after")
    assert sorted(m.body for m in poll_until(consumer, 4)) == [b"after"] * 4


def test_should_commit_and_drop_every_queue_at_shutdown_so_a_late_poll_returns_nothing(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[0], [b"m"] * 30)
    consumer = make(broker, consume_from_where=ConsumeFromWhere.FIRST_OFFSET, max_poll_records=10)
    consumer.assign([queues[0]])
    consumer.start()
    state = consumer.assigned_queues.state(queues[0])
    assert state is not None
    assert len(poll_until(consumer, 10)) == 10
    assert wait_for(lambda: state.process_queue.msg_count > 0)  # more cached, not polled
    consumer.shutdown()
    assert state.process_queue.dropped
    assert broker.committed_offset("group_test", queues[0]) == 10
