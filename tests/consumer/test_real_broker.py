"""``DefaultLitePullConsumer`` against a real ``aeromq broker`` process: RocketMQ's
``DefaultLitePullConsumerTest`` list over gRPC and the transport, and the group rebalancing."""

from __future__ import annotations

import io
import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aeromq._cli.consume import main as consume_main
from aeromq.client import IllegalStateError, Message, MessageQueue, OffsetIllegalError
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig, MessageModel
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.producer import Producer
from tests.consumer._broker_process import ServerProcess, client, create_topic, start_broker
from tests.consumer._lite import poll_until, running, wait_for

_names = itertools.count()


@pytest.fixture(scope="module")
def real_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path_factory.mktemp("consumer-broker"))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def producer(real_broker: ServerProcess) -> Iterator[Producer]:
    with Producer("consumer-test-producer", real_broker.grpc_address) as instance:
        yield instance


@pytest.fixture
def topic(real_broker: ServerProcess) -> str:
    name = f"ConsumerTopic{next(_names)}"
    create_topic(real_broker, name, 4)
    return name


def make(
    real_broker: ServerProcess, group: str | None = None, **changes: Any
) -> DefaultLitePullConsumer:
    values: dict[str, Any] = {
        "consumer_group": group or f"group{next(_names)}",
        "endpoints": (real_broker.grpc_address,),
        "consume_from_where": ConsumeFromWhere.FIRST_OFFSET,
        "broker_suspend_max_time_ms": 2000,
        "pull_time_delay_ms_when_pause": 50,
        **changes,
    }
    return DefaultLitePullConsumer(config=LitePullConsumerConfig(**values))


def send(producer: Producer, queue: MessageQueue, count: int, tags: str | None = None) -> None:
    producer.send_batch(
        [Message(queue.topic, b"%d" % index, tags=tags) for index in range(count)], queue=queue
    )


def queues_of(real_broker: ServerProcess, topic: str) -> list[MessageQueue]:
    return [MessageQueue(topic, real_broker.name, queue_id) for queue_id in range(4)]


