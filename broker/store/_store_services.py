"""The message store's services: the background duties (flush, checkpoint, retention,
consumer offsets), the group commit under SYNC flush, and the steps of start-up they need.

Under ASYNC flush a scheduler thread flushes the commit log every ``flush_interval_ms``; under
SYNC flush the group commit service flushes as puts ask and tells them when they are durable.
Either way the scheduler checkpoints (queues and index flushed, then the log, then how far all
is durable), applies retention and persists consumer offsets on their intervals. At start the
store marks itself running (an unclean checkpoint) and lowers committed offsets past the
recovered queues' ends.

Caller: ``MessageStore.start`` and ``shutdown`` (``_message_store``), admin tools (``flush``,
``run_retention``, ``delete_topic``); one of ``MessageStore``'s roles, see
``broker.store._store_parts``.
"""

from __future__ import annotations

import dataclasses
import errno
import logging

from aeromq.broker._errors import BrokerStateError, StoreIOError
from aeromq.broker.store._checkpoint import Checkpoint
from aeromq.broker.store._config import FlushMode
from aeromq.broker.store._group_commit import GroupCommitService
from aeromq.broker.store._recovery import RecoveryReport
from aeromq.broker.store._retention import RetentionReport, run_retention
from aeromq.broker.store._scheduler import Duty, Scheduler
from aeromq.broker.store._store_parts import StoreParts

__all__ = ["StoreServices"]

_log = logging.getLogger(__name__)

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class StoreServices(StoreParts):
    """The store's services and housekeeping, for ``MessageStore`` (see module)."""

    def _start_services(self) -> None:
        config = self.config
        duties = [
            Duty(
                "checkpoint",
                config.flush_consume_queue_interval_ms,
                lambda: self._checkpoint(clean_shutdown=False),
            ),
            Duty("retention", config.clean_interval_ms, self.run_retention),
            Duty("offsets", config.offset_persist_interval_ms, self.consumer_offsets.persist),
        ]
        if config.flush_mode is FlushMode.SYNC:
            self._group_commit = GroupCommitService(
                self.commit_log.flush, self.commit_log.flushed_offset, config.sync_flush_timeout_ms
            )
            self._group_commit.start()
        else:
            duties.insert(0, Duty("flush", config.flush_interval_ms, self.commit_log.flush))
        self._scheduler = Scheduler("store-services", duties)
        self._scheduler.start()

    def _stop_services(self) -> None:
        """Stop the scheduler and the group commit (each once)."""
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
        if self._group_commit is not None:
            self._group_commit.stop()
            self._group_commit = None

    def flush(self) -> None:
        """Make everything appended durable now, and checkpoint."""
        self._require_running()
        self._checkpoint(clean_shutdown=False)

    def run_retention(self, now_ms: int | None = None) -> RetentionReport:
        """Apply retention now (the service also runs it every ``clean_interval_ms``)."""
        config = self.config
        return run_retention(
            self.commit_log,
            self.queues,
            self.index,
            now_ms=self._clock_ms() if now_ms is None else now_ms,
            reserve_ms=config.file_reserved_time_ms,
            max_store_bytes=config.max_store_bytes,
        )

    def delete_topic(self, topic: str) -> int:
        """Drop the consume queues of ``topic`` (its records go with retention); returns
        how many queues went."""
        with self._put_lock:
            return self.queues.remove_topic(topic)

    def _checkpoint(self, clean_shutdown: bool) -> None:
        """Flush the queues and the index, then the log, then record how far all is durable."""
        with self._checkpoint_lock:
            dispatched = self._dispatched_offset
            stamp = self.commit_log.last_store_timestamp_ms
            for queue in self.queues:
                queue.flush()
            if self.index is not None:
                self.index.flush()
            self.commit_log.flush()
            Checkpoint(dispatched, stamp, clean_shutdown).save(
                self.config.checkpoint_path, mode=self.config.file_mode
            )

    def _clamp_offsets(self, report: RecoveryReport) -> RecoveryReport:
        """Lower committed offsets past the recovered queue ends (see
        ``ConsumerOffsetManager.clamp``), one warning per correction."""

        def max_offset_of(topic: str, queue_id: int) -> int:
            queue = self.queues.get(topic, queue_id)
            return 0 if queue is None else queue.max_offset

        corrections = self.consumer_offsets.clamp(max_offset_of)
        for c in corrections:
            _log.warning(
                "recovery: committed offset past the queue's end, corrected (OFFSET_OVERFLOW): "
                "group=%s topic=%s queue_id=%d committed=%d max_offset=%d",
                c.group,
                c.topic,
                c.queue_id,
                c.committed,
                c.max_offset,
            )
        if not corrections:
            return report
        return dataclasses.replace(report, offsets_clamped=len(corrections))

    def _mark_running(self) -> None:
        """Record at start that the store is open (an unclean checkpoint). On a full disk the
        checkpoint cannot be rewritten: it is removed instead (an unlink needs no block), so a
        crash is still recovered in full, and the store starts."""
        try:
            self._checkpoint(clean_shutdown=False)
        except StoreIOError as exc:
            if not isinstance(exc.__cause__, OSError) or exc.__cause__.errno not in _NO_SPACE:
                raise
            self.config.checkpoint_path.unlink(missing_ok=True)
            _log.warning("disk full at start, checkpoint removed instead of rewritten: %s", exc)

    def _require_running(self) -> None:
        if not self._running:
            raise BrokerStateError("store is not running", data_dir=str(self.config.data_dir))
