"""CONSISTENT_HASH. The expected owners and hashes were printed by OpenJDK 17 running RocketMQ's
ring (``TreeMap`` of ``MD5Hash`` points, ``tailMap`` routing, ``MessageQueue.toString`` keys)."""

from __future__ import annotations

import pytest

from aeromq.client import IllegalArgumentError, MessageQueue
from aeromq.consumer import AllocateMessageQueueConsistentHash
from aeromq.consumer.allocate.consistent_hash import md5_hash
from tests.consumer._helpers import cids, owner_of, owners, queues


def test_should_hash_keys_as_rocketmq_md5_hash() -> None:
    assert md5_hash("CID-0-0") == 1900518137
    assert md5_hash(str(MessageQueue("topic_test", "brokerName", 0))) == 2171879703


@pytest.mark.parametrize(
    ("consumers", "virtual_nodes", "topic", "broker", "expected"),
    [
        (cids(3, "CID-"), 10, "topic_test", "brokerName", [2, 0, 1, 2, 2, 2, 0, 0]),
        (cids(5, "CID-"), 3, "topic_test", "brokerName", [3, 4, 1, 0, 2, 0, 3, 3, 0, 3, 3, 3]),
    ],
)
def test_should_allocate_exactly_as_rocketmq(
    consumers: list[str], virtual_nodes: int, topic: str, broker: str, expected: list[int]
) -> None:
    mq_all = queues(len(expected), topic, broker)
    owner = owner_of(AllocateMessageQueueConsistentHash(virtual_nodes), mq_all, consumers)
    assert [owner[queue] for queue in mq_all] == [consumers[index] for index in expected]


def test_should_allocate_ip_style_client_ids_as_rocketmq() -> None:
    consumers = ["192.168.0.1@1234", "192.168.0.2@5678"]
    mq_all = queues(6, "TopicTest", "broker-a")
    owner = owner_of(AllocateMessageQueueConsistentHash(), mq_all, consumers)
    assert [consumers.index(owner[queue]) for queue in mq_all] == [1, 0, 1, 0, 1, 1]


@pytest.mark.parametrize(("queue_count", "consumer_count"), [(20, 10), (10, 20), (7, 3), (1, 1)])
def test_should_move_only_the_queues_of_a_leaving_or_joining_consumer(
    queue_count: int, consumer_count: int
) -> None:
    """RocketMQ's ``AllocateMessageQueueConsitentHashTest.testAllocate`` (3 virtual nodes)."""
    strategy = AllocateMessageQueueConsistentHash(3)
    mq_all = queues(queue_count, "topic_test")
    consumers = cids(consumer_count, "CID-")
    before = owner_of(strategy, mq_all, consumers)

    removed, remaining = consumers[0], consumers[1:]
    if remaining:
        after_leave = owner_of(strategy, mq_all, remaining)
        for queue, cid in before.items():
            if cid != removed:
                assert after_leave[queue] == cid
    else:
        after_leave = {}

    joined = [*remaining, "CID-NEW"]
    after_join = owner_of(strategy, mq_all, joined)
    for queue, cid in after_join.items():
        if cid != "CID-NEW":
            assert after_leave[queue] == cid


def test_should_accept_a_custom_hash_function() -> None:
    strategy = AllocateMessageQueueConsistentHash(1, hash_function=lambda key: len(key))
    mq_all = queues(3)
    # points: len("a-0") == 3 < len("bb-0") == 4; queue keys are longer: all wrap to "a"
    assert owners(strategy, mq_all, ["a", "bb"]) == {queue: ["a"] for queue in mq_all}


def test_should_reject_a_ring_without_virtual_nodes() -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        AllocateMessageQueueConsistentHash(0)
    assert str(raised.value) == "virtual_node_count must be at least 1: virtual_node_count=0"
