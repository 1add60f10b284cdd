"""The producer against a broker in this process: every kind of send, queue selection,
ids and properties on the wire, client-side limits, retries elsewhere, lifecycle."""

from __future__ import annotations

import gc
import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.broker import Broker
from aeromq.client import (
    IllegalArgumentError,
    IllegalStateError,
    Message,
    MessageIllegalError,
    MessageQueue,
    MessageTooLargeError,
    ResponseCode,
    TopicNotFoundError,
    decode_offset_message_id,
)
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.session import IDLE_STRATEGY_ENV, PRODUCER_SESSION_IDLE_STRATEGY
from aeromq.common import hash_code
from aeromq.producer import (
    KeyHashSelector,
    Producer,
    ProducerConfig,
    SendResult,
    SendStatus,
    StaticRoute,
)

from .conftest import Puller, start_broker, wait_for


def test_should_send_and_answer_the_ids_queue_and_offset(
    producer: Producer, broker: Broker
) -> None:
    message = Message("orders", b"hello", tags="created", keys="order-1")
    result = producer.send(message)
    assert result.send_status is SendStatus.SEND_OK and result.ok
    assert result.msg_id == message.uniq_id and result.msg_id is not None
    assert result.message_queue.topic == "orders"
    assert result.message_queue.broker_name == "broker-a"
    assert 0 <= result.message_queue.queue_id < 4 and result.queue_offset >= 0
    assert decode_offset_message_id(result.offset_msg_id).port == int(
        broker.grpc_address.rsplit(":", 1)[1]
    )


def test_should_store_body_tags_keys_properties_and_id(producer: Producer, puller: Puller) -> None:
    message = Message(
        "events", b"\x00body\xff", tags="T", keys=["k1", "k2"], properties={"color": "blue"}
    )
    result = producer.send(message, queue=MessageQueue("events", "broker-a", 2))
    pulled = puller.messages("events", 2, result.queue_offset)[0]
    assert pulled.body == b"\x00body\xff" and pulled.tags == "T"
    assert list(pulled.keys) == ["k1", "k2"] and pulled.msg_id == result.msg_id
    assert dict(pulled.properties) == {
        "color": "blue",
        "WAIT": "true",
        "TAGS": "T",
        "KEYS": "k1 k2",
        "UNIQ_KEY": result.msg_id,
    }
    assert pulled.offset_msg_id == result.offset_msg_id


def test_should_send_a_batch_to_one_queue_with_consecutive_offsets(
    producer: Producer, puller: Puller
) -> None:
    batch = [Message("orders", b"b%d" % i) for i in range(5)]
    results = producer.send_batch(batch)
    assert len(results) == 5 and len({r.message_queue for r in results}) == 1
    offsets = [r.queue_offset for r in results]
    assert offsets == list(range(offsets[0], offsets[0] + 5))
    assert [r.msg_id for r in results] == [m.uniq_id for m in batch]
    pulled = puller.messages("orders", results[0].message_queue.queue_id, offsets[0])
    assert [m.body for m in pulled[:5]] == [b"b0", b"b1", b"b2", b"b3", b"b4"]


def test_should_complete_async_sends_with_a_future_and_a_callback(producer: Producer) -> None:
    called = threading.Event()
    seen: list[tuple[Any, BaseException | None]] = []

    def callback(result: Any, error: BaseException | None) -> None:
        seen.append((result, error))
        called.set()

    futures = [producer.send_async(Message("orders", b"a%d" % i)) for i in range(20)]
    last = producer.send_async(Message("orders", b"last"), callback)
    results = [f.result(5) for f in futures]
    assert all(isinstance(r, SendResult) and r.ok for r in results)
    assert called.wait(5) and seen == [(last.result(), None)]
    batch = producer.send_batch_async([Message("orders", b"x"), Message("orders", b"y")])
    assert len(batch.result(5)) == 2


def test_should_deliver_a_oneway_send(producer: Producer, puller: Puller) -> None:
    queue = MessageQueue("events", "broker-a", 3)
    before = puller.pull("events", 3).max_offset
    producer.send_oneway(Message("events", b"fire and forget"), queue=queue)
    wait_for(lambda: puller.pull("events", 3).max_offset == before + 1, what="the message")


