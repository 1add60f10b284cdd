"""The one-at-a-time ``send()``'s straight path (``producer/_one_send.py``) against the general
one (``SendPath.send_sync``, which a send with hooks, a queue or a selector takes): the same
results, errors, metrics and idempotent sequences."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from aeromq.client import IllegalStateError, Message, MessageTooLargeError
from aeromq.common import hash_code
from aeromq.producer import (
    KeyHashSelector,
    Producer,
    ProducerConfig,
    SendMessageContext,
    SendResult,
    SendStatus,
)


class _Hook:
    """A send hook that does nothing: its producer's sends take the general path."""

    def send_message_before(self, context: SendMessageContext) -> None:
        pass

    def send_message_after(self, context: SendMessageContext) -> None:
        pass


def test_should_give_a_straight_send_the_result_of_a_general_one(
    make_producer: Callable[..., Producer],
) -> None:
    producer = make_producer()
    message = Message("orders", b"straight")
    straight = producer.send(message)
    general = producer.send(Message("orders", b"general"), queue=straight.message_queue)
    assert type(straight) is SendResult and type(general) is SendResult
    assert straight.send_status is general.send_status is SendStatus.SEND_OK
    assert straight.msg_id == message.properties["UNIQ_KEY"]
    assert general.queue_offset == straight.queue_offset + 1
    assert len(straight.offset_msg_id) == len(general.offset_msg_id) == 32
    assert straight.offset_msg_id != general.offset_msg_id
    metrics = producer.metrics()
    assert (metrics.sends, metrics.messages, metrics.errors) == (2, 2, 0)


def test_should_raise_on_the_straight_path_what_the_general_path_raises(
    make_producer: Callable[..., Producer],
) -> None:
    straight = make_producer(config=ProducerConfig(max_message_size=1_000))
    general = make_producer(config=ProducerConfig(max_message_size=1_000))
    general.register_send_message_hook(_Hook())
    raised = []
    for producer in (straight, general):
        with pytest.raises(MessageTooLargeError) as caught:
            producer.send(Message("orders", b"x" * 1_001))
        raised.append(str(caught.value))
    assert raised[0] == raised[1] and "body_length=1001" in raised[0]
    assert straight.metrics().errors == general.metrics().errors == 1
    straight.shutdown()
    with pytest.raises(IllegalStateError, match="producer not started"):
        straight.send(Message("orders", b"late"))


def test_should_stamp_straight_sends_in_sequence_with_general_ones(
    make_producer: Callable[..., Producer],
) -> None:
    producer = make_producer()
    sequences = producer._send_path.sequences
    assert sequences is not None  # idempotent by default
    first = producer.send(Message("orders", b"one"))
    queue = first.message_queue
    producer.send(Message("orders", b"two"), queue=queue)  # the general path
    producer._send_path.router._round_robin.counter = itertools.count(queue.queue_id)
    third = producer.send(Message("orders", b"three"))
    assert third.message_queue == queue and third.queue_offset == first.queue_offset + 2


def test_should_give_the_producers_selector_the_sends_arg(
    make_producer: Callable[..., Producer],
) -> None:
    producer = make_producer(queue_selector=KeyHashSelector())
    queues = producer.fetch_publish_queues("orders")
    for arg in ("a", "b", "c", "d"):
        expected = queues[abs(hash_code(arg)) % len(queues)]
        assert producer.send(Message("orders", b"by arg"), arg=arg).message_queue == expected