def test_should_poll_an_assigned_queue(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queues = queues_of(real_broker, topic)
    send(producer, queues[2], 5)
    consumer = make(real_broker)
    consumer.assign([queues[2]])
    with running(consumer):
        got = poll_until(consumer, 5)
        assert [m.body for m in got] == [b"0", b"1", b"2", b"3", b"4"]
        assert all(m.queue == queues[2] for m in got)
        assert [m.queue_offset for m in got] == [0, 1, 2, 3, 4]
        assert all(m.msg_id for m in got)


def test_should_poll_batches_as_columns_and_commit_past_them(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queues = queues_of(real_broker, topic)
    for queue in queues[:2]:
        send(producer, queue, 40, tags="TagA")
        send(producer, queue, 5, tags="TagB")
    consumer = make(real_broker, pull_batch_size=10, auto_commit=False)
    consumer.subscribe(topic, "TagA")
    with running(consumer):
        batches = []
        deadline = time.monotonic() + 10
        while sum(len(b) for b in batches) < 80 and time.monotonic() < deadline:
            batches.append(consumer.poll_batch(100, max_records=30))
        assert all(len(batch) <= 30 for batch in batches)
        offsets = {queue_id: [] for queue_id in (0, 1)}
        for batch in batches:
            ids, queue_offsets = batch.queue_ids.tolist(), batch.queue_offsets.tolist()
            starts, data = batch.bodies()
            bodies = [bytes(data[starts[i] : starts[i + 1]]) for i in range(len(batch))]
            assert bodies == [b"%d" % offset for offset in queue_offsets]
            assert set(batch.tag_array().to_pylist()) <= {"TagA"}
            for queue_id, offset in zip(ids, queue_offsets, strict=True):
                offsets[queue_id].append(offset)
        assert offsets == {0: list(range(40)), 1: list(range(40))}  # each once, in order
        assert len(consumer.poll_batch(200)) == 0  # the TagB records are not delivered
        consumer.commit_sync()
        assert consumer.committed(queues[0]) == 40  # past the last message polled


def test_should_poll_a_subscribed_topic_with_a_tag_filter(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queues = queues_of(real_broker, topic)
    for queue in queues:
        send(producer, queue, 3, tags="TagA")
        send(producer, queue, 2, tags="TagB")
    consumer = make(real_broker)
    consumer.subscribe(topic, "TagB")
    with running(consumer):
        got = poll_until(consumer, 8)
        assert len(got) == 8
        assert {m.tags for m in got} == {"TagB"}
        assert consumer.assignment() == set(queues)
        assert consumer.poll(100) == []


def test_should_wake_a_long_poll_when_a_message_is_sent(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queue = queues_of(real_broker, topic)[0]
    consumer = make(real_broker, broker_suspend_max_time_ms=20_000)
    consumer.assign([queue])
    with running(consumer):
        assert consumer.poll(300) == []
        start = time.monotonic()
        producer.send(Message(topic, b"now"), queue=queue)
        got = poll_until(consumer, 1, timeout_s=5)
        assert [m.body for m in got] == [b"now"]
        assert time.monotonic() - start < 1.0


def test_should_seek_and_refuse_illegal_offsets(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queue = queues_of(real_broker, topic)[1]
    send(producer, queue, 10)
    consumer = make(real_broker)
    consumer.assign([queue])
    with running(consumer):
        assert len(poll_until(consumer, 10)) == 10
        consumer.seek(queue, 7)
        assert [m.queue_offset for m in poll_until(consumer, 3)] == [7, 8, 9]
        consumer.seek_to_begin(queue)
        assert len(poll_until(consumer, 10)) == 10
        with pytest.raises(OffsetIllegalError, match="max_offset=10"):
            consumer.seek(queue, 11)
        with pytest.raises(IllegalStateError, match="not in the assigned list"):
            consumer.seek(queues_of(real_broker, topic)[0], 0)
        consumer.seek_to_end(queue)
        send(producer, queue, 1)
        assert [m.queue_offset for m in poll_until(consumer, 1)] == [10]


def test_should_find_offsets_by_timestamp(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queue = queues_of(real_broker, topic)[0]
    send(producer, queue, 3)
    time.sleep(0.05)
    middle_ms = int(time.time() * 1000)
    time.sleep(0.05)
    send(producer, queue, 2)
    consumer = make(real_broker)
    with running(consumer):
        assert consumer.offset_for_timestamp(queue, middle_ms) == 3
        assert consumer.fetch_message_queues(topic) == set(queues_of(real_broker, topic))


def test_should_commit_a_map_and_a_set_and_read_them_back(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queues = queues_of(real_broker, topic)
    send(producer, queues[0], 4)
    group = f"group{next(_names)}"
    consumer = make(real_broker, group, auto_commit=False)
    consumer.assign(queues[:2])
    with running(consumer):
        consumer.commit({queues[1]: 0})  # an empty queue: its max offset is 0
        assert consumer.committed(queues[1]) == 0
        assert len(poll_until(consumer, 4)) == 4
        consumer.commit({queues[0]})
        assert consumer.committed(queues[0]) == 4
    with client(real_broker) as grpc:
        assert grpc.query_offset(group, topic, 0) == 4
        assert grpc.query_offset(group, topic, 1) == 0
    again = make(real_broker, group, auto_commit=False)
    again.assign(queues[:1])
    with running(again):
        send(producer, queues[0], 1)
        assert [m.queue_offset for m in poll_until(again, 1)] == [4]


@pytest.mark.parametrize(
    ("where", "expected"),
    [(ConsumeFromWhere.LAST_OFFSET, 1), (ConsumeFromWhere.FIRST_OFFSET, 4)],
)
def test_should_start_where_consume_from_where_says(
    real_broker: ServerProcess,
    producer: Producer,
    topic: str,
    where: ConsumeFromWhere,
    expected: int,
) -> None:
    queue = queues_of(real_broker, topic)[3]
    send(producer, queue, 3)
    consumer = make(real_broker, consume_from_where=where)
    consumer.subscribe(topic)
    with running(consumer):

        def started() -> bool:
            state = consumer.assigned_queues.state(queue)
            return state is not None and state.pull_offset >= 0

        assert wait_for(started)
        send(producer, queue, 1)
        got = poll_until(consumer, expected, timeout_s=5)
        assert len(got) == expected


def test_should_auto_commit_and_persist_at_shutdown(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queue = queues_of(real_broker, topic)[0]
    send(producer, queue, 6)
    group = f"group{next(_names)}"
    consumer = make(real_broker, group)
    consumer.assign([queue])
    with running(consumer):
        assert len(poll_until(consumer, 6)) == 6
    with client(real_broker) as grpc:
        assert grpc.query_offset(group, topic, 0) == 6


def test_should_broadcast_every_message_to_every_consumer(
    real_broker: ServerProcess, producer: Producer, topic: str, tmp_path: Path
) -> None:
    for queue in queues_of(real_broker, topic):
        send(producer, queue, 2)
    group = f"group{next(_names)}"
    consumers = [
        make(
            real_broker,
            group,
            message_model=MessageModel.BROADCASTING,
            offset_store_dir=tmp_path,
            instance_name=f"b{index}",
        )
        for index in range(2)
    ]
    for consumer in consumers:
        consumer.subscribe(topic)
        consumer.start()
    try:
        for consumer in consumers:
            assert len(poll_until(consumer, 8)) == 8
            consumer.commit()
            assert consumer.offset_store is not None
            assert set(consumer.offset_store.offsets().values()) == {2}
    finally:
        for consumer in consumers:
            consumer.shutdown()
    with client(real_broker) as grpc:
        assert grpc.query_offset(group, topic, 0) == -1


def test_should_rebalance_within_a_second_of_a_join_and_a_clean_leave(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queues = set(queues_of(real_broker, topic))
    group = f"group{next(_names)}"
    first = make(real_broker, group, instance_name="first")
    second = make(real_broker, group, instance_name="second")
    for consumer in (first, second):
        consumer.subscribe(topic)
    first.start()
    try:
        assert wait_for(lambda: first.assignment() == queues, 5)
        joined = time.monotonic()
        second.start()
        assert wait_for(lambda: len(first.assignment()) == 2 and len(second.assignment()) == 2, 2)
        assert time.monotonic() - joined < 1.0
        assert first.assignment() | second.assignment() == queues
        for queue in queues:
            send(producer, queue, 5)
        got: list[Any] = []
        deadline = time.monotonic() + 10
        while len(got) < 20 and time.monotonic() < deadline:
            got.extend(first.poll(20))
            got.extend(second.poll(20))
        assert len(got) == 20
        left = time.monotonic()
        second.shutdown()
        assert wait_for(lambda: first.assignment() == queues, 2)
        assert time.monotonic() - left < 1.0
    finally:
        second.shutdown()
        first.shutdown()


def test_should_print_messages_from_the_command_line(
    real_broker: ServerProcess, producer: Producer, topic: str
) -> None:
    queue = queues_of(real_broker, topic)[0]
    producer.send(Message(topic, b"hello\nworld", tags="TagA", keys="k1 k2"), queue=queue)
    send(producer, queue, 2)
    out = io.StringIO()
    argv = [
        "--endpoints",
        real_broker.grpc_address,
        "--topic",
        topic,
        "--group",
        f"cli{next(_names)}",
    ]
    assert consume_main([*argv, "--from", "first", "--count", "3", "--idle", "10s"], out, out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("0 0 TagA k1,k2 ")
    assert lines[0].endswith(" hello\\nworld")
    assert lines[1].split()[1] == "1" and lines[1].endswith(" 0")
    assert lines[-1].startswith("consumed=3 ")
    quiet = io.StringIO()
    argv = [*argv[:-1], f"cli{next(_names)}", "--queue", f"{real_broker.name}:0"]
    # Stopped by the count: an idle limit of 0.5 s counts from start(), and the first pull of a
    # loaded machine can take longer than that (it once stopped with consumed=0).
    quiet_argv = [*argv, "--from", "first", "--quiet", "--count", "3", "--idle", "10s"]
    assert consume_main(quiet_argv, quiet, quiet) == 0
    assert quiet.getvalue().splitlines() == [quiet.getvalue().splitlines()[0]]
    assert quiet.getvalue().startswith("consumed=3 ")
    # Stopped by the idle limit: from the end of the queue nothing comes, however slow the start.
    idle = io.StringIO()
    assert consume_main([*argv, "--from", "last", "--quiet", "--idle", "500ms"], idle, idle) == 0
    assert idle.getvalue().startswith("consumed=0 ")
