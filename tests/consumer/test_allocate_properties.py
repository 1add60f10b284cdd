"""Properties of the strategies over any group: one owner per queue, balance, order."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.client import MessageQueue
from aeromq.consumer import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
)
from tests.consumer._helpers import owners

_ROOMS = st.sampled_from(["hz", "sh", "bj"])
_QUEUE = st.builds(
    MessageQueue,
    topic=st.sampled_from(["TopicA", "TopicB"]),
    broker_name=st.builds("{}@broker-{}".format, _ROOMS, st.sampled_from("ab")),
    queue_id=st.integers(0, 15),
)
_QUEUES = st.lists(_QUEUE, min_size=1, max_size=40, unique=True)
_CIDS = st.lists(
    st.builds("{}@{}".format, _ROOMS, st.text("0123456789.@x\U0001f600", min_size=1, max_size=6)),
    min_size=1,
    max_size=12,
    unique=True,
)
_SPREADING: list[AllocateMessageQueueStrategy] = [
    AllocateMessageQueueAveragely(),
    AllocateMessageQueueAveragelyByCircle(),
    AllocateMessageQueueConsistentHash(),
    AllocateMachineRoomNearby(AllocateMessageQueueAveragely()),
    AllocateMachineRoomNearby(AllocateMessageQueueConsistentHash()),
]


@settings(max_examples=60, deadline=None)
@given(_QUEUES, _CIDS)
def test_should_give_every_queue_exactly_one_owner(
    mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    for strategy in _SPREADING:
        held = owners(strategy, mq_all, cid_all)
        assert all(len(holders) == 1 for holders in held.values()), (strategy.name, held)


@settings(max_examples=60, deadline=None)
@given(_QUEUES, _CIDS)
def test_should_balance_averagely_to_within_one_queue(
    mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    for strategy in (AllocateMessageQueueAveragely(), AllocateMessageQueueAveragelyByCircle()):
        sizes = [len(strategy.allocate("g", cid, mq_all, cid_all)) for cid in cid_all]
        assert max(sizes) - min(sizes) <= 1
        assert sum(sizes) == len(mq_all)


@settings(max_examples=60, deadline=None)
@given(_QUEUES, _CIDS, st.randoms(use_true_random=False))
def test_should_not_depend_on_the_order_of_the_inputs(
    mq_all: list[MessageQueue], cid_all: list[str], rng: random.Random
) -> None:
    shuffled_queues, shuffled_cids = list(mq_all), list(cid_all)
    rng.shuffle(shuffled_queues)
    rng.shuffle(shuffled_cids)
    for strategy in [*_SPREADING, AllocateMessageQueueByMachineRoom()]:
        for cid in cid_all:
            assert strategy.allocate("g", cid, mq_all, cid_all) == strategy.allocate(
                "g", cid, shuffled_queues, shuffled_cids
            )


@settings(max_examples=60, deadline=None)
@given(_QUEUES, _CIDS, st.sets(_ROOMS, max_size=3))
def test_should_give_one_owner_only_to_queues_of_consuming_rooms(
    mq_all: list[MessageQueue], cid_all: list[str], rooms: set[str]
) -> None:
    held = owners(AllocateMessageQueueByMachineRoom(rooms), mq_all, cid_all)
    for queue, holders in held.items():
        assert len(holders) == (1 if queue.broker_name.split("@")[0] in rooms else 0)


@settings(max_examples=60, deadline=None)
@given(_QUEUES, _CIDS)
def test_should_return_allocations_in_queue_order_without_duplicates(
    mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    for strategy in _SPREADING[:3]:
        for cid in cid_all:
            allocated = strategy.allocate("g", cid, mq_all + mq_all, cid_all + cid_all)
            assert allocated == sorted(set(allocated))
