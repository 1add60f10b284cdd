"""The message store's services: the background duties (flush, checkpoint, retention,
consumer offsets), the group commit under SYNC flush, and the steps of start-up they need.

Under ASYNC flush a scheduler thread flushes the commit log every ``flush_interval_ms``; under
SYNC flush the group commit service flushes as puts ask and tells them when they are durable.
Either way the scheduler checkpoints (queues flushed and the index's queued entries written,
then the log, then how far all is durable, with the idempotent producers' snapshot when it
changed, and the index's mark: the index itself is flushed every ``flush_index_interval_ms``,
at an admin flush and at shutdown, see ``_checkpoint``), applies retention,
persists consumer offsets and forgets idle producers on their intervals. At start the store
rebuilds what it derives from the log's tail (per-queue counters in a group, producer state;
``_log_state``), marks itself running (an unclean checkpoint) and lowers committed offsets past
the recovered queues' ends.

In a broker group (``StoreConfig.replicated``) the puts wait for the committed offset instead
(``_commit_watermark``, whose timer runs here), the log is flushed on its interval and whenever
the replication layer asks (``flush()``, its fsync for the high watermark), the log's next MiB
is written with zeros and made durable ahead of its end (``CommitLog.zero_ahead``: a commit
round's fsync then writes its data alone), and the checkpoint also records the committed
offset, how far recovery may dispatch.

Caller: ``MessageStore.start`` and ``shutdown`` (``_message_store``), admin tools (``flush``,
``run_retention``, ``delete_topic``); one of ``MessageStore``'s roles, see
``broker.store._store_parts``.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import time

from aeromq.broker._errors import BrokerStateError, StoreIOError
from aeromq.broker.store._checkpoint import Checkpoint, IndexMark
from aeromq.broker.store._config import FlushMode
from aeromq.broker.store._group_commit import GroupCommitService
from aeromq.broker.store._log_state import rebuild_log_state, restore_producers
from aeromq.broker.store._metadata_log import replay_meta
from aeromq.broker.store._producer_state import ProducerStateTable
from aeromq.broker.store._recovery import RecoveryReport
from aeromq.broker.store._retention import RetentionReport, run_retention
from aeromq.broker.store._scheduler import Duty, Scheduler
from aeromq.broker.store._store_parts import StoreParts

__all__ = ["StoreServices"]

_log = logging.getLogger(__name__)

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_ZERO_AHEAD_INTERVAL_MS = 50
"""How often the services thread looks (``CommitLog.zero_ahead``): half a MiB ahead lasts 50 ms
up to 10 MB/s of appends, twice the group's rate here; a faster writer overtakes the zeros
and fsyncs as before."""


_INDEX_DRAIN_INTERVAL_MS = 20
"""The shortest interval of the services thread's writes of the index entries queued since
(``IndexService.drain``), rather than all of a checkpoint interval's at its checkpoint: a second's
worth at 5,000 keyed messages a second, written key by key in Python with the interpreter held,
stalled the session agent 20-60 ms once a second (the longest latencies of ``python -m bench
latency`` at that rate; 20 ms drains halved them, ``docs/latency.md``)."""
_INDEX_DRAIN_MAX_MS = 160
"""The longest interval: while a drain finds fewer than :data:`_INDEX_DRAIN_FEW` entries queued
(none at all when idle), the interval doubles up to this; an idle broker, or one at 100 or 1,000
msgs/s, wakes its services thread about six times a second for it, not fifty (``python -m bench
threads``, at 100 msgs/s: the services thread 36-37 us of CPU and 0.42-0.44 wake-ups a message,
against 92-97 us and 1.37-1.39 with drains every 20 ms; at 1,000 msgs/s 11-14 us against
16-17)."""
_INDEX_DRAIN_FEW = 64
"""A drain that finds fewer entries than this lengthens the interval (see above)."""
_INDEX_DRAIN_MANY = 256
"""A drain that finds more entries than this halves the interval, down to
:data:`_INDEX_DRAIN_INTERVAL_MS`: each drain then writes from a few dozen to a few hundred
entries, in one native call a chunk (``IndexFile.put_entries``), the interpreter held only to
hash their keys; 1,000 msgs/s settles at the longest interval (160 entries a drain), 5,000 at
20-40 ms."""


class StoreServices(StoreParts):
    """The store's services and housekeeping, for ``MessageStore`` (see module)."""

    _index_duty: Duty
    """The index drain's duty (``_drain_index`` sets its interval), with an index."""
    _checkpointed: tuple[int, int, int | None, int] | None = None
    """What the last checkpoint recorded (dispatched offset, last store timestamp, committed
    offset, log end): a periodic checkpoint with nothing new since is skipped (an idle broker
    rewrote and renamed the same file every second, most of its idle CPU)."""
    _index_mark: IndexMark | None = None
    """What the index's last flush made durable (None before its first)."""
    _index_flush_due: float = 0.0
    """When (``time.monotonic()``) a checkpoint next flushes the index."""

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
            Duty("producers", config.clean_interval_ms, self._expire_producers),
        ]
        if self.index is not None:
            self._index_duty = Duty("index-drain", _INDEX_DRAIN_INTERVAL_MS, self._drain_index)
            duties.append(self._index_duty)
        if self._replicated:
            self._commits.start()
            duties.insert(0, Duty("flush", config.flush_interval_ms, self.commit_log.flush))
            duties.insert(0, Duty("zero-ahead", _ZERO_AHEAD_INTERVAL_MS, self._zero_ahead))
        elif config.flush_mode is FlushMode.SYNC:
            self._group_commit = GroupCommitService(
                self.commit_log.flush, self.commit_log.flushed_offset, config.sync_flush_timeout_ms
            )
            self._group_commit.start()
        else:
            duties.insert(0, Duty("flush", config.flush_interval_ms, self.commit_log.flush))
        self._scheduler = Scheduler("store-services", duties)
        self._scheduler.start()

    def _stop_services(self) -> None:
        """Stop the scheduler, the group commit and the commit timer (each once; puts still
        waiting for a group's commit are answered ``REPLICATION_TIMEOUT``)."""
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
        if self._group_commit is not None:
            self._group_commit.stop()
            self._group_commit = None
        if self._replicated:
            self._commits.stop()

    def _drain_index(self) -> None:
        """Write the index entries queued since the last drain; the next drain sooner when it
        found many, later when it found few or none (see :data:`_INDEX_DRAIN_MAX_MS`)."""
        index = self.index
        duty = self._index_duty
        found = len(index.pending) if index is not None else 0
        if index is not None and found:
            index.drain()
        interval_ms = duty.interval_ms
        if found < _INDEX_DRAIN_FEW:
            interval_ms = min(2 * interval_ms, _INDEX_DRAIN_MAX_MS)
        elif found > _INDEX_DRAIN_MANY:
            interval_ms = max(interval_ms // 2, _INDEX_DRAIN_INTERVAL_MS)
        if interval_ms != duty.interval_ms:
            duty.interval_ms = interval_ms
            duty.next_due = time.monotonic() + interval_ms / 1000.0

    def _zero_ahead(self) -> None:
        """The log's next bytes written with zeros and made durable ahead of its end
        (``CommitLog.zero_ahead``), so a group's commit round fsyncs its data alone."""
        with self._put_lock:
            mapped = self.commit_log.zero_ahead()
        if mapped is not None:
            mapped.flush()

    def flush(self) -> int:
        """Make everything appended durable now; returns how far the commit log is durable
        (``flushed_physical_offset``). On a single broker it also checkpoints. In a group it
        flushes the log only, and concurrent calls share one fsync: the replication layer's
        group commit, whose result the leader counts in the high watermark and a follower
        acks (the checkpoint keeps its interval)."""
        self._require_running()
        if self._replicated:
            return self.commit_log.flush()
        self._checkpoint(clean_shutdown=False, flush_index=True)
        return self.commit_log.flushed_offset

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
        how many queues went. In a broker group nothing goes (0): the queues of every member
        must stay those of the log, so a topic removed (``remove_topic``) keeps its queues and
        their offsets until retention."""
        if self._replicated:
            return 0
        with self._put_lock:
            return self.queues.remove_topic(topic)

    def _expire_producers(self) -> None:
        """Forget the idempotent producers idle for ``producer_expiry_ms`` (by store time)."""
        if not len(self.producer_states):
            return
        with self._put_lock:
            cutoff = self._clock_ms() - self.config.producer_expiry_ms
            self.producer_states.expire(cutoff)

    def _checkpoint(self, clean_shutdown: bool, *, flush_index: bool = False) -> None:
        """Flush the queues and write the index's queued entries, then flush the log, then
        record how far all is durable (with the producers' snapshot, written first when it
        changed, and the index's mark). The index is flushed when ``flush_index``, at a clean
        shutdown, at the first checkpoint and then every ``flush_index_interval_ms``: each of
        its puts dirties a page of its 20 MB slot table at random, and at 5,000 keyed messages
        a second its flush wrote back some 3,000 pages (12 MB) a second, 6-23 ms of the
        kernel's CPU in ``fdatasync`` on the services thread, and the broker's answers waited
        behind it: the longest latencies at that rate came once a second, with each
        checkpoint (``docs/latency.md``, "Stalls once a second"). Recovery after a crash takes
        the index back to its mark (``IndexService.rewind``)."""
        with self._checkpoint_lock:
            dispatched = self._dispatched_offset
            committed = self._commits.committed_offset if self._replicated else None
            stamp = self.commit_log.last_store_timestamp_ms
            state = (dispatched, stamp, committed, self.commit_log.max_offset)
            index, mark, now = self.index, self._index_mark, time.monotonic()
            index_due = index is not None and (
                mark is None
                or clean_shutdown
                or (
                    mark.dispatched_offset != dispatched
                    and (flush_index or now >= self._index_flush_due)
                )
            )
            if (
                not clean_shutdown
                and state == self._checkpointed
                and not self.producer_states.dirty
                and not index_due
            ):
                return  # nothing appended, dispatched or committed since: the file says it all
            for queue in self.queues:
                queue.flush()
            if index is not None:
                if index_due:
                    self._index_mark = index.flush(dispatched)
                    self._index_flush_due = now + self.config.flush_index_interval_ms / 1000.0
                else:
                    index.drain()  # in the page cache: a killed process loses none of it
            self.commit_log.flush()
            producers_at = self._save_producers()
            Checkpoint(
                dispatched, stamp, clean_shutdown, committed, producers_at, self._index_mark
            ).save(self.config.checkpoint_path, mode=self.config.file_mode)
            self._checkpointed = None if clean_shutdown else state

    def _save_producers(self) -> int:
        """Save the producers' snapshot when it changed since the last one; returns the log
        offset it holds at (unchanged: the log's end now, a change comes under the put lock)."""
        with self._put_lock:
            offset = self.commit_log.max_offset
            if not self.producer_states.dirty:
                return offset
            table = self.producer_states.copy()
            self.producer_states.dirty = False
        try:
            table.save(self.config.producer_state_path, offset, mode=self.config.file_mode)
        except BaseException:
            self.producer_states.dirty = True
            raise
        return offset

    def _restore_log_state(self, valid_at: int | None, unused_before: int | None) -> None:
        """After recovery (or a truncation): rebuild from the log what is derived from it
        beyond the consume queues (``_log_state``): the producer state, from its snapshot (or
        nothing) at ``valid_at`` or the snapshot's own offset, or from no producer state
        before ``unused_before``, else from what the expiry keeps; in a group also the
        per-queue counters (the consume queues' ends, then the batches after the dispatched
        offset), the offset the dispatch indexes from, and the metadata tables (the committed
        records they do not hold yet)."""
        commit_log = self.commit_log
        end = commit_log.max_offset
        snapshot = ProducerStateTable.load(self.config.producer_state_path)
        cutoff_ms = self._clock_ms() - self.config.producer_expiry_ms
        table, producers_from = restore_producers(
            commit_log, snapshot, valid_at, unused_before, end, cutoff_ms
        )
        if self._replicated:
            self._counters.reset(self.queues)
        rebuild_log_state(
            commit_log,
            end,
            counters=self._counters if self._replicated else None,
            counters_from=self._dispatched_offset,
            producers=table,
            producers_from=producers_from,
        )
        table.expire(cutoff_ms)
        table.dirty = bool(len(table)) or snapshot is not None
        self.producer_states = table
        if self._replicated:
            committed = self._dispatched_offset
            index_end = self.index.end_physical_offset if self.index is not None else -1
            self._index_from = min(index_end, committed - 1)
            replay_meta(
                commit_log, self.queues, self.topic_config, self.consumer_offsets, committed
            )

    def _clamp_offsets(self, report: RecoveryReport) -> RecoveryReport:
        """Lower committed offsets past the recovered queue ends (see
        ``ConsumerOffsetManager.clamp``), one warning per correction."""

        def max_offset_of(topic: str, queue_id: int) -> int:
            if self._replicated:  # a group's: what the whole log gave, dispatched or not
                return self._counters.next_offset(topic, queue_id)
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
        self._index_mark = None  # the index as recovered: flushed by this first checkpoint
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
