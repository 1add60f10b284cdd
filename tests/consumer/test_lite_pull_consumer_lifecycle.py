"""``DefaultLitePullConsumer`` end to end on the in-memory broker: its configuration and
lifecycle, and its commits (RocketMQ's ``DefaultLitePullConsumerTest`` list, continued from
``test_lite_pull_consumer.py``)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from aeromq.client import (
    IllegalArgumentError,
    IllegalStateError,
    MessageQueue,
)
from aeromq.consumer.config import ConsumeFromWhere, MessageModel
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer, ServiceState
from aeromq.consumer.testing import InMemoryBroker
from tests.consumer._lite import (
    GROUP,
    TOPIC,
    bodies,
    config,
    make,
    poll_until,
    running,
    wait_for,
)

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
