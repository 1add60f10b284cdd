"""``DefaultLitePullConsumer`` end to end on the in-memory broker: assign, subscribe and poll,
seek, metadata, pause and flow control, and the RocketMQ bugs we must not have (RocketMQ's
``DefaultLitePullConsumerTest`` list; its configuration, lifecycle and commits are in
``test_lite_pull_consumer_lifecycle.py``)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from aeromq.client import (
    BrokerUnavailableError,
    IllegalArgumentError,
    IllegalStateError,
    MessageQueue,
    OffsetIllegalError,
)
from aeromq.consumer.config import ConsumeFromWhere, SubscriptionType
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.consumer.testing import InMemoryBroker
from tests.consumer._lite import (
    GROUP,
    TOPIC,
    bodies,
    make,
    poll_until,
    running,
    wait_for,
)

# -- assign, subscribe, poll ----------------------------------------------------------------


def test_should_poll_an_assigned_queue(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    broker.send_many(queues[1], [b"a", b"b", b"c"])
    broker.send_many(queues[2], [b"other"])
    consumer.assign([queues[1]])
    consumer.start()
    got = poll_until(consumer, 3)
    assert bodies(got) == [b"a", b"b", b"c"]
    assert [m.queue_offset for m in got] == [0, 1, 2]
    assert {m.queue for m in got} == {queues[1]}
    assert consumer.assignment() == {queues[1]}
    assert consumer.subscription_type is SubscriptionType.ASSIGN


def test_should_poll_every_queue_of_a_subscribed_topic(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    for queue in queues:
        broker.send_many(queue, [b"%d" % queue.queue_id] * 5)
    consumer.subscribe(TOPIC, "*")
    consumer.start()
    got = poll_until(consumer, 20)
    assert sorted(bodies(got)) == sorted([b"0", b"1", b"2", b"3"] * 5)
    assert consumer.assignment() == set(queues)


def test_should_deliver_only_subscribed_tags(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    for index, tag in enumerate(["TagA", "TagB", "TagC", "TagA"]):
        broker.send(queues[0], b"%d" % index, tags=tag)
    consumer.subscribe(TOPIC, "TagA || TagC")
    consumer.start()
    got = poll_until(consumer, 3)
    assert bodies(got) == [b"0", b"2", b"3"]
    assert not consumer.poll(50)


def test_should_filter_assigned_queues_by_the_expression_for_assign(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    broker.send(queues[0], b"a", tags="TagA")
    broker.send(queues[0], b"b", tags="TagB")
    consumer.set_sub_expression_for_assign(TOPIC, "TagB")
    consumer.assign([queues[0]])
    consumer.start()
    assert bodies(poll_until(consumer, 1)) == [b"b"]
    with pytest.raises(IllegalStateError, match="before start"):
        consumer.set_sub_expression_for_assign(TOPIC, "TagA")
    with pytest.raises(IllegalArgumentError):
        make(broker).set_sub_expression_for_assign(TOPIC, " ")


def test_should_return_up_to_max_poll_records_across_queues(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    """RocketMQ #5498/#1761: one poll is not one message, nor one pull batch here."""
    for queue in queues:
        broker.send_many(queue, [b"m"] * 30)
    consumer = make(broker, max_poll_records=25, pull_batch_size=10)
    consumer.subscribe(TOPIC)
    with running(consumer):
        assert wait_for(lambda: len(consumer._cache) >= 12)
        first = consumer.poll(1000)
        assert len(first) == 25
        assert len({m.queue for m in first}) > 1
        rest = poll_until(consumer, 95)
        assert len(first) + len(rest) == 120
        offsets: dict[MessageQueue, list[int]] = {}
        for message in first + rest:
            offsets.setdefault(message.queue, []).append(message.queue_offset)
        assert all(found == list(range(30)) for found in offsets.values())


