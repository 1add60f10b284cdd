"""``PopService`` on a FIFO topic (its ``order`` flag): a message group is held back while one
of its messages is in flight, other groups go on, and each group comes in order through acks,
redeliveries and dead letters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.rocketmq import PopService, ReceiptHandle, dlq_topic
from aeromq.broker.store import InboundMessage, MessageStore, TopicConfig
from aeromq.common import build_subscription_data
from tests.broker.store.conftest import ManualClock, small_config

TOPIC, GROUP = "fifo-orders", "fifo-readers"
EVERY = build_subscription_data(TOPIC, "*")
INVISIBLE_MS = 10_000
SHARDING_KEY = "__SHARDINGKEY"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(tmp_path: Path, clock: ManualClock) -> Iterator[MessageStore]:
    store = MessageStore(small_config(tmp_path / "store"), clock_ms=clock)
    store.start()
    store.topic_config.create_or_update(TopicConfig(TOPIC, 1, 1, order=True))
    yield store
    store.shutdown()


def _put(store: MessageStore, body: bytes, group: str) -> None:
    properties = {"TAGS": "t", SHARDING_KEY: group} if group else {"TAGS": "t"}
    assert store.put_message(InboundMessage(TOPIC, 0, body, properties)).ok


def _receive(pop: PopService) -> list[tuple[bytes, ReceiptHandle]]:
    return [
        (d.message.body, d.handle) for d in pop.receive(GROUP, TOPIC, EVERY, 10, INVISIBLE_MS, 0)
    ]


def test_should_hold_a_group_back_while_one_of_its_messages_is_in_flight(
    store: MessageStore, clock: ManualClock
) -> None:
    for body, group in [(b"a0", "a"), (b"a1", "a"), (b"b0", "b"), (b"n0", ""), (b"b1", "b")]:
        _put(store, body, group)
    pop = PopService(store, 3, clock_ms=clock)

    first = _receive(pop)
    assert [body for body, _ in first] == [b"a0", b"b0", b"n0"]  # a1, b1 held
    assert _receive(pop) == []
    pop.ack(GROUP, TOPIC, first[1][1])  # b0
    pop.ack(GROUP, TOPIC, first[2][1])  # n0
    b1 = _receive(pop)
    assert [body for body, _ in b1] == [b"b1"]
    pop.ack(GROUP, TOPIC, b1[0][1])
    clock.advance(INVISIBLE_MS)  # a0 not acked: it comes again before a1
    again = _receive(pop)
    assert [(body, h.attempt) for body, h in again] == [(b"a0", 2)]
    pop.ack(GROUP, TOPIC, again[0][1])
    last = _receive(pop)
    assert [body for body, _ in last] == [b"a1"]
    pop.ack(GROUP, TOPIC, last[0][1])
    assert store.consumer_offsets.query_offset(GROUP, TOPIC, 0) == 5


def test_should_release_a_group_once_its_message_is_dead_lettered_and_commit_past_all(
    store: MessageStore, clock: ManualClock
) -> None:
    _put(store, b"x0", "x")
    _put(store, b"x1", "x")
    pop = PopService(store, 1, clock_ms=clock)

    assert [body for body, _ in _receive(pop)] == [b"x0"]
    clock.advance(INVISIBLE_MS)
    second = _receive(pop)  # x0 dead-lettered after its one attempt: x1 is next
    assert [body for body, _ in second] == [b"x1"]
    assert store.get_max_offset(dlq_topic(GROUP), 0) == 1
    pop.ack(GROUP, TOPIC, second[0][1])
    clock.advance(INVISIBLE_MS)
    assert _receive(pop) == []
    assert store.consumer_offsets.query_offset(GROUP, TOPIC, 0) == 2
