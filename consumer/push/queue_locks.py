"""``QueueLockKeeper``: an orderly push consumer's broker locks on its queues (RocketMQ's
``RebalanceImpl.lockAll``, ``lock`` and ``unlock``).

An orderly consumer consumes a queue only while it holds the queue's lock at the broker
(``broker.processor.queue_locks``): a rebalance that moves the queue hands it over only once
the old owner, its message in hand done, unlocked it (or left the group, or its lock lapsed).
The keeper renews every owned queue's lock every ``lock_interval_ms`` (:meth:`lock_all`), takes
a queue's lock at once when a consume finds it missing (:meth:`lock`), and counts a lock as
held for ``LOCK_HOLD_MS`` after its last grant (RocketMQ's 30 s against the broker's 60 s: a
consumer that cannot renew stops consuming before another can be granted the queue).

Caller: the push consumer's poll thread (``lock_all``), the orderly listener threads
(``holds``, ``lock``), a rebalance's drop and shutdown (``unlock``). Thread-safe.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Final

from aeromq.client import ClientError, MessageQueue
from aeromq.consumer.push._runtime import PushRuntime

__all__ = ["LOCK_HOLD_MS", "QueueLockKeeper"]

LOCK_HOLD_MS: Final = 30_000

_log = logging.getLogger(__name__)


class QueueLockKeeper:
    """See the module."""

    def __init__(self, runtime: PushRuntime) -> None:
        self._rt = runtime
        self._mutex = threading.Lock()
        self._granted_s: dict[MessageQueue, float] = {}

    def holds(self, queue: MessageQueue) -> bool:
        """Whether this consumer holds ``queue``'s lock (granted within ``LOCK_HOLD_MS``)."""
        with self._mutex:
            granted = self._granted_s.get(queue)
        return granted is not None and time.monotonic() - granted < LOCK_HOLD_MS / 1000

    def lock(self, queue: MessageQueue) -> bool:
        """Lock ``queue`` now; whether it is held."""
        self._lock_queues((queue,))
        return self.holds(queue)

    def lock_all(self) -> None:
        """Renew the locks of every owned queue; drop those refused."""
        self._lock_queues(self._rt.lite.assignment())

    def unlock(self, queues: Iterable[MessageQueue]) -> None:
        """Let go of ``queues``' locks (a failure is logged: the lock lapses at the broker)."""
        wanted = list(queues)
        with self._mutex:
            for queue in wanted:
                self._granted_s.pop(queue, None)
        if not wanted:
            return
        rt = self._rt
        try:
            rt.retry.unlock_queues(rt.group, rt.client_id, wanted)
        except ClientError as error:
            _log.warning("unlocking queues failed (their locks lapse): %s", error)

    def held(self) -> set[MessageQueue]:
        """The queues whose locks this consumer was granted (for shutdown)."""
        with self._mutex:
            return set(self._granted_s)

    def _lock_queues(self, queues: Iterable[MessageQueue]) -> None:
        wanted = set(queues)
        if not wanted:
            return
        rt = self._rt
        try:
            granted = rt.retry.lock_queues(rt.group, rt.client_id, wanted)
        except ClientError as error:
            _log.warning("locking queues failed: %s", error)
            return
        now = time.monotonic()
        with self._mutex:
            for queue in wanted:
                if queue in granted:
                    self._granted_s[queue] = now
                else:
                    self._granted_s.pop(queue, None)
