"""``OrderlyConsumeService``: RocketMQ's ``ConsumeMessageOrderlyService``: each queue's
messages in order, one listener call at a time per queue, while the queue is locked.

The poll thread appends each polled message to its queue's line (:meth:`dispatch`); a queue
with messages and no run going gets one on a listener thread. A run takes the first
``consume_message_batch_max_size`` messages of the line, checks the queue's broker lock (takes
it when missing; without it the run waits ``_LOCK_RETRY_MS`` and tries again), and calls the
listener:

- ``SUCCESS``: the messages leave the line and the queue's offset is committed past them;
- ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` (or an exception): they stay first in line; the run ends
  and the queue is tried again after ``suspend_current_queue_time_ms`` with the same messages
  (their ``reconsume_times`` counted up). Once a message failed ``max_reconsume_times`` times
  the batch is sent to the ``%DLQ%<group>`` and the queue goes on (RocketMQ's
  ``checkReconsumeTimes``).

A rebalance that moves a queue away (:meth:`drop`, from ``consumer.rebalance`` before the
queue's release) stops its runs, waits up to ``_DROP_WAIT_S`` for the listener call in hand to
end, puts the queue's offset in the offset store (the release persists it) and unlocks the
queue: the next owner, refused the lock until then, starts exactly after the last message
consumed here. A queue whose line grows to ``pull_threshold_for_queue`` is paused.

Caller: the poll thread, the listener threads, the rebalance thread (``drop``).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from aeromq.client import MessageExt, MessageQueue
from aeromq.consumer.push._runtime import PushRuntime
from aeromq.consumer.push.listeners import (
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    OrderlyFunction,
)
from aeromq.consumer.push.queue_locks import QueueLockKeeper
from aeromq.consumer.retry import stored_queue

__all__ = ["OrderlyConsumeService"]

_log = logging.getLogger(__name__)

_LOCK_RETRY_MS: Final = 100
_DROP_WAIT_S: Final = 1.0


@dataclass(slots=True)
class _Line:
    """One queue's messages waiting, in offset order, and its run."""

    messages: collections.deque[MessageExt] = field(default_factory=collections.deque)
    running: bool = False
    dropped: bool = False
    paused: bool = False
    commit_offset: int = -1
    attempts: int = 0
    consuming: threading.Lock = field(default_factory=threading.Lock)


class OrderlyConsumeService:
    """See the module."""

    def __init__(
        self, runtime: PushRuntime, listener: OrderlyFunction, locks: QueueLockKeeper
    ) -> None:
        self._rt = runtime
        self._listener = listener
        self._locks = locks
        self._mutex = threading.Lock()
        self._lines: dict[MessageQueue, _Line] = {}
        self.consumed = 0
        self.suspended = 0
        self.dead_lettered = 0

    def dispatch(self, messages: Sequence[MessageExt]) -> None:
        """Append polled ``messages`` to their queues' lines; start runs (see the module)."""
        rt = self._rt
        starts: list[tuple[MessageQueue, _Line]] = []
        pauses: list[MessageQueue] = []
        with self._mutex:
            for message in messages:
                queue = stored_queue(message, rt.group)
                line = self._lines.get(queue)
                if line is None or line.dropped:
                    line = self._lines[queue] = _Line()
                line.messages.append(message)
                if not line.running:
                    line.running = True
                    starts.append((queue, line))
                if not line.paused and len(line.messages) >= rt.config.pull_threshold_for_queue:
                    line.paused = True
                    pauses.append(queue)
        if pauses:
            rt.lite.pause(pauses)
        for queue, line in starts:
            rt.executor.submit(self._run, queue, line)

    def drop(self, queue: MessageQueue) -> None:
        """``queue`` is rebalanced away (see the module)."""
        with self._mutex:
            line = self._lines.pop(queue, None)
            if line is not None:
                line.dropped = True
        if line is not None:
            waited = line.consuming.acquire(timeout=_DROP_WAIT_S)
            try:
                store = self._rt.lite.offset_store
                if line.commit_offset >= 0 and store is not None:
                    store.update_offset(queue, line.commit_offset)
            finally:
                if waited:
                    line.consuming.release()
            if not waited:  # the listener still runs: leave the lock to lapse
                _log.warning("orderly queue dropped while its listener runs: %s", queue)
                return
        self._locks.unlock((queue,))

    def stop(self) -> None:
        """Stop every run (shutdown); each listener call in hand is waited for."""
        with self._mutex:
            lines = list(self._lines.items())
            self._lines.clear()
        for queue, line in lines:
            line.dropped = True
            if line.consuming.acquire(timeout=_DROP_WAIT_S):
                line.consuming.release()
            self._rt.commit(queue, line.commit_offset)

    def _run(self, queue: MessageQueue, line: _Line) -> None:
        """One step of ``line``'s run (its only one: a line dropped and made again has its
        own, so an older run left scheduled stops here)."""
        rt = self._rt
        with self._mutex:
            if line.dropped or self._lines.get(queue) is not line:
                return
            size = rt.config.consume_message_batch_max_size
            batch = list(itertools.islice(line.messages, size))
            if not batch:
                line.running = False
                return
        if not self._locks.holds(queue) and not self._locks.lock(queue):
            rt.later(_LOCK_RETRY_MS, lambda: self._run(queue, line))
            return
        with line.consuming:
            if line.dropped:
                return
            delay_ms = self._consume(queue, line, batch)
        if delay_ms:
            rt.later(delay_ms, lambda: self._run(queue, line))
        else:
            with contextlib.suppress(RuntimeError):  # shut down meanwhile
                rt.executor.submit(self._run, queue, line)

    def _consume(self, queue: MessageQueue, line: _Line, batch: list[MessageExt]) -> int:
        """One listener call; the delay before the next run (0: at once)."""
        rt = self._rt
        context = ConsumeOrderlyContext(queue)
        try:
            status = self._listener(list(batch), context)
        except Exception:
            _log.exception("orderly listener failed: group=%s queue=%s", rt.group, queue)
            status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        if status is not ConsumeOrderlyStatus.SUCCESS:
            line.attempts += 1
            if line.attempts < rt.config.max_reconsume_times:
                self.suspended += 1
                for message in batch:
                    message.reconsume_times = line.attempts
                suspend = context.suspend_current_queue_time_ms
                return suspend if suspend > 0 else rt.config.suspend_current_queue_time_ms
            if not all(rt.send_back(message, -1) for message in batch):
                return rt.config.send_back_retry_delay_ms
            self.dead_lettered += len(batch)
        else:
            self.consumed += len(batch)
        line.attempts = 0
        resume = False
        with self._mutex:
            for _ in batch:
                line.messages.popleft()
            line.commit_offset = batch[-1].queue_offset + 1
            if line.paused and len(line.messages) <= rt.config.pull_threshold_for_queue // 2:
                line.paused = False
                resume = True
        rt.commit(queue, line.commit_offset)
        if resume:
            rt.lite.resume((queue,))
        return 0
