"""The consume-retry RPCs on a real store and gRPC server: ``ConsumerSendBack`` (retry topic
with the back-off level, then the dead-letter topic), ``CreateRetryTopic``, ``LockBatchMQ`` and
``UnlockBatchMQ`` (a live holder refuses others; a lapsed lock or a holder gone from the group
does not), ``ViewMessages`` and ``ResendMessage``; and the lock table alone with a clock."""

from __future__ import annotations

import pytest

from aeromq.broker.processor.queue_locks import QueueLockTable
from aeromq.client import ClientError
from aeromq.client.grpc_client import GrpcClient
from aeromq.common import dlq_topic, retry_topic
from aeromq.proto import consumer_group_pb2
from tests.broker.control.conftest import RunningBroker, put_messages

TOPIC, GROUP = "orders", "billing"


def _register(client: GrpcClient, client_id: str) -> None:
    client.send_heartbeat(
        consumer_group_pb2.HeartbeatRequest(
            client_id=client_id,
            consumers=[consumer_group_pb2.ConsumerData(consumer_group=GROUP)],
        )
    )


def test_should_send_back_with_the_back_off_then_to_the_dlq(
    broker: RunningBroker, client: GrpcClient
) -> None:
    client.create_topic(TOPIC, read_queue_nums=1, write_queue_nums=1)
    put_messages(broker.store, TOPIC, 0, 2)
    first = client.view_messages(TOPIC, 0, 1)[0]

    with pytest.raises(ClientError, match="another topic"):
        client.send_back(GROUP, first.commit_log_offset, topic="payments")
    retried = client.send_back(GROUP, first.commit_log_offset, max_reconsume_times=2, topic=TOPIC)
    assert (retried.topic, retried.reconsume_times) == (retry_topic(GROUP), 1)
    copy = broker.store.get_messages(retried.topic, 0, retried.queue_offset, 1).messages[0]
    assert copy.properties["RETRY_TOPIC"] == TOPIC
    assert copy.properties["DELAY"] == "3"  # 3 + 0 earlier send-backs: 10 s
    assert copy.properties["ORIGIN_MESSAGE_ID"] == first.offset_msg_id
    assert broker.store.topic_config.require(retried.topic).write_queue_nums == 1

    again = client.send_back(GROUP, copy.physical_offset, max_reconsume_times=2)
    later = broker.store.get_messages(again.topic, 0, again.queue_offset, 1).messages[0]
    assert (again.reconsume_times, later.properties["DELAY"]) == (2, "4")
    dead = client.send_back(GROUP, later.physical_offset, max_reconsume_times=2)
    assert (dead.topic, dead.reconsume_times) == (dlq_topic(GROUP), 3)
    assert "DELAY" not in client.view_messages(dead.topic, 0, 0)[0].properties
    assert client.create_retry_topic(GROUP) == retry_topic(GROUP)  # exists: nothing new


def test_should_resend_a_dead_letter_to_its_first_topic_and_refuse_others(
    broker: RunningBroker, client: GrpcClient
) -> None:
    client.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)
    put_messages(broker.store, TOPIC, 1, 1)
    stored = client.view_messages(TOPIC, 1, 0)[0]
    client.send_back(GROUP, stored.commit_log_offset, delay_level=-1)

    resent = client.resend_message(dlq_topic(GROUP), 0, 0)
    assert resent.topic == TOPIC
    copy = client.view_messages(TOPIC, resent.queue_id, resent.queue_offset)[0]
    assert copy.body == stored.body and "RETRY_TOPIC" not in copy.properties
    with pytest.raises(ClientError, match="dead-letter topic"):
        client.resend_message(TOPIC, 1, 0)
    with pytest.raises(ClientError, match="no such queue"):
        client.view_messages(TOPIC, 5, 0)


def test_should_lock_a_queue_for_one_live_client_at_a_time(
    broker: RunningBroker, client: GrpcClient
) -> None:
    client.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)
    _register(client, "a")
    _register(client, "b")
    assert client.lock_queues(GROUP, "a", TOPIC, [0, 1]) == [0, 1]
    assert client.lock_queues(GROUP, "b", TOPIC, [0, 1]) == []
    client.unlock_queues(GROUP, "a", TOPIC, [1])
    assert client.lock_queues(GROUP, "b", TOPIC, [0, 1]) == [1]
    client.unregister_client("a")  # gone from the group: its lock is free at once
    assert client.lock_queues(GROUP, "b", TOPIC, [0]) == [0]


def test_should_free_a_lock_once_its_ttl_passed_unless_renewed() -> None:
    now = [0]
    table = QueueLockTable(lambda group, client: True, lock_ttl_ms=1000, clock_ms=lambda: now[0])
    assert table.lock_batch(GROUP, "a", TOPIC, [0]) == [0]
    now[0] = 900
    assert table.lock_batch(GROUP, "a", TOPIC, [0]) == [0]  # renewed
    now[0] = 1800
    assert table.lock_batch(GROUP, "b", TOPIC, [0]) == []
    assert table.holder(GROUP, TOPIC, 0) == "a"
    now[0] = 1900
    assert table.lock_batch(GROUP, "b", TOPIC, [0]) == [0]
