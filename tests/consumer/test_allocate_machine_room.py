from __future__ import annotations

import random

import pytest

from aeromq.client import IllegalArgumentError, MessageQueue
from aeromq.consumer import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueByMachineRoom,
    PrefixMachineRoomResolver,
)
from aeromq.consumer.allocate.machine_room import java_split
from tests.consumer._helpers import cids, owners, queue_ids, queues


def _rooms_queues(size: int) -> list[MessageQueue]:
    half = size // 2
    return [
        MessageQueue("topic", "room1@broker-a" if index < half else "room2@broker-b", index)
        for index in range(size)
    ]


def test_should_spread_the_consuming_rooms_queues_as_rocketmq_machine_room_test() -> None:
    strategy = AllocateMessageQueueByMachineRoom({"room1"})
    consumers, mq_all = cids(2), _rooms_queues(10)
    allocated = {cid: queue_ids(strategy.allocate("", cid, mq_all, consumers)) for cid in consumers}
    assert allocated == {"CID_PREFIX0": [0, 1, 4], "CID_PREFIX1": [2, 3]}
    assert strategy.consumer_idcs == frozenset({"room1"})


def test_should_read_the_consuming_rooms_from_room_at_id_consumer_ids() -> None:
    strategy = AllocateMessageQueueByMachineRoom()
    consumers, mq_all = ["room2@c1", "room2@c2", "no-room"], _rooms_queues(10)
    allocated = {cid: queue_ids(strategy.allocate("", cid, mq_all, consumers)) for cid in consumers}
    # consumers in Java order: no-room, room2@c1, room2@c2; queues 5..9 of room2 only
    assert allocated == {"no-room": [5, 8], "room2@c1": [6, 9], "room2@c2": [7]}


def test_should_ignore_brokers_not_named_room_at_broker() -> None:
    mq_all = [
        MessageQueue("t", "room1@b@x", 0),
        MessageQueue("t", "room1", 1),
        MessageQueue("t", "room1@b@", 2),
        MessageQueue("t", "room1@b", 3),
    ]
    allocated = AllocateMessageQueueByMachineRoom({"room1"}).allocate("", "c", mq_all, ["c"])
    assert queue_ids(allocated) == [3, 2]  # in queue order: "room1@b" < "room1@b@"


def test_should_split_names_as_java_does() -> None:
    assert java_split("a@b@", "@") == ["a", "b"]
    assert java_split("@b", "@") == ["", "b"]
    assert java_split("@", "@") == []
    assert java_split("ab", "@") == ["ab"]


_DASH = PrefixMachineRoomResolver("-")  # RocketMQ's test names: IDC1-brokerName, IDC1-CID-0
_NEARBY = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), _DASH)


def _idc_queues(idc_count: int, queue_count: int) -> list[MessageQueue]:
    return [
        queue
        for idc in range(1, idc_count + 1)
        for queue in queues(queue_count, "topic_test", f"IDC{idc}-brokerName")
    ]


def _idc_consumers(idc_count: int, consumer_count: int) -> list[str]:
    return [
        cid for idc in range(1, idc_count + 1) for cid in cids(consumer_count, f"IDC{idc}-CID-")
    ]


def _check_nearby(
    broker_idcs: int, consumer_idcs: int, queue_count: int, consumer_count: int
) -> None:
    """RocketMQ's ``AllocateMachineRoomNearByTest``: every queue has one owner, and a queue of a
    room with consumers goes to a consumer of that room."""
    mq_all = _idc_queues(broker_idcs, queue_count)
    consumers = _idc_consumers(consumer_idcs, consumer_count)
    consumer_rooms = {_DASH.consumer_deploy_in(cid) for cid in consumers}
    for queue, holders in owners(_NEARBY, mq_all, consumers).items():
        assert len(holders) == 1, (queue, holders)
        room = _DASH.broker_deploy_in(queue)
        if room in consumer_rooms:
            assert _DASH.consumer_deploy_in(holders[0]) == room


@pytest.mark.parametrize("consumer_count", [10, 20, 30, 1])
def test_should_keep_queues_in_their_room_when_rooms_match(consumer_count: int) -> None:
    _check_nearby(5, 5, 20, consumer_count)


@pytest.mark.parametrize("queue_count", [10, 5, 20, 1])
def test_should_keep_queues_in_their_room_when_consumer_rooms_are_more(queue_count: int) -> None:
    _check_nearby(5, 6, queue_count, 10)


@pytest.mark.parametrize("queue_count", [10, 5, 20, 1])
def test_should_share_queues_of_rooms_without_consumers(queue_count: int) -> None:
    _check_nearby(5, 3, queue_count, 10)


def test_should_survive_rocketmqs_random_cases() -> None:
    rng = random.Random(20240607)
    for _ in range(10):
        _check_nearby(
            rng.randint(1, 10), rng.randint(1, 10), rng.randint(1, 30), rng.randint(1, 20)
        )


def test_should_allocate_a_rooms_queues_by_the_delegate_among_that_room() -> None:
    nearby = AllocateMachineRoomNearby(AllocateMessageQueueAveragely())
    mq_all = queues(4, "t", "hz@broker-a") + queues(2, "t", "sh@broker-b")
    consumers = ["hz@c1", "hz@c2"]
    assert nearby.name == "MACHINE_ROOM_NEARBY-AVG"
    hz1 = nearby.allocate("g", "hz@c1", mq_all, consumers)
    assert [(q.broker_name, q.queue_id) for q in hz1] == [
        ("hz@broker-a", 0), ("hz@broker-a", 1), ("sh@broker-b", 0)
    ]  # fmt: skip


def test_should_reject_an_empty_machine_room() -> None:
    nearby = AllocateMachineRoomNearby(AllocateMessageQueueAveragely())
    with pytest.raises(IllegalArgumentError, match="the machine room of a queue is empty"):
        nearby.allocate("g", "hz@c1", queues(1, "t", "@broker"), ["hz@c1"])
    with pytest.raises(IllegalArgumentError, match="the machine room of a consumer is empty"):
        nearby.allocate("g", "hz@c1", queues(1, "t", "hz@b"), ["hz@c1", "@c2"])
