"""``DefaultLitePullConsumer.send_back`` against a real broker: the failed message comes again
from the group's retry topic with its first topic restored and its reconsume times counted,
after its back-off; past the maximum it goes to the dead-letter queue."""

from __future__ import annotations

import time

from aeromq.client import Message, MessageExt
from aeromq.common import PROPERTY_RETRY_TOPIC, dlq_topic, retry_topic
from aeromq.consumer import DefaultLitePullConsumer
from aeromq.producer import Producer
from tests.consumer._broker_process import ServerProcess, client, create_topic
from tests.consumer.push._push import fast_pull, unique, wait_until


def _poll_until(consumer: DefaultLitePullConsumer, count: int) -> list[MessageExt]:
    got: list[MessageExt] = []
    wait_until(lambda: bool(got.extend(consumer.poll(100))) or len(got) >= count,
               what=f"{count} messages")  # fmt: skip
    return got


def test_should_send_back_to_the_retry_topic_then_the_dlq(
    real_broker: ServerProcess, producer: Producer
) -> None:
    topic, group = unique("SendBackTopic"), unique("send-back-group")
    create_topic(real_broker, topic, 1)
    for i in range(3):
        producer.send(Message(topic, f"m{i}".encode(), tags="T"))
    consumer = DefaultLitePullConsumer(config=fast_pull(group, real_broker.grpc_address))
    consumer.subscribe(topic, "*")
    with consumer:
        first = _poll_until(consumer, 3)
        failed = next(m for m in first if m.body == b"m1")
        sent_at = time.monotonic()
        assert consumer.send_back(failed, delay_level=1, max_reconsume_times=1) == retry_topic(
            group
        )
        assert retry_topic(group) in {q.topic for q in consumer.assignment()}
        again = _poll_until(consumer, 1)
        assert [m.body for m in again] == [b"m1"]
        retried = again[0]
        assert time.monotonic() - sent_at >= 1.0  # level 1: 1 s, held by the broker's timer
        assert retried.topic == topic  # restored
        assert retried.get_property(PROPERTY_RETRY_TOPIC) == topic
        assert retried.reconsume_times == 1
        assert consumer.send_back(retried, max_reconsume_times=1) == dlq_topic(group)
    with client(real_broker) as admin:
        dead = admin.view_messages(dlq_topic(group), 0, 0)
    assert [m.body for m in dead] == [b"m1"]
    assert dead[0].properties[PROPERTY_RETRY_TOPIC] == topic
