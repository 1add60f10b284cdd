"""CONSISTENT_HASH: a hash ring of consumers, each queue owned by the next consumer point at or
after the queue's hash (wrapping round).

Each consumer id puts ``virtual_node_count`` points on the ring (10 by default), at the hashes
of ``"<cid>-0"``, ``"<cid>-1"``, ...; a queue hashes its ``str()`` form, ``MessageQueue
[topic=T, brokerName=B, queueId=N]``. The default hash is RocketMQ's: the first four bytes of
the MD5 of the UTF-8 key, big-endian, unsigned. Two points with one hash: the later consumer
in Java string order keeps it, as RocketMQ's ``TreeMap.put`` does on its sorted input. So the
result equals RocketMQ's ``AllocateMessageQueueConsistentHash``, and a consumer joining or
leaving moves only the queues it takes or gives up.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable

from aeromq.client import IllegalArgumentError, MessageQueue
from aeromq.consumer.allocate._strategy import CheckedAllocateStrategy

__all__ = ["DEFAULT_VIRTUAL_NODE_COUNT", "AllocateMessageQueueConsistentHash", "md5_hash"]

DEFAULT_VIRTUAL_NODE_COUNT = 10


def md5_hash(key: str) -> int:
    """RocketMQ's ring hash: the first 4 bytes of MD5(UTF-8 key) as an unsigned big-endian int."""
    digest = hashlib.md5(key.encode("utf-8", "replace"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big")


class AllocateMessageQueueConsistentHash(CheckedAllocateStrategy):
    """``virtual_node_count`` >= 1 (RocketMQ accepts 0, which leaves every queue unowned)."""

    __slots__ = ("_hash", "_virtual_node_count")

    def __init__(
        self,
        virtual_node_count: int = DEFAULT_VIRTUAL_NODE_COUNT,
        hash_function: Callable[[str], int] = md5_hash,
    ) -> None:
        if virtual_node_count < 1:
            raise IllegalArgumentError(
                "virtual_node_count must be at least 1", virtual_node_count=virtual_node_count
            )
        self._virtual_node_count = virtual_node_count
        self._hash = hash_function

    @property
    def name(self) -> str:
        return "CONSISTENT_HASH"

    def _allocate(
        self,
        consumer_group: str,
        current_cid: str,
        queues: list[MessageQueue],
        consumers: list[str],
    ) -> list[MessageQueue]:
        hash_of = self._hash
        ring: dict[int, str] = {}
        for cid in consumers:
            for replica in range(self._virtual_node_count):
                ring[hash_of(f"{cid}-{replica}")] = cid
        points = sorted(ring)
        owned = []
        for queue in queues:
            index = bisect_left(points, hash_of(str(queue)))
            if ring[points[index if index < len(points) else 0]] == current_cid:
                owned.append(queue)
        return owned
