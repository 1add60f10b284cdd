"""``ConcurrentConsumeService``: RocketMQ's ``ConsumeMessageConcurrentlyService``.

The poll thread hands each polled chunk to :meth:`ConcurrentConsumeService.dispatch`: the
messages are grouped by the queue they were stored in, taken into that queue's
:class:`~consumer.push.offsets.InFlightOffsets`, cut into batches of
``consume_message_batch_max_size`` and submitted to the listener threads. A batch's answer:

- ``CONSUME_SUCCESS``: done (with ``ack_index`` >= 0, the messages after it are failed);
- ``RECONSUME_LATER`` (or an exception): each message is sent back to the broker, which
  holds it in ``%RETRY%<group>`` for the back-off (``delay_level_when_next_consume``, default
  the broker's ``3 + reconsume times``) or, past ``max_reconsume_times``, puts it in the
  ``%DLQ%<group>``; a send-back the broker does not take is handed to the listener again
  after ``send_back_retry_delay_ms``, its offset still in hand.

After each batch the queue's offset is committed below its lowest unfinished message (never
past one still in hand). A queue with ``pull_threshold_for_queue`` messages in hand is paused
(its pulls idle) until half of them are done.

Caller: the push consumer's poll thread (``dispatch``), the listener threads, a rebalance
(``drop``, before the queue's release). Affects: the runtime's commits and pauses.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from aeromq.client import MessageExt, MessageQueue
from aeromq.consumer.push._runtime import PushRuntime
from aeromq.consumer.push.listeners import (
    ConcurrentlyFunction,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
)
from aeromq.consumer.push.offsets import InFlightOffsets
from aeromq.consumer.retry import stored_queue

__all__ = ["ConcurrentConsumeService"]

_log = logging.getLogger(__name__)


class ConcurrentConsumeService:
    """See the module."""

    def __init__(self, runtime: PushRuntime, listener: ConcurrentlyFunction) -> None:
        self._rt = runtime
        self._listener = listener
        self._lock = threading.Lock()
        self._queues: dict[MessageQueue, InFlightOffsets] = {}
        self._paused: set[MessageQueue] = set()
        self.consumed = 0
        self.failed = 0

    def dispatch(self, messages: Sequence[MessageExt]) -> None:
        """Hand polled ``messages`` to the listener threads (see the module)."""
        rt = self._rt
        by_queue: dict[MessageQueue, list[MessageExt]] = {}
        for message in messages:
            by_queue.setdefault(stored_queue(message, rt.group), []).append(message)
        threshold = rt.config.pull_threshold_for_queue
        size = rt.config.consume_message_batch_max_size
        for queue, found in by_queue.items():
            with self._lock:
                offsets = self._queues.setdefault(queue, InFlightOffsets())
                offsets.take(m.queue_offset for m in found)
                pause = len(offsets) >= threshold and queue not in self._paused
                if pause:
                    self._paused.add(queue)
            if pause:
                rt.lite.pause((queue,))
            for start in range(0, len(found), size):
                rt.executor.submit(self._consume, queue, found[start : start + size])

    def drop(self, queue: MessageQueue) -> None:
        """``queue`` is rebalanced away: put its commit offset in the offset store (its
        release persists it) and forget it; its messages in hand finish uncommitted."""
        with self._lock:
            offsets = self._queues.pop(queue, None)
            self._paused.discard(queue)
        store = self._rt.lite.offset_store
        if offsets is not None and offsets.commit_offset >= 0 and store is not None:
            store.update_offset(queue, offsets.commit_offset)

    def _consume(self, queue: MessageQueue, batch: list[MessageExt]) -> None:
        rt = self._rt
        context = ConsumeConcurrentlyContext(queue)
        try:
            status = self._listener(list(batch), context)
        except Exception:
            _log.exception("listener failed: group=%s queue=%s", rt.group, queue)
            status = ConsumeConcurrentlyStatus.RECONSUME_LATER
        if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
            failed = batch[context.ack_index + 1 :] if context.ack_index >= 0 else []
        else:  # RECONSUME_LATER, or not an answer (RocketMQ's null)
            failed = batch
        self.consumed += len(batch) - len(failed)
        self.failed += len(failed)
        again = [m for m in failed if not rt.send_back(m, context.delay_level_when_next_consume)]
        kept = {id(m) for m in again}
        self._finish(queue, [m.queue_offset for m in batch if id(m) not in kept])
        if again:
            rt.later(rt.config.send_back_retry_delay_ms, lambda: self._consume(queue, again))

    def _finish(self, queue: MessageQueue, offsets: list[int]) -> None:
        rt = self._rt
        with self._lock:
            found = self._queues.get(queue)
            if found is None:  # dropped meanwhile
                return
            commit = found.finish(offsets)
            resume = queue in self._paused and len(found) <= rt.config.pull_threshold_for_queue // 2
            if resume:
                self._paused.discard(queue)
        rt.commit(queue, commit)
        if resume:
            rt.lite.resume((queue,))