def test_should_spread_sends_round_robin_over_the_queues(producer: Producer) -> None:
    queues = [producer.send(Message("orders", b"rr")).message_queue.queue_id for _ in range(8)]
    assert sorted(queues) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert all((b - a) % 4 == 1 for a, b in itertools.pairwise(queues))


def test_should_keep_one_key_on_one_queue_by_hash(make_producer: Callable[..., Producer]) -> None:
    producer = make_producer(queue_selector=KeyHashSelector())
    for key in ("alpha", "beta", "gamma-42"):
        queues = {producer.send(Message("keyed", b"k", keys=key)).message_queue for _ in range(3)}
        assert [q.queue_id for q in queues] == [abs(hash_code(key)) % 4]


def test_should_use_a_custom_selector_with_its_argument(producer: Producer) -> None:
    def last_queue(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        assert arg == "my-arg" and message.body == b"sel"
        return queues[-1]

    result = producer.send(Message("orders", b"sel"), selector=last_queue, arg="my-arg")
    assert result.message_queue.queue_id == 3


def test_should_refuse_a_body_over_the_max_size_before_sending(
    make_producer: Callable[..., Producer], broker: Broker
) -> None:
    producer = make_producer(config=ProducerConfig(max_message_size=1_000))
    requests = broker.stats()["send.requests"]
    with pytest.raises(MessageTooLargeError, match="body_length=1001"):
        producer.send(Message("orders", b"x" * 1001))
    with pytest.raises(IllegalArgumentError, match="batch is over"):
        producer.send_batch([Message("orders", b"x" * 600), Message("orders", b"y" * 600)])
    emptied = Message("orders", b"x")
    emptied.body = b""  # emptied after it was made: still refused before sending
    with pytest.raises(MessageIllegalError, match="empty"):
        producer.send_batch([Message("orders", b"a"), emptied])
    assert broker.stats()["send.requests"] == requests


def test_should_refuse_a_batch_of_two_topics_and_a_queue_of_another_topic(
    producer: Producer,
) -> None:
    with pytest.raises(IllegalArgumentError, match=r"one topic.*other_topic='events'"):
        producer.send_batch(
            [Message("orders", b"a"), Message("orders", b"b"), Message("events", b"c")]
        )
    with pytest.raises(IllegalArgumentError, match="another topic"):
        producer.send(Message("orders", b"a"), queue=MessageQueue("events", "broker-a", 0))
    with pytest.raises(IllegalArgumentError, match="nothing to send"):
        producer.send_batch([])


def test_should_raise_topic_not_found_for_an_unknown_topic(producer: Producer) -> None:
    with pytest.raises(TopicNotFoundError):
        producer.send(Message("nowhere", b"x"))
    future = producer.send_async(Message("orders", b"still fine"))
    assert future.result(5).ok


def test_should_send_over_udp_through_a_driver_of_its_own(
    make_producer: Callable[..., Producer], puller: Puller
) -> None:
    producer = make_producer(config=ProducerConfig(transport="udp"))
    result = producer.send(
        Message("events", b"over udp"), queue=MessageQueue("events", "broker-a", 1)
    )
    assert result.ok
    assert puller.messages("events", 1, result.queue_offset)[0].body == b"over udp"


def test_should_retry_on_another_broker_when_one_does_not_have_the_topic(
    broker: Broker, tmp_path: Path
) -> None:
    other = start_broker(tmp_path / "b", broker_name="broker-b")
    try:
        route = StaticRoute({"broker-a": broker.endpoints(), "broker-b": other.endpoints()}, 4)
        with Producer("retrying", route=route) as producer:
            results = [producer.send(Message("orders", b"r%d" % i)) for i in range(8)]
        assert {r.message_queue.broker_name for r in results} == {"broker-a"}
        assert other.stats()["send.errors.topic_not_exist"] >= 1
        no_retry = ProducerConfig(retry_times_when_send_failed=0)
        with (
            Producer("strict", route=route, config=no_retry) as producer,
            pytest.raises(TopicNotFoundError),
        ):
            for i in range(8):
                producer.send(Message("orders", b"s%d" % i))
    finally:
        other.shutdown()


def test_should_need_start_and_stop_cleanly(broker: Broker) -> None:
    producer = Producer("lifecycle", broker.grpc_address)
    with pytest.raises(IllegalStateError, match="not started"):
        producer.send(Message("orders", b"x"))
    with producer:
        assert producer.running and producer.send(Message("orders", b"x")).ok
        assert len(producer.fetch_publish_queues("orders")) == 4
    assert not producer.running
    producer.shutdown()  # idempotent
    with pytest.raises(IllegalArgumentError, match="endpoints or a route"):
        Producer("no-where")
    with pytest.raises(IllegalArgumentError):
        Producer("bad group!", broker.grpc_address)


def test_should_see_topics_created_after_it_started(producer: Producer, broker: Broker) -> None:
    with GrpcClient(broker.grpc_address) as admin:
        admin.create_topic("late-topic", read_queue_nums=2, write_queue_nums=2)
    assert producer.send(Message("late-topic", b"x")).message_queue.queue_id in (0, 1)


def test_should_send_waiting_async_sends_as_one_request_each_with_its_own_results(
    make_producer: Callable[..., Producer], broker: Broker, puller: Puller
) -> None:
    producer = make_producer(config=ProducerConfig(async_requests_in_flight=1))
    processor = broker.send_processor
    assert processor is not None
    requests_before = processor.requests
    singles = [Message("orders", b"single-%d" % i) for i in range(12)]
    batches = [[Message("orders", b"batch-%d-%d" % (b, i)) for i in range(3)] for b in range(4)]
    futures: list[Any] = [producer.send_async(message) for message in singles]
    futures += [producer.send_batch_async(batch) for batch in batches]
    answers = [future.result(5) for future in futures]
    # at most one request in flight: the sends that came meanwhile went together
    assert processor.requests - requests_before < len(futures)
    sent = [[message] for message in singles] + batches
    for messages, answer in zip(sent, answers, strict=True):
        results = [answer] if isinstance(answer, SendResult) else list(answer)
        assert [r.msg_id for r in results] == [m.uniq_id for m in messages]
        assert all(r.ok and r.message_queue == results[0].message_queue for r in results)
        first = results[0].queue_offset
        assert [r.queue_offset for r in results] == list(range(first, first + len(results)))
        logged = [decode_offset_message_id(r.offset_msg_id).commit_log_offset for r in results]
        assert logged == list(range(logged[0], logged[0] + len(results)))
        queue_id = results[0].message_queue.queue_id
        pulled = puller.messages("orders", queue_id, first)
        assert [m.body for m in pulled[: len(messages)]] == [m.body for m in messages]
        assert [m.msg_id for m in pulled[: len(messages)]] == [m.uniq_id for m in messages]


def test_should_send_a_pipelined_window_as_few_requests_counted_in_the_metrics(
    make_producer: Callable[..., Producer], broker: Broker
) -> None:
    producer = make_producer(config=ProducerConfig(async_requests_in_flight=1))
    processor = broker.send_processor
    assert processor is not None
    assert producer.send(Message("orders", b"connect")).ok
    before, window = processor.requests, []
    for b in range(64):  # 8 batches outstanding, the oldest awaited: as bench's producer
        window.append(producer.send_batch_async([Message("orders", b"w-%d" % b)] * 4))
        if len(window) >= 8:
            assert all(result.ok for result in window.pop(0).result(5))
    for future in window:
        assert all(result.ok for result in future.result(5))
    requests = producer.metrics().async_requests
    assert requests == processor.requests - before
    assert requests < 64  # how few depends on the round trip against the refill


def test_should_send_what_a_woken_thread_adds_when_it_waits_on_no_send(
    make_producer: Callable[..., Producer],
) -> None:
    """A thread woken from a send's ``result()`` that then waits without ``result()`` (a
    deferred cut's fallback sends what it added)."""
    producer = make_producer(config=ProducerConfig(async_requests_in_flight=1))
    for round_ in range(20):
        first = producer.send_async(Message("orders", b"first-%d" % round_))
        assert first.result(5).ok  # blocked on it: its answer may defer the next cut
        later = [producer.send_async(Message("orders", b"later-%d" % i)) for i in range(3)]
        done, _ = futures.wait(later, timeout=5)  # no result(): nothing calls the hook
        assert len(done) == 3 and all(future.result().ok for future in later)


def test_should_keep_no_message_of_an_answered_async_send(producer: Producer) -> None:
    # pipelined sends, as a producer in a loop makes them: once answered and let go of, their
    # messages are freed by reference counting (not kept by the session for the request
    # timeout, nor left to the cyclic garbage collector)
    messages = [[Message("orders", b"kept-%d-%d" % (b, i)) for i in range(8)] for b in range(40)]

    def alive() -> int:  # Message has no weak references: find them among the tracked objects
        return sum(1 for o in gc.get_objects() if type(o) is Message and o.body[:5] == b"kept-")

    assert alive() == 320
    window: list[Any] = []
    for batch in messages:
        window.append(producer.send_batch_async(batch))
        if len(window) >= 8:
            assert all(result.ok for result in window.pop(0).result(5))
    for future in window:
        assert all(result.ok for result in future.result(5))
    del messages, batch, window, future
    gc.disable()  # only reference counting may free them
    try:
        wait_for(lambda: alive() == 0, 2, "the messages freed")
    finally:
        gc.enable()


def test_should_send_each_waiting_send_alone_when_their_request_is_refused(
    tmp_path: Path,
) -> None:
    """A broker that takes smaller sends than the producer allows refuses a merged request
    for its size: each send then goes alone, and only the one too large for it fails."""
    small = start_broker(tmp_path, max_message_size=2048, auto_create_topic=True)
    try:
        config = ProducerConfig(async_requests_in_flight=1, max_message_size=1 << 20)
        with Producer("test-producers", small.grpc_address, config=config) as producer:
            producer.send(Message("Small", b"warm-up"))
            futures = [producer.send_async(Message("Small", b"m%d" % i * 200)) for i in range(8)]
            too_large = producer.send_async(Message("Small", b"x" * 4096))
            results = [future.result(5) for future in futures]
            assert all(result.ok for result in results)
            with pytest.raises(MessageIllegalError):
                too_large.result(5)
        assert small.send_processor is not None  # refused: a merged request, then the large one
        assert small.send_processor.errors[ResponseCode.MESSAGE_ILLEGAL] >= 2
    finally:
        small.shutdown()


def test_should_not_make_async_sends_wait_with_coalescing_off(
    make_producer: Callable[..., Producer], broker: Broker
) -> None:
    producer = make_producer(config=ProducerConfig(async_requests_in_flight=0))
    processor = broker.send_processor
    assert processor is not None
    before = processor.requests
    futures = [producer.send_async(Message("orders", b"alone-%d" % i)) for i in range(6)]
    assert all(future.result(5).ok for future in futures)
    assert processor.requests - before == 6


def test_should_sleep_on_the_doorbell_between_answers_unless_told_otherwise(
    make_producer: Callable[..., Producer], monkeypatch: pytest.MonkeyPatch
) -> None:
    def idle_strategy(producer: Producer) -> str:
        assert producer.send(Message("orders", b"connect")).ok  # opens the broker's session
        sessions = producer._send_path.sessions
        assert sessions is not None
        session = sessions.open_session("broker-a")
        assert session is not None and session.rung_by_broker  # IPC: the broker rings
        return session.config.idle_strategy

    assert idle_strategy(make_producer()) == PRODUCER_SESSION_IDLE_STRATEGY
    monkeypatch.setenv(IDLE_STRATEGY_ENV, "backoff:10,5,1000,1000000")  # to compare strategies
    assert idle_strategy(make_producer()) == "backoff:10,5,1000,1000000"
