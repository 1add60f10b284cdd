"""``DefaultLitePullConsumer`` end to end on the in-memory broker: RocketMQ's
``DefaultLitePullConsumerTest`` list, and the RocketMQ bugs we must not have."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aeromq.client import (
    BrokerUnavailableError,
    IllegalArgumentError,
    IllegalStateError,
    MessageQueue,
    OffsetIllegalError,
)
from aeromq.consumer.config import ConsumeFromWhere, MessageModel, SubscriptionType
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer, ServiceState
from aeromq.consumer.testing import InMemoryBroker
from tests.consumer._lite import GROUP, TOPIC, config, poll_until, running, wait_for

FAST: dict[str, Any] = {
    "pull_time_delay_ms_when_pause": 20,
    "pull_time_delay_ms_when_exception": 20,
    "broker_suspend_max_time_ms": 300,
    "consume_from_where": ConsumeFromWhere.FIRST_OFFSET,
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


def bodies(messages: list[Any]) -> list[bytes]:
    return [message.body for message in messages]


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


# -- configuration and lifecycle -------------------------------------------------------------


def test_should_check_the_config_before_anything_starts() -> None:
    with pytest.raises(IllegalArgumentError, match="DEFAULT_CONSUMER"):
        DefaultLitePullConsumer("DEFAULT_CONSUMER")
    with pytest.raises(IllegalArgumentError, match="consumer_timeout_ms_when_suspend"):
        config(consumer_timeout_ms_when_suspend=1)
    with pytest.raises(IllegalArgumentError, match="differs"):
        DefaultLitePullConsumer("other", config=config())
    with pytest.raises(IllegalArgumentError):
        DefaultLitePullConsumer()


def test_should_change_the_config_only_before_start(
    broker: InMemoryBroker, consumer: DefaultLitePullConsumer
) -> None:
    consumer.config = consumer.config.replace(pull_batch_size=32)
    assert consumer.config.pull_batch_size == 32
    consumer.start()
    with pytest.raises(IllegalStateError, match="before start"):
        consumer.config = consumer.config.replace(pull_batch_size=16)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (ConsumeFromWhere.LAST_OFFSET, [b"new"]),
        (ConsumeFromWhere.FIRST_OFFSET, [b"old0", b"old1", b"old2", b"new"]),
        (ConsumeFromWhere.TIMESTAMP, [b"old2", b"new"]),
    ],
)
def test_should_start_where_consume_from_where_says(
    broker: InMemoryBroker,
    queues: list[MessageQueue],
    where: ConsumeFromWhere,
    expected: list[bytes],
) -> None:
    now_ms = int(time.time() * 1000)
    for index, age_ms in enumerate((3_600_000, 2_400_000, 60_000)):
        broker.send(queues[0], b"old%d" % index, store_timestamp_ms=now_ms - age_ms)
    consumer = make(broker, consume_from_where=where)
    consumer.subscribe(TOPIC)
    with running(consumer):
        assert wait_for(lambda: len(consumer.assignment()) == 4)
        state = consumer.assigned_queues.state(queues[0])
        assert wait_for(lambda: state is not None and state.pull_offset >= 0)
        broker.send(queues[0], b"new")
        assert bodies(poll_until(consumer, len(expected))) == expected


def test_should_refuse_to_start_twice_and_to_poll_when_not_running(
    broker: InMemoryBroker, consumer: DefaultLitePullConsumer
) -> None:
    with pytest.raises(IllegalStateError, match="not running"):
        consumer.poll(0)
    consumer.start()
    with pytest.raises(IllegalStateError, match="started once"):
        consumer.start()
    with pytest.raises(IllegalArgumentError, match="negative"):
        consumer.poll(-1)
    consumer.shutdown()
    assert not consumer.is_running
    assert consumer.service_state is ServiceState.SHUTDOWN_ALREADY
    consumer.shutdown()
    with pytest.raises(IllegalStateError, match="not running"):
        consumer.poll(0)
    with pytest.raises(IllegalStateError):
        consumer.start()


def test_should_stop_a_polling_thread_on_shutdown(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    consumer = make(broker)
    consumer.subscribe(TOPIC)
    consumer.start()
    stopped = threading.Event()

    def loop() -> None:
        try:
            while consumer.is_running:
                consumer.poll(2000)
        except IllegalStateError:
            pass
        stopped.set()

    threading.Thread(target=loop, daemon=True).start()
    time.sleep(0.05)
    start = time.monotonic()
    consumer.shutdown()
    assert stopped.wait(5)
    assert time.monotonic() - start < 2.0
    assert not consumer.is_running


def test_should_start_and_shut_down_as_a_context_manager(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send(queues[0], b"a")
    consumer = make(broker)
    consumer.assign([queues[0]])
    with consumer as entered:
        assert entered is consumer and consumer.is_running
        assert bodies(poll_until(consumer, 1)) == [b"a"]
    assert not consumer.is_running
    assert broker.committed_offset(GROUP, queues[0]) == 1


def test_should_fail_to_start_without_endpoints() -> None:
    consumer = DefaultLitePullConsumer(GROUP)
    with pytest.raises(IllegalArgumentError, match="endpoints"):
        consumer.start()
    assert consumer.service_state is ServiceState.START_FAILED
    consumer.shutdown()
    assert consumer.service_state is ServiceState.SHUTDOWN_ALREADY


# -- commit ----------------------------------------------------------------------------------


def test_should_commit_a_map_and_read_it_back(
    broker: InMemoryBroker, queues: list[MessageQueue], consumer: DefaultLitePullConsumer
) -> None:
    consumer.assign(queues[:2])
    consumer.start()
    consumer.commit({queues[0]: 7, queues[1]: 9, queues[3]: 11})
    assert consumer.committed(queues[0]) == 7
    assert consumer.committed(queues[1]) == 9
    assert broker.committed_offset(GROUP, queues[0]) == 7
    assert broker.committed_offset(GROUP, queues[3]) == -1
    consumer.commit({queues[0]: 8}, persist=False)
    assert consumer.committed(queues[0]) == 8
    assert broker.committed_offset(GROUP, queues[0]) == 7
    with pytest.raises(IllegalArgumentError):
        consumer.commit({queues[0]: -1})


def test_should_commit_a_set_of_consumed_queues(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    for queue in queues[:2]:
        broker.send_many(queue, [b"m"] * 3)
    consumer = make(broker, auto_commit=False)
    consumer.assign(queues[:2])
    with running(consumer):
        assert len(poll_until(consumer, 6)) == 6
        consumer.commit({queues[0]})
        assert consumer.committed(queues[0]) == 3
        assert broker.committed_offset(GROUP, queues[0]) == 3
        assert broker.committed_offset(GROUP, queues[1]) == -1
        consumer.commit_sync()
        assert broker.committed_offset(GROUP, queues[1]) == 3


def test_should_move_stored_offsets_only_on_explicit_commits_bug_5315(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[0], [b"m"] * 5)
    consumer = make(
        broker,
        auto_commit=False,
        persist_consumer_offset_interval_ms=10,
        auto_commit_interval_ms=1000,
    )
    consumer.assign([queues[0]])
    with running(consumer):
        assert len(poll_until(consumer, 5)) == 5
        time.sleep(0.1)
        assert consumer.poll(10) == []
        assert broker.committed_offset(GROUP, queues[0]) == -1
        assert consumer.committed(queues[0]) == -1
        consumer.commit({queues[0]: 2}, persist=False)
        time.sleep(0.1)
        assert broker.committed_offset(GROUP, queues[0]) == -1
    assert broker.committed_offset(GROUP, queues[0]) == 2


def test_should_auto_commit_on_poll_and_persist_on_the_timer(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[0], [b"m"] * 5)
    consumer = make(broker, auto_commit_interval_ms=1000, persist_consumer_offset_interval_ms=20)
    consumer.assign([queues[0]])
    with running(consumer):
        assert len(poll_until(consumer, 5)) == 5
        consumer._committer.next_auto_commit_s = 0.0  # the interval passed
        consumer.poll(10)
        assert consumer.offset_store is not None
        assert consumer.offset_store.offsets() == {queues[0]: 5}
        assert wait_for(lambda: broker.committed_offset(GROUP, queues[0]) == 5)


def test_should_keep_its_timers_when_the_first_tick_comes_before_start_returns(
    broker: InMemoryBroker, queues: list[MessageQueue], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A loaded machine can run the first 20 ms persist tick before start() has set RUNNING: the
    # tick skips its job, but the timer must go on (it once ended there, and nothing persisted).
    broker.send_many(queues[0], [b"m"] * 5)
    consumer = make(broker, auto_commit_interval_ms=1000, persist_consumer_offset_interval_ms=20)
    every = consumer._services.every

    def slow_start(interval_ms: int, job: Any, first_delay_ms: int | None = None) -> None:
        every(interval_ms, job, first_delay_ms)
        if interval_ms == 20:
            time.sleep(0.2)  # the rest of start() outlasts the first tick

    monkeypatch.setattr(consumer._services, "every", slow_start)
    consumer.assign([queues[0]])
    with running(consumer):
        assert len(poll_until(consumer, 5)) == 5
        consumer._committer.next_auto_commit_s = 0.0  # the interval passed
        consumer.poll(10)
        assert wait_for(lambda: broker.committed_offset(GROUP, queues[0]) == 5)


def test_should_keep_broadcasting_offsets_in_a_local_file(
    broker: InMemoryBroker, queues: list[MessageQueue], shm_dir: Path
) -> None:
    broker.send_many(queues[0], [b"m"] * 4)
    first = make(broker, message_model=MessageModel.BROADCASTING, offset_store_dir=shm_dir)
    second = make(
        broker,
        message_model=MessageModel.BROADCASTING,
        offset_store_dir=shm_dir,
        instance_name="second",
    )
    for consumer in (first, second):
        consumer.subscribe(TOPIC)
    with running(first), running(second):
        assert len(poll_until(first, 4)) == 4
        assert len(poll_until(second, 4)) == 4
        first.commit()
        path = shm_dir / first.client_id / GROUP / "offsets.json"
        document = json.loads(path.read_text())
        assert {e["queue_id"]: e["offset"] for e in document["offsets"]}[0] == 4
    assert broker.committed_offset(GROUP, queues[0]) == -1
    assert first.client_id.endswith("@DEFAULT")


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
