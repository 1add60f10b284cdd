"""``PopService`` on a real store with a manual clock: invisibility, redelivery, dead letters,
receipt handles (stale ones, and those of an earlier run) and the committed offset."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.rocketmq import PopService, ProtocolStatusError, ReceiptHandle, dlq_topic
from aeromq.broker.store import InboundMessage, MessageStore, TopicConfig
from aeromq.common import build_subscription_data, compile_sql92
from aeromq.proto.apache.rocketmq.v2 import definition_pb2
from tests.broker.store.conftest import ManualClock, small_config

TOPIC, GROUP = "orders", "readers"
EVERY = build_subscription_data(TOPIC, "*")
INVISIBLE_MS = 10_000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(tmp_path: Path, clock: ManualClock) -> Iterator[MessageStore]:
    store = MessageStore(small_config(tmp_path / "store"), clock_ms=clock)
    store.start()
    store.topic_config.create_or_update(TopicConfig(TOPIC, 2, 2))
    yield store
    store.shutdown()


def _put(store: MessageStore, queue_id: int, body: bytes, tag: str = "t") -> None:
    assert store.put_message(InboundMessage(TOPIC, queue_id, body, {"TAGS": tag})).ok


def _receive(pop: PopService, count: int = 10, wait_ms: int = 0) -> list[bytes]:
    return [d.message.body for d in pop.receive(GROUP, TOPIC, EVERY, count, INVISIBLE_MS, wait_ms)]


def test_should_hide_a_received_message_until_its_invisible_duration_passes(
    store: MessageStore, clock: ManualClock
) -> None:
    _put(store, 0, b"a")
    pop = PopService(store, 3, clock_ms=clock)

    assert _receive(pop) == [b"a"]
    assert _receive(pop) == []
    clock.advance(INVISIBLE_MS)
    again = pop.receive(GROUP, TOPIC, EVERY, 10, INVISIBLE_MS, 0)

    assert [(d.message.body, d.handle.attempt) for d in again] == [(b"a", 2)]


def test_should_not_deliver_an_acked_message_again_and_commit_its_offset(
    store: MessageStore, clock: ManualClock
) -> None:
    _put(store, 0, b"a")
    _put(store, 0, b"b")
    pop = PopService(store, 3, clock_ms=clock)
    first, second = pop.receive(GROUP, TOPIC, EVERY, 10, INVISIBLE_MS, 0)

    pop.ack(GROUP, TOPIC, second.handle)
    assert store.consumer_offsets.query_offset(GROUP, TOPIC, 0) in (-1, 0)  # "a" in flight
    pop.ack(GROUP, TOPIC, first.handle)
    clock.advance(INVISIBLE_MS)

    assert _receive(pop) == []
    assert store.consumer_offsets.query_offset(GROUP, TOPIC, 0) == 2


def test_should_dead_letter_a_message_after_max_delivery_attempts(
    store: MessageStore, clock: ManualClock
) -> None:
    _put(store, 1, b"poison", tag="bad")
    pop = PopService(store, 2, clock_ms=clock)
    assert _receive(pop) == [b"poison"]
    clock.advance(INVISIBLE_MS)
    assert _receive(pop) == [b"poison"]
    clock.advance(INVISIBLE_MS)

    assert _receive(pop) == []
    dead = store.get_messages(dlq_topic(GROUP), 0, 0, 10).messages
    assert [(m.body, m.properties["TAGS"], m.properties["RETRY_TOPIC"]) for m in dead] == [
        (b"poison", "bad", TOPIC)
    ]
    assert pop.dead_lettered == 1
    assert store.consumer_offsets.query_offset(GROUP, TOPIC, 1) == 1


def test_should_refuse_a_handle_once_the_message_is_redelivered_or_its_invisibility_changed(
    store: MessageStore, clock: ManualClock
) -> None:
    _put(store, 0, b"a")
    pop = PopService(store, 5, clock_ms=clock)
    (first,) = pop.receive(GROUP, TOPIC, EVERY, 1, INVISIBLE_MS, 0)
    renewed = pop.change_invisible(GROUP, TOPIC, first.handle, 30_000)

    with pytest.raises(ProtocolStatusError) as refused:
        pop.ack(GROUP, TOPIC, first.handle)
    assert refused.value.v2_code == definition_pb2.Code.INVALID_RECEIPT_HANDLE
    clock.advance(INVISIBLE_MS)
    assert _receive(pop) == []  # the new invisible duration holds
    pop.ack(GROUP, TOPIC, renewed)


def test_should_accept_a_handle_of_an_earlier_run_and_redeliver_what_was_not_acked(
    store: MessageStore, clock: ManualClock
) -> None:
    _put(store, 0, b"a")
    _put(store, 0, b"b")
    before = PopService(store, 5, clock_ms=clock)
    _, second = before.receive(GROUP, TOPIC, EVERY, 10, INVISIBLE_MS, 0)
    before.close()
    clock.advance(1)  # the restarted broker's epoch differs

    after = PopService(store, 5, clock_ms=clock)
    after.ack(GROUP, TOPIC, ReceiptHandle.decode(second.handle.encode()))

    assert after.epoch_ms != before.epoch_ms
    assert _receive(after) == [b"a"]  # not acked before the restart: delivered again


def test_should_filter_by_tag_and_by_sql92(store: MessageStore, clock: ManualClock) -> None:
    _put(store, 0, b"a", tag="A")
    _put(store, 0, b"b", tag="B")
    pop = PopService(store, 5, clock_ms=clock)
    by_tag = pop.receive("g1", TOPIC, build_subscription_data(TOPIC, "B"), 10, INVISIBLE_MS, 0)
    by_sql = pop.receive("g2", TOPIC, compile_sql92("TAGS = 'A'"), 10, INVISIBLE_MS, 0)

    assert [d.message.body for d in by_tag] == [b"b"]
    assert [d.message.body for d in by_sql] == [b"a"]


def test_should_wait_for_a_message_that_arrives_while_a_receive_long_polls(
    store: MessageStore, clock: ManualClock
) -> None:
    pop = PopService(store, 5, clock_ms=clock)
    timer = threading.Timer(0.2, _put, (store, 1, b"late"))
    timer.start()
    try:
        assert _receive(pop, wait_ms=20_000) == [b"late"]
    finally:
        timer.join()


def test_should_listen_for_arrivals_only_while_a_receive_is_in_progress(
    store: MessageStore, clock: ManualClock
) -> None:
    pop = PopService(store, 5, clock_ms=clock)
    assert not store.arrivals.active  # no receive: a put makes no call for the pop service
    listening: list[bool] = []
    timer = threading.Timer(
        0.2, lambda: (listening.append(store.arrivals.active), _put(store, 0, b"x"))
    )
    timer.start()
    try:
        assert _receive(pop, wait_ms=20_000) == [b"x"]
    finally:
        timer.join()

    assert listening == [True]
    assert not store.arrivals.active


def test_should_refuse_an_unknown_topic_and_a_malformed_handle(
    store: MessageStore, clock: ManualClock
) -> None:
    pop = PopService(store, 5, clock_ms=clock)
    with pytest.raises(ProtocolStatusError) as missing:
        pop.receive(GROUP, "nope", EVERY, 1, INVISIBLE_MS, 0)
    with pytest.raises(ProtocolStatusError) as malformed:
        ReceiptHandle.decode("not-a-handle")

    assert missing.value.v2_code == definition_pb2.Code.TOPIC_NOT_FOUND
    assert malformed.value.v2_code == definition_pb2.Code.INVALID_RECEIPT_HANDLE
    assert "receipt_handle='not-a-handle'" in str(malformed.value)
