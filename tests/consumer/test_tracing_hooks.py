"""Tracing hooks against a real broker process: a send hook injects a trace context into each
message's properties before the send is encoded, a consume hook reads it back at poll, both
see their own state from before to after, and a hook that raises costs nothing but a log line."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from concurrent.futures import wait
from typing import Any

import pytest

from aeromq.client import Message, MessageQueue
from aeromq.consumer import ConsumeMessageContext, DefaultLitePullConsumer
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
from aeromq.producer import Producer, SendMessageContext, SendMode
from tests.consumer._broker_process import ServerProcess, create_topic, start_broker
from tests.consumer._lite import poll_until, running

_names = itertools.count()
TRACE = "traceparent"


class Tracer:
    """Both hooks at once, as an OpenTelemetry-style tracer would be: a span per send and per
    poll, the send's trace id carried in a user property."""

    def __init__(self) -> None:
        self.sends: list[SendMessageContext] = []
        self.consumed: list[ConsumeMessageContext] = []
        self.ids = itertools.count(1)
        self.received_traces: list[str | None] = []

    def send_message_before(self, context: SendMessageContext) -> None:
        trace = f"00-{next(self.ids):032x}-0000000000000001-01"
        context.props["span"] = trace
        for message in context.messages:
            message.put_user_property(TRACE, trace)

    def send_message_after(self, context: SendMessageContext) -> None:
        self.sends.append(context)

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        assert not context.success
        context.props["span"] = "poll"
        self.received_traces.extend(message.get_property(TRACE) for message in context.messages)

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        assert context.props["span"] == "poll" and context.success
        self.consumed.append(context)


class Broken:
    def send_message_before(self, context: Any) -> None:
        raise RuntimeError("a broken hook")

    def send_message_after(self, context: Any) -> None:
        raise RuntimeError("a broken hook")

    def consume_message_before(self, context: Any) -> None:
        raise RuntimeError("a broken hook")

    def consume_message_after(self, context: Any) -> None:
        raise RuntimeError("a broken hook")


@pytest.fixture(scope="module")
def real_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path_factory.mktemp("hooks-broker"))
    try:
        yield process
    finally:
        process.stop()


def _topic(real_broker: ServerProcess) -> str:
    name = f"HookTopic{next(_names)}"
    create_topic(real_broker, name, 1)
    return name


def _consumer(real_broker: ServerProcess) -> DefaultLitePullConsumer:
    return DefaultLitePullConsumer(
        config=LitePullConsumerConfig(
            consumer_group=f"hooks{next(_names)}",
            endpoints=(real_broker.grpc_address,),
            consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
            broker_suspend_max_time_ms=500,
        )
    )


def test_should_carry_a_trace_context_from_the_send_hook_to_the_consume_hook(
    real_broker: ServerProcess,
) -> None:
    topic = _topic(real_broker)
    tracer = Tracer()
    with Producer("hooks-producer", real_broker.grpc_address) as producer:
        producer.register_send_message_hook(tracer)
        sync = producer.send(Message(topic, b"sync"))
        batch = producer.send_batch([Message(topic, b"b0"), Message(topic, b"b1")])
        wait([producer.send_async(Message(topic, b"async"))], timeout=30)
        producer.send_oneway(Message(topic, b"oneway"))
    modes = [context.mode for context in tracer.sends]
    assert modes == [SendMode.SYNC, SendMode.SYNC, SendMode.ASYNC, SendMode.ONEWAY]
    assert all(context.topic == topic for context in tracer.sends)
    assert all(c.producer_group == "hooks-producer" for c in tracer.sends)
    assert tracer.sends[0].results == [sync] and list(tracer.sends[1].results or ()) == batch
    assert len(tracer.sends[2].results or ()) == 1 and tracer.sends[3].results is None
    assert all(c.exception is None and c.elapsed_ns > 0 for c in tracer.sends)
    spans = [context.props["span"] for context in tracer.sends]

    consumer = _consumer(real_broker)
    consumer.register_consume_message_hook(tracer)
    with running(consumer):
        consumer.assign([MessageQueue(topic, real_broker.name, 0)])
        polled = poll_until(consumer, 5)
    assert [m.body for m in polled] == [b"sync", b"b0", b"b1", b"async", b"oneway"]
    # each message carries the trace its send's hook gave it (one per send: the batch shares)
    assert tracer.received_traces == [spans[0], spans[1], spans[1], spans[2], spans[3]]
    assert [m for c in tracer.consumed for m in c.messages] == polled


def test_should_give_poll_batch_hooks_the_batch(real_broker: ServerProcess) -> None:
    topic = _topic(real_broker)
    with Producer("hooks-producer", real_broker.grpc_address) as producer:
        producer.send_batch([Message(topic, b"%d" % i) for i in range(3)])
    tracer = Tracer()
    consumer = _consumer(real_broker)
    consumer.register_consume_message_hook(tracer)
    with running(consumer):
        consumer.assign([MessageQueue(topic, real_broker.name, 0)])
        batch = consumer.poll_batch(10_000)
    assert len(batch) == 3
    assert [c.batch for c in tracer.consumed] == [batch] and tracer.consumed[0].messages == ()


def test_should_send_and_poll_past_a_hook_that_raises(
    real_broker: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="aeromq.client._hooks")
    topic = _topic(real_broker)
    tracer = Tracer()
    with Producer("hooks-producer", real_broker.grpc_address) as producer:
        producer.register_send_message_hook(Broken())
        producer.register_send_message_hook(tracer)  # runs after the broken one
        producer.send(Message(topic, b"still sent"))
    consumer = _consumer(real_broker)
    consumer.register_consume_message_hook(Broken())
    with running(consumer):
        consumer.assign([MessageQueue(topic, real_broker.name, 0)])
        polled = poll_until(consumer, 1)
    assert [m.body for m in polled] == [b"still sent"] and len(tracer.sends) == 1
    raised = [r for r in caplog.records if "Broken.send_message_before raised" in r.getMessage()]
    assert raised and raised[0].exc_info is not None
    assert any("Broken.consume_message_after raised" in r.getMessage() for r in caplog.records)


def test_should_show_a_failed_send_to_its_hook(real_broker: ServerProcess) -> None:
    tracer = Tracer()
    with Producer("hooks-producer", real_broker.grpc_address) as producer:
        producer.register_send_message_hook(tracer)
        with pytest.raises(Exception) as info:
            producer.send(Message("NoSuchTopicForHooks", b"x"))
    assert tracer.sends[0].exception is info.value and tracer.sends[0].results is None