def test_should_deliver_messages_sent_while_polling(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    consumer.assign(queues)
    consumer.start()
    assert consumer.poll(50) == []
    threading.Timer(0.05, broker.send, (queues[3], b"late")).start()
    start = time.monotonic()
    assert bodies(consumer.poll(5000)) == [b"late"]
    assert time.monotonic() - start < 2.0


def test_should_forbid_mixing_subscribe_and_assign(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    subscribed = make(broker)
    subscribed.subscribe(TOPIC)
    with pytest.raises(IllegalStateError, match="mutually exclusive"):
        subscribed.assign(queues)
    assigned = make(broker)
    assigned.assign(queues)
    with pytest.raises(IllegalStateError, match="mutually exclusive"):
        assigned.subscribe(TOPIC)


def test_should_refuse_an_empty_assignment(consumer: DefaultLitePullConsumer) -> None:
    with pytest.raises(IllegalArgumentError, match="empty"):
        consumer.assign([])


def test_should_drop_queues_no_longer_assigned(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    consumer.assign(queues[:2])
    consumer.start()
    old = consumer.assigned_queues.state(queues[0])
    consumer.assign(queues[1:3])
    assert consumer.assignment() == set(queues[1:3])
    assert old is not None and old.process_queue.dropped
    broker.send(queues[0], b"gone")
    broker.send(queues[2], b"new")
    assert bodies(poll_until(consumer, 1)) == [b"new"]


def test_should_stop_consuming_an_unsubscribed_topic(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    other = broker.create_topic("Other", 1)
    consumer.subscribe(TOPIC)
    consumer.subscribe("Other")
    consumer.start()
    assert wait_for(lambda: len(consumer.assignment()) == 5)
    consumer.unsubscribe(TOPIC)
    assert consumer.assignment() == set(other)
    broker.send(queues[0], b"unwanted")
    broker.send(other[0], b"wanted")
    assert bodies(poll_until(consumer, 1)) == [b"wanted"]


# -- seek --------------------------------------------------------------------------------


def test_should_seek_within_the_queue(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    broker.send_many(queues[0], [b"%d" % i for i in range(10)])
    consumer.assign([queues[0]])
    consumer.start()
    assert len(poll_until(consumer, 10)) == 10
    consumer.seek(queues[0], 4)
    state = consumer.assigned_queues.state(queues[0])
    assert state is not None and state.consume_offset == 4
    assert bodies(poll_until(consumer, 6)) == [b"%d" % i for i in range(4, 10)]


def test_should_seek_to_begin_and_to_end(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    broker.send_many(queues[0], [b"%d" % i for i in range(10)])
    broker.remove_before(queues[0], 3)
    consumer.assign([queues[0]])
    consumer.start()
    assert len(poll_until(consumer, 7)) == 7
    consumer.seek_to_begin(queues[0])
    assert [m.queue_offset for m in poll_until(consumer, 7)] == list(range(3, 10))
    consumer.seek_to_end(queues[0])
    broker.send(queues[0], b"after")
    assert bodies(poll_until(consumer, 1)) == [b"after"]


def test_should_refuse_an_illegal_seek_offset(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    broker.send_many(queues[0], [b"m"] * 100)
    consumer.assign([queues[0]])
    consumer.start()
    with pytest.raises(OffsetIllegalError, match="min_offset=0") as below:
        consumer.seek(queues[0], -1)
    assert below.value.max_offset == 100  # type: ignore[attr-defined]
    with pytest.raises(OffsetIllegalError, match="max_offset=100"):
        consumer.seek(queues[0], 1000)


def test_should_refuse_to_seek_a_queue_not_assigned(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    assigned = make(broker)
    assigned.assign([queues[0]])
    with running(assigned), pytest.raises(IllegalStateError, match="not in the assigned list"):
        assigned.seek(queues[1], 0)
    subscribed = make(broker, consume_from_where=ConsumeFromWhere.LAST_OFFSET)
    subscribed.subscribe("Missing")
    with running(subscribed), pytest.raises(IllegalStateError, match="may be rebalancing"):
        subscribed.seek(queues[0], 0)


def test_should_refuse_to_seek_before_start(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    consumer.assign([queues[0]])
    with pytest.raises(IllegalStateError, match="not running"):
        consumer.seek(queues[0], 0)


# -- metadata ------------------------------------------------------------------------------


def test_should_find_the_offset_for_a_timestamp(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    for index in range(5):
        broker.send(queues[0], b"m", store_timestamp_ms=10_000 + index * 1000)
    with pytest.raises(IllegalStateError, match="not running"):
        consumer.offset_for_timestamp(queues[0], 12_500)
    consumer.start()
    assert consumer.offset_for_timestamp(queues[0], 12_500) == 3
    assert consumer.offset_for_timestamp(queues[0], 0) == 0


def test_should_fetch_the_queues_of_a_topic(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    consumer.start()
    assert consumer.fetch_message_queues(TOPIC) == set(queues)


def test_should_tell_the_listener_when_the_queues_of_a_topic_change(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    consumer = make(broker, topic_metadata_check_interval_ms=20)
    seen: list[tuple[str, set[MessageQueue]]] = []
    consumer.register_topic_message_queue_change_listener(
        TOPIC, lambda topic, found: seen.append((topic, found))
    )
    with running(consumer):
        assert not wait_for(lambda: bool(seen), 0.1)
        more = broker.create_topic(TOPIC, 6)
        assert wait_for(lambda: bool(seen), 5)
        assert seen[0] == (TOPIC, set(more))


def test_should_pass_new_endpoints_to_the_broker_api(
    broker: InMemoryBroker, consumer: DefaultLitePullConsumer
) -> None:
    consumer.start()
    consumer.update_name_server_address("127.0.0.1:1;127.0.0.1:2")
    assert broker.endpoints == ("127.0.0.1:1", "127.0.0.1:2")
    assert consumer.config.endpoints == ("127.0.0.1:1", "127.0.0.1:2")


# -- pause, drop, flow control ----------------------------------------------------------------


def test_should_not_pull_a_paused_queue_until_resumed(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    broker.send(queues[0], b"a")
    consumer.assign([queues[0]])
    consumer.pause([queues[0]])
    consumer.start()
    assert consumer.poll(100) == []
    assert consumer.flow_control_counters.paused >= 1
    consumer.resume([queues[0]])
    assert bodies(poll_until(consumer, 1)) == [b"a"]


def test_should_skip_requests_of_a_dropped_process_queue(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    broker.send_many(queues[0], [b"m"] * 5)
    consumer.assign([queues[0]])
    consumer.pause([queues[0]])
    consumer.start()
    assert consumer.poll(50) == []
    state = consumer.assigned_queues.state(queues[0])
    assert state is not None
    consumer.resume([queues[0]])
    assert wait_for(lambda: len(consumer._cache) >= 1)
    state.process_queue.dropped = True
    assert consumer.poll(100) == []


@pytest.mark.parametrize(
    ("changes", "counter"),
    [
        ({"pull_threshold_for_all": 1, "pull_batch_size": 1}, "consume_request"),
        ({"pull_threshold_for_queue": 1, "pull_batch_size": 2}, "queue"),
        ({"pull_threshold_size_for_queue_mib": 1, "pull_batch_size": 3}, "queue"),
        ({"consume_max_span": 1, "pull_batch_size": 3}, "queue_max_span"),
    ],
)
def test_should_flow_control_each_threshold(
    broker: InMemoryBroker, queues: list[MessageQueue], changes: dict[str, int], counter: str
) -> None:
    body = b"x" * (512 * 1024) if "pull_threshold_size_for_queue_mib" in changes else b"x"
    broker.send_many(queues[0], [body] * 6)
    consumer = make(broker, pull_time_delay_ms_when_flow_control=10, **changes)
    consumer.assign([queues[0]])
    with running(consumer):
        assert wait_for(lambda: getattr(consumer.flow_control_counters, counter) >= 2)
        assert len(poll_until(consumer, 6)) == 6


# -- RocketMQ bugs, end to end -------------------------------------------------------------------


def test_should_not_reconsume_from_min_when_the_start_offset_fails_bug_10176(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[0], [b"%d" % i for i in range(10)])
    broker.commit_offset(GROUP, queues[0], 6)
    broker.fail_next("query_offset", BrokerUnavailableError("down"), times=2)
    consumer = make(broker)
    consumer.assign([queues[0]])
    with running(consumer):
        got = poll_until(consumer, 4)
        assert [m.queue_offset for m in got] == [6, 7, 8, 9]
        assert consumer.poll(50) == []
    assert all(offset >= 0 for _, offset in broker.pull_log)
    # start() tried first (it fixes start offsets: the failure leaves the queue at -1), then
    # the pull task once more.
    assert consumer.flow_control_counters.offset_errors == 1


def test_should_hand_queues_over_within_a_second_on_join_and_clean_leave(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    more = broker.create_topic(TOPIC, 4, ("broker-b",))
    everything = set(queues) | set(more)
    first = make(broker, rebalance_interval_ms=60_000, instance_name="first")
    second = make(broker, rebalance_interval_ms=60_000, instance_name="second")
    for consumer in (first, second):
        consumer.subscribe(TOPIC)
    first.start()
    try:
        assert wait_for(lambda: first.assignment() == everything, 2)
        joined = time.monotonic()
        second.start()
        assert wait_for(lambda: len(first.assignment()) == 4 and len(second.assignment()) == 4, 1.0)
        assert time.monotonic() - joined < 1.0
        assert first.assignment() | second.assignment() == everything
        sent = 0
        for queue in sorted(everything):
            broker.send_many(queue, [b"%d" % (sent + i) for i in range(25)])
            sent += 25
        got: list[Any] = []
        deadline = time.monotonic() + 10
        while len(got) < 200 and time.monotonic() < deadline:
            got.extend(first.poll(20))
            got.extend(second.poll(20))
        assert len(got) == 200
        left = time.monotonic()
        second.shutdown()
        assert wait_for(lambda: first.assignment() == everything, 1.0)
        assert time.monotonic() - left < 1.0
        broker.send(more[3], b"after")
        assert bodies(poll_until(first, 1)) == [b"after"]
    finally:
        second.shutdown()
        first.shutdown()
