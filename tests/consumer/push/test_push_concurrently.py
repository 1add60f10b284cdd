"""``DefaultMQPushConsumer`` with a concurrent listener against a real broker: a message whose
handler keeps failing comes again after each back-off and finally lands in the dead-letter
queue while the others flow; the admin's re-send puts it back on its first topic."""

from __future__ import annotations

import itertools
import threading
import time

from aeromq.client import Message, MessageExt
from aeromq.common import PROPERTY_RETRY_TOPIC, dlq_topic
from aeromq.consumer.push import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    DefaultMQPushConsumer,
)
from aeromq.producer import Producer
from tests.consumer._broker_process import ServerProcess, client, create_topic
from tests.consumer.push._push import push_config, unique, wait_until

_BAD = b"bad"


class _Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[bytes, str, int, float]] = []

    def __call__(
        self, messages: list[MessageExt], context: ConsumeConcurrentlyContext
    ) -> ConsumeConcurrentlyStatus:
        with self.lock:
            for m in messages:
                self.seen.append((m.body, m.topic, m.reconsume_times, time.monotonic()))
        if any(m.body == _BAD for m in messages):
            context.delay_level_when_next_consume = 1  # 1 s instead of 10 s
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def times(self, body: bytes) -> list[tuple[bytes, str, int, float]]:
        with self.lock:
            return [s for s in self.seen if s[0] == body]


def test_should_retry_a_failing_message_after_its_back_off_then_dead_letter_it(
    real_broker: ServerProcess, producer: Producer
) -> None:
    topic, group = unique("PushTopic"), unique("push-group")
    create_topic(real_broker, topic, 2)
    bodies = [f"ok{i}".encode() for i in range(20)]
    for body in [*bodies[:10], _BAD, *bodies[10:]]:
        producer.send(Message(topic, body))
    recorder = _Recorder()
    consumer = DefaultMQPushConsumer(
        config=push_config(group, real_broker.grpc_address, max_reconsume_times=2)
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(recorder)
    with consumer:
        wait_until(lambda: all(recorder.times(b) for b in bodies), what="the good messages")
        wait_until(lambda: len(recorder.times(_BAD)) >= 3, what="the retries")
        with client(real_broker) as admin:
            wait_until(lambda: bool(admin.view_messages(dlq_topic(group), 0, 0)), what="the DLQ")
            dead = admin.view_messages(dlq_topic(group), 0, 0)
        assert [m.body for m in dead] == [_BAD]
        assert dead[0].properties[PROPERTY_RETRY_TOPIC] == topic
        attempts = recorder.times(_BAD)
        assert [(t, r) for _, t, r, _ in attempts] == [(topic, 0), (topic, 1), (topic, 2)]
        gaps = [b[3] - a[3] for a, b in itertools.pairwise(attempts)]
        assert all(gap >= 1.0 for gap in gaps), gaps  # level 1: 1 s, held by the timer
        assert all(len(recorder.times(b)) == 1 for b in bodies)  # the others once each
        # the admin re-sends it: it comes to its first topic again, its count reset
        with client(real_broker) as admin:
            resent = admin.resend_message(dlq_topic(group), 0, dead[0].queue_offset)
        assert resent.topic == topic
        wait_until(lambda: len(recorder.times(_BAD)) >= 4, what="the re-sent message")
        assert recorder.times(_BAD)[3][1:3] == (topic, 0)
        assert consumer.consume_counts()["consumed"] >= len(bodies)
