"""``Committer``: the consumer's commits, explicit (``commit``) and automatic (``auto_commit``).

``poll`` moves each queue's consume offset past what it returned. With ``auto_commit``
(default), the next ``poll`` after ``auto_commit_interval_ms`` commits the consume offsets in
memory (:meth:`Committer.maybe_auto_commit`) and a timer of the consumer's services persists
them every ``persist_consumer_offset_interval_ms``; with it off, only ``commit`` moves
committed offsets (RocketMQ #5315). ``commit`` persists by default (RocketMQ's does not). In
BROADCASTING every commit is persisted at once (to the local file). Offsets are also persisted
when a queue is rebalanced away and at shutdown (``consumer.services``).

A queue is committed under its lock and only while it is owned and not dropped: once a drop
marked it dropped (under the same lock) and persisted its offset, nothing commits it again, so
no stale offset can follow. A queue not owned is skipped with a warning, as RocketMQ does.

Caller: the consumer façade (``commit``, ``committed``), ``poll`` (auto commit). Affects: the
offset store (:class:`~consumer.offset_store.OffsetStore`): its table in memory and, when
persisting, the broker or the local file.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Mapping

from aeromq.client import ClientError, IllegalArgumentError, MessageQueue
from aeromq.consumer.config import MessageModel
from aeromq.consumer.offset_store import ReadOffsetType
from aeromq.consumer.services import ConsumerServices

__all__ = ["Committer"]

_log = logging.getLogger(__name__)


class Committer:
    """Commits of the owned queues' offsets (see the module doc)."""

    def __init__(self, services: ConsumerServices) -> None:
        self._services = services
        self._assigned = services.assigned
        self.next_auto_commit_s = -1.0
        """When the next ``poll`` commits automatically (``time.monotonic()`` seconds)."""

    def commit(
        self,
        offsets: Mapping[MessageQueue, int] | Collection[MessageQueue] | None,
        persist: bool,
    ) -> None:
        """Caller: ``commit``, ``commit_sync``. Affects: the offset store in memory and, with
        ``persist`` (or in BROADCASTING), the broker or the local file now. Raises
        IllegalArgumentError for a negative offset, a ClientError when persisting fails."""
        services = self._services
        services.check_running()
        store = services.require_store()
        if offsets is None:
            queues = self._assigned.queues()
            committed = self._commit_consumed(queues)
        elif isinstance(offsets, Mapping):
            committed = []
            for queue, offset in offsets.items():
                if offset < 0:
                    raise IllegalArgumentError(
                        "a committed offset must be >= 0", queue=str(queue), offset=offset
                    )
                if self._commit_owned(queue, offset):
                    committed.append(queue)
        else:
            committed = self._commit_consumed(offsets)
        if persist or services.config.message_model is MessageModel.BROADCASTING:
            store.persist_all(committed)

    def maybe_auto_commit(self) -> None:
        """Caller: ``poll`` with ``auto_commit`` on, under the poll lock. Affects: once per
        ``auto_commit_interval_ms``, every owned queue's consume offset is committed in memory
        (persisted at once in BROADCASTING); a failure is logged."""
        now_s = time.monotonic()
        if now_s >= self.next_auto_commit_s:
            services = self._services
            try:
                self._commit_consumed(self._assigned.queues())
                if services.config.message_model is MessageModel.BROADCASTING:
                    services.require_store().persist_all(self._assigned.queues())
            except ClientError as error:
                _log.warning("auto commit failed: %s", error)
            self.next_auto_commit_s = now_s + services.config.auto_commit_interval_ms / 1000.0

    def committed(self, queue: MessageQueue) -> int:
        """Caller: ``committed``. Affects: the offset store learns what the broker holds.
        Raises a ClientError when the broker cannot say."""
        self._services.check_running()
        store = self._services.require_store()
        return store.read_offset(queue, ReadOffsetType.MEMORY_FIRST_THEN_STORE)

    def _commit_consumed(self, queues: Iterable[MessageQueue]) -> list[MessageQueue]:
        committed = []
        for queue in queues:
            if self._commit_owned(queue, None):
                committed.append(queue)
        return committed

    def _commit_owned(self, queue: MessageQueue, offset: int | None) -> bool:
        """Commit ``offset`` (None: the consume offset, if any) of an owned queue, under its
        lock: once a drop marked it dropped (under the same lock), nothing commits it again,
        so no stale offset can follow the one the drop persisted."""
        state = self._assigned.state(queue)
        if state is not None:
            with state.lock:
                if not state.process_queue.dropped:
                    value = state.consume_offset if offset is None else offset
                    if value < 0:
                        return False
                    self._services.require_store().update_offset(queue, value)
                    return True
        _log.warning("commit skipped, queue not owned: %s", queue)
        return False
