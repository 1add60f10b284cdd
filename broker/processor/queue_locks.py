"""``QueueLockTable``: RocketMQ's ``RebalanceLockManager``, the broker's locks on a consumer
group's queues for orderly consumers (``LOCK_BATCH_MQ`` and ``UNLOCK_BATCH_MQ``).

An orderly consumer consumes a queue only while it holds the queue's lock, so a rebalance that
moves the queue never has two consumers on it at once: the new owner's lock is refused until
the old owner unlocks it (after its message in hand is done) or the lock lapses. A lock lasts
``lock_ttl_ms`` (RocketMQ's ``lockMaxLiveTime``, 60 s) from its last grant; the holder renews
it by locking again (the consumer does every 20 s, and before each consume of a queue whose
lock is older than half the TTL). A lock whose holder is no longer a live member of the group
(it left, its heartbeat stream closed, or its heartbeats stopped) is free at once: a consumer
killed by SIGKILL does not hold its queues for the whole TTL.

No I/O. ``is_member(group, client_id)`` answers liveness (the group manager's members);
``clock_ms`` is injected by tests. Caller: the control plane (gRPC threads, one lock here).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from aeromq.broker._errors import InvalidArgumentError

__all__ = ["DEFAULT_LOCK_TTL_MS", "QueueLockTable"]

DEFAULT_LOCK_TTL_MS: Final = 60_000

_QueueKey = tuple[str, int]


@dataclass(slots=True)
class _Lock:
    client_id: str
    granted_ms: int


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class QueueLockTable:
    """Group -> (topic, queue id) -> the lock (see the module doc)."""

    def __init__(
        self,
        is_member: Callable[[str, str], bool],
        lock_ttl_ms: int = DEFAULT_LOCK_TTL_MS,
        clock_ms: Callable[[], int] = _monotonic_ms,
    ) -> None:
        if lock_ttl_ms <= 0:
            raise InvalidArgumentError("lock_ttl_ms must be > 0", lock_ttl_ms=lock_ttl_ms)
        self._is_member = is_member
        self.lock_ttl_ms = lock_ttl_ms
        self._clock_ms = clock_ms
        self._mutex = threading.Lock()
        self._groups: dict[str, dict[_QueueKey, _Lock]] = {}

    def lock_batch(
        self, group: str, client_id: str, topic: str, queue_ids: Iterable[int]
    ) -> list[int]:
        """Lock (or renew) each queue for ``client_id`` unless another live client's lock on
        it has not lapsed; the queue ids ``client_id`` holds now, in the order asked."""
        if not client_id:
            raise InvalidArgumentError("a queue lock needs a client_id", group=group)
        now_ms = self._clock_ms()
        locked: list[int] = []
        with self._mutex:
            locks = self._groups.setdefault(group, {})
            for queue_id in queue_ids:
                key = (topic, queue_id)
                held = locks.get(key)
                if (
                    held is not None
                    and held.client_id != client_id
                    and self._live(group, held, now_ms)
                ):
                    continue
                locks[key] = _Lock(client_id, now_ms)
                locked.append(queue_id)
        return locked

    def unlock_batch(
        self, group: str, client_id: str, topic: str, queue_ids: Iterable[int]
    ) -> None:
        """Let go of the queues ``client_id`` holds among ``queue_ids`` (others are left)."""
        with self._mutex:
            locks = self._groups.get(group)
            if locks is None:
                return
            for queue_id in queue_ids:
                held = locks.get((topic, queue_id))
                if held is not None and held.client_id == client_id:
                    del locks[(topic, queue_id)]
            if not locks:
                del self._groups[group]

    def holder(self, group: str, topic: str, queue_id: int) -> str:
        """The client holding a live lock on the queue (``""``: none)."""
        with self._mutex:
            held = self._groups.get(group, {}).get((topic, queue_id))
            if held is None or not self._live(group, held, self._clock_ms()):
                return ""
            return held.client_id

    def _live(self, group: str, held: _Lock, now_ms: int) -> bool:
        return now_ms - held.granted_ms < self.lock_ttl_ms and self._is_member(
            group, held.client_id
        )
