"""The RocketMQ 5 endpoint's reads of a compressed batch (an aeromq producer's, stored as it
came): ``PopService`` delivers the inflated bodies, and a message dead-lettered from it is
stored again as a plain batch, readable like any other."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.rocketmq import PopService, dlq_topic
from aeromq.broker.store import MessageStore, TopicConfig
from aeromq.common import build_subscription_data, encode_batch
from aeromq.common.record_batch import CompressionType, compress_batch
from tests.broker.store.conftest import ManualClock, small_config

TOPIC, GROUP = "orders", "readers"
INVISIBLE_MS = 10_000
BODIES = [json.dumps({"order": i, "status": "PAID", "note": "x" * 40}).encode() for i in range(60)]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    store = MessageStore(small_config(tmp_path / "store"), clock_ms=ManualClock())
    store.start()
    store.topic_config.create_or_update(TopicConfig(TOPIC, 1, 1))
    yield store
    store.shutdown()


def test_should_deliver_inflated_bodies_and_dead_letter_them_plain(store: MessageStore) -> None:
    plain = bytes(encode_batch(TOPIC.encode(), BODIES, ["bad"] * len(BODIES)))
    packed = compress_batch(plain, CompressionType.ZSTD, min_body_bytes=0)
    assert len(packed) < len(plain) and store.put_batch(packed, TOPIC, 0).ok
    clock = ManualClock()
    pop = PopService(store, 1, clock_ms=clock)
    every = build_subscription_data(TOPIC, "*")

    got = pop.receive(GROUP, TOPIC, every, 100, INVISIBLE_MS, 0)
    assert [d.message.body for d in got] == BODIES
    clock.advance(INVISIBLE_MS)
    assert pop.receive(GROUP, TOPIC, every, 100, INVISIBLE_MS, 0) == []  # all dead-lettered

    dead = store.get_messages(dlq_topic(GROUP), 0, 0, 100).messages
    assert [m.body for m in dead] == BODIES  # re-encoded plain: its sys flag lost the codec
    assert {m.sys_flag for m in dead} == {0}
