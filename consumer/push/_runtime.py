"""``PushRuntime``: what the push consumer's consume services share: its configuration, the
inner lite pull consumer (commits, pause and resume), the retry calls, the listener threads
and the scheduler of delayed work. Made by ``DefaultMQPushConsumer.start``; the services see
nothing else of the consumer.

Offsets: a service commits a queue's offset in memory (``commit``) as its messages finish; the
poll thread persists them every ``persist_interval_ms`` (``persist``), and a rebalance's drop
persists with its release (``consumer.rebalance``). A queue this consumer no longer owns is
not committed (its next owner starts at its last committed offset: at least once).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from aeromq.client import ClientError, MessageExt, MessageQueue
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.consumer.push.config import PushConsumerConfig
from aeromq.consumer.retry import RetryBrokerApi
from aeromq.consumer.scheduler import TaskScheduler

__all__ = ["PushRuntime"]

_log = logging.getLogger(__name__)


@dataclass
class PushRuntime:
    """See the module."""

    config: PushConsumerConfig
    lite: DefaultLitePullConsumer
    retry: RetryBrokerApi
    executor: ThreadPoolExecutor
    scheduler: TaskScheduler
    client_id: str
    _offsets: dict[MessageQueue, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def group(self) -> str:
        """The consumer group."""
        return self.config.consumer_group

    def owns(self, queue: MessageQueue) -> bool:
        """Whether this consumer owns ``queue`` now."""
        return queue in self.lite.assigned_queues

    def commit(self, queue: MessageQueue, offset: int) -> None:
        """Commit ``offset`` of ``queue`` in memory (persisted by :meth:`persist`); nothing
        for a queue not owned any more."""
        if offset < 0 or not self.owns(queue):
            return
        with self._lock:
            self._offsets[queue] = offset
        self.lite.commit({queue: offset}, persist=False)

    def persist(self) -> None:
        """Persist the offsets committed since the last call. Caller: the poll thread."""
        with self._lock:
            offsets, self._offsets = self._offsets, {}
        owned = {q: o for q, o in offsets.items() if self.owns(q)}
        if owned:
            try:
                self.lite.commit(owned, persist=True)
            except ClientError as error:
                _log.warning("persisting consumed offsets failed: %s", error)

    def send_back(self, message: MessageExt, delay_level: int) -> bool:
        """Send ``message`` back (retry topic or DLQ); False when the broker could not take
        it (the caller hands it to the listener again later)."""
        try:
            self.retry.send_back(self.group, message, delay_level, self.config.max_reconsume_times)
        except ClientError as error:
            _log.warning("send-back failed, consuming again later: %s: %s", message, error)
            return False
        return True

    def later(self, delay_ms: int, action: Callable[[], None]) -> None:
        """Run ``action`` on a listener thread after ``delay_ms``."""

        def submit() -> None:
            with contextlib.suppress(RuntimeError):  # shut down meanwhile
                self.executor.submit(action)

        self.scheduler.schedule(delay_ms, submit)
