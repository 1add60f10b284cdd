"""Timer messages on the producer's side: ``Message``'s delivery time and delay level (the
``TIMER_DELIVER_MS`` and ``DELAY`` properties), the batch of one marked ``TIMER_FLAG``, and
such a batch sent without the idempotent producer's sequences."""

from __future__ import annotations

import time

import pytest

from aeromq.client import Message, MessageIllegalError, MessageQueue, UniqueMessageIdGenerator
from aeromq.common import RecordBatch
from aeromq.common.record_batch import TIMER_FLAG
from aeromq.producer._attempt import Attempt
from aeromq.producer._batch import encode_messages
from aeromq.producer._sequences import ProducerSequences

TOPIC = "orders"


def test_should_set_a_delivery_time_or_a_delay_level_as_rocketmqs_properties() -> None:
    timed = Message(TOPIC, b"x", delivery_timestamp_ms=1_700_000_000_123)
    assert timed.delivery_timestamp_ms == 1_700_000_000_123 and timed.delay_level == 0
    assert timed.get_property("TIMER_DELIVER_MS") == "1700000000123"
    leveled = Message(TOPIC, b"x", tags="A", delay_level=3)
    assert leveled.get_property("DELAY") == "3" and leveled.delivery_timestamp_ms is None
    leveled.delivery_timestamp_ms = 5  # one or the other: the last set wins
    assert (leveled.delay_level, leveled.delivery_timestamp_ms) == (0, 5)
    leveled.delivery_timestamp_ms = None
    assert "TIMER_DELIVER_MS" not in leveled.properties


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"delay_level": 19}, "the delay level must be an int 0..18"),
        ({"delay_level": -1}, "the delay level must be an int 0..18"),
        ({"delivery_timestamp_ms": -5}, "the delivery timestamp must be epoch milliseconds"),
        ({"delivery_timestamp_ms": 5, "delay_level": 1}, "not both"),
    ],
)
def test_should_refuse_a_bad_delivery_time_or_level(kwargs: dict[str, int], problem: str) -> None:
    with pytest.raises(MessageIllegalError, match=problem):
        Message(TOPIC, b"x", **kwargs)


def test_should_mark_a_batch_holding_a_timer_message_and_no_other() -> None:
    ids = UniqueMessageIdGenerator()
    plain, _ = encode_messages(
        [Message(TOPIC, b"a"), Message(TOPIC, b"b", tags="T")], ids, 0, bytes(8)
    )
    timed, _ = encode_messages(
        [Message(TOPIC, b"a"), Message(TOPIC, b"b", delay_level=1)], ids, 0, bytes(8)
    )
    assert not RecordBatch(plain).attributes & TIMER_FLAG
    assert RecordBatch(timed).attributes & TIMER_FLAG


def test_should_send_a_timer_batch_without_the_queues_sequences() -> None:
    sequences = ProducerSequences(producer_id=9)
    queue = MessageQueue(TOPIC, "broker-a", 0)
    ids = UniqueMessageIdGenerator()
    messages = [Message(TOPIC, b"x", delivery_timestamp_ms=1)]
    batch, unique_ids = encode_messages(messages, ids, 0, bytes(8))
    attempt = Attempt(messages, batch, unique_ids, time.monotonic_ns(), 1, None, None)

    stamp = sequences.stamp(attempt, queue)

    assert stamp is None and attempt.stamp is None
    after, after_ids = encode_messages([Message(TOPIC, b"y")], ids, 0, bytes(8))
    plain = Attempt([Message(TOPIC, b"y")], after, after_ids, time.monotonic_ns(), 1, None, None)
    state = sequences.stamp(plain, queue)
    assert state is not None and state.base_sequence == 0  # the timer batch took no sequence
