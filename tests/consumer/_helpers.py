"""Inputs shaped as in RocketMQ's allocation tests, and the group-wide view of an allocation."""

from __future__ import annotations

from collections.abc import Sequence

from aeromq.client import MessageQueue
from aeromq.consumer import AllocateMessageQueueStrategy


def queues(count: int, topic: str = "topic", broker: str = "brokerName") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, queue_id) for queue_id in range(count)]


def cids(count: int, prefix: str = "CID_PREFIX") -> list[str]:
    return [f"{prefix}{index}" for index in range(count)]


def queue_ids(allocated: Sequence[MessageQueue]) -> list[int]:
    return [queue.queue_id for queue in allocated]


def owners(
    strategy: AllocateMessageQueueStrategy,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
) -> dict[MessageQueue, list[str]]:
    """Every queue of ``mq_all`` -> the consumers that were given it, each running the strategy."""
    result: dict[MessageQueue, list[str]] = {queue: [] for queue in mq_all}
    for cid in cid_all:
        for queue in strategy.allocate("group", cid, mq_all, cid_all):
            result[queue].append(cid)
    return result


def owner_of(
    strategy: AllocateMessageQueueStrategy,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
) -> dict[MessageQueue, str]:
    """Queue -> its single owner; fails when a queue has none or several."""
    found = owners(strategy, mq_all, cid_all)
    assert all(len(holders) == 1 for holders in found.values()), found
    return {queue: holders[0] for queue, holders in found.items()}
