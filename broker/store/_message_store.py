"""The message store facade that the broker service calls (RocketMQ's ``DefaultMessageStore``).

A put appends one record batch (``common/record_batch/``, as the producer encoded it) to
the commit log and dispatches it to the consume queue (one numpy write for all its records)
and the index at once, under one put lock; under SYNC flush a put returns once its bytes are
durable (group commit). A batch is visible to gets (and wakes long polls) as soon as it is
appended, before it is durable, as in RocketMQ. Gets read the consume queue, filter by tag
hash, and return the stored batches as they are (``get_batches``) or decoded and CRC-checked
(``get_messages``). Background duties flush, checkpoint, apply retention and persist
consumer offsets.

Lifecycle: ``start()`` (lock the data directory, load, recover, start the services) and
``shutdown()``; or ``with MessageStore(config) as store:``.

A member of a broker group (``StoreConfig.replicated``) stores the same way, but what puts wait
for and what gets see is the group's committed offset, which the replication layer sets:

- leader: ``start_leading``/``stop_leading``, puts answered once committed, ``read_log`` for
  the followers, ``flush()`` and ``flushed_physical_offset`` for its own fsync;
- follower: ``append_replicated``, ``flush()`` for the offset it acks, ``truncate_to``;
- both: ``set_high_watermark``, ``fail_uncommitted``, ``committed_offset``;
- metadata (topic configs, committed consumer offsets) through the log:
  ``update_topic_config``, ``remove_topic``, ``commit_offset``, ``remove_offsets`` (the same
  calls apply at once on a single broker).

Idempotent producers' retries are answered with the stored result on both (a batch's producer
state, ``_producer_state``).

``MessageStore`` holds its lifecycle; its methods come by role from the classes it stacks (see
``broker.store._store_parts``): the put path (``_put_path``, the group leader's
``_leader_path``), the metadata calls (``_metadata_log``), the get path (``_get_path``), the
commit path (``_commit_path``), a follower's appends (``_replica_appends``) and truncation
(``_truncation``), and the services (``_store_services``), on the parts ``_store_parts``
builds.
"""

from __future__ import annotations

import logging
from typing import Self

from aeromq.broker._errors import BrokerStateError
from aeromq.broker.store._checkpoint import Checkpoint
from aeromq.broker.store._commit_path import CommitPath
from aeromq.broker.store._file_modes import make_dirs
from aeromq.broker.store._get_path import GetPath
from aeromq.broker.store._metadata_log import MetaPath
from aeromq.broker.store._put_path import PutPath
from aeromq.broker.store._recovery import RecoveryReport, recover
from aeromq.broker.store._replica_appends import ReplicaPath
from aeromq.broker.store._truncation import TruncationPath

__all__ = ["MessageStore"]

_log = logging.getLogger(__name__)


class MessageStore(PutPath, MetaPath, GetPath, CommitPath, ReplicaPath, TruncationPath):
    """The broker's durable store for ``config``; ``clock_ms`` gives store timestamps.

    ``topic_config`` and ``consumer_offsets`` are the persisted admin tables; they are
    loaded at ``start`` and saved atomically (topics on every change, offsets every
    ``offset_persist_interval_ms`` and at shutdown); in a broker group they follow the log's
    metadata records (see the module). ``producer_states`` holds the idempotent producers'
    last batches.
    """

    def start(self) -> RecoveryReport:
        """Lock the data directory, load everything, recover, and start the services."""
        if self._running:
            raise BrokerStateError("store already started", data_dir=str(self.config.data_dir))
        make_dirs(self.config.data_dir, self.config.file_mode)
        self._lock.acquire()
        try:
            self.topic_config.load()
            self.consumer_offsets.load()
            self.commit_log.load()
            self.queues.load()
            if self.index is not None:
                self.index.load()
                self.index.on_error = self._index_failed  # its entries are written later
            truncation = self._redo_truncation() if self._replicated else None
            checkpoint = Checkpoint.load(self.config.checkpoint_path)
            committed = self._committed_at_start(checkpoint)
            report = recover(
                self.commit_log, self.queues, self.index, checkpoint, dispatch_until=committed
            )
            end = self.commit_log.max_offset
            if self._replicated:  # a member acks what it says is durable: make it so
                self.commit_log.sync_recovered()
            self._dispatched_offset = end if committed is None else min(committed, end)
            self._commits.committed_offset = self._dispatched_offset
            self._restore_log_state(
                checkpoint.producer_state_offset if checkpoint is not None else None,
                _unused_before(checkpoint),
            )
            report = self._clamp_offsets(report)
            if truncation is not None:
                self._finish_truncation(truncation)
            self._mark_running()
        except BaseException:
            self._close_files()
            self._lock.release()
            raise
        self.recovery_report = report
        if report.truncated_at is not None:
            _log.warning("store recovered with a truncated tail: %s", report)
        self._start_services()
        self._running = self._writable = True
        return report

    def shutdown(self) -> None:
        """Stop the services, make everything durable, write a clean checkpoint, close."""
        if not self._running:
            return
        with self._put_lock:
            self._running = self._writable = False
        self._stop_services()
        try:
            self._checkpoint(clean_shutdown=True)
            self.consumer_offsets.persist()
        finally:
            self._close_files()
            self._lock.release()

    def _committed_at_start(self, checkpoint: Checkpoint | None) -> int | None:
        """How far recovery dispatches: everything on a single broker (None); in a group the
        committed offset last persisted (all of a log a single broker wrote, none without a
        checkpoint)."""
        if not self._replicated:
            return None
        if checkpoint is None:
            return 0
        if checkpoint.committed_offset is None:  # a single broker's checkpoint
            return None
        return checkpoint.committed_offset

    def _close_files(self) -> None:
        self.commit_log.close()
        self.queues.close()
        if self.index is not None:
            self.index.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    @property
    def running(self) -> bool:
        """Whether the store is started and not shut down."""
        return self._running


def _unused_before(checkpoint: Checkpoint | None) -> int | None:
    """An offset before which no batch carries producer state: a checkpoint of a version
    before producer state has none (its dispatched offset), a later one says where its
    snapshot holds instead."""
    if checkpoint is None or checkpoint.producer_state_offset is not None:
        return None
    return checkpoint.dispatched_offset
