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

``MessageStore`` holds its lifecycle; its methods come by role from the classes it stacks (see
``broker.store._store_parts``): the put path (``_put_path``), the get path (``_get_path``) and
the services (``_store_services``), on the parts ``_store_parts`` builds.
"""

from __future__ import annotations

import logging
from typing import Self

from aeromq.broker._errors import BrokerStateError
from aeromq.broker.store._checkpoint import Checkpoint
from aeromq.broker.store._file_modes import make_dirs
from aeromq.broker.store._get_path import GetPath
from aeromq.broker.store._put_path import PutPath
from aeromq.broker.store._recovery import RecoveryReport, recover
from aeromq.broker.store._store_services import StoreServices

__all__ = ["MessageStore"]

_log = logging.getLogger(__name__)


class MessageStore(PutPath, GetPath, StoreServices):
    """The broker's durable store for ``config``; ``clock_ms`` gives store timestamps.

    ``topic_config`` and ``consumer_offsets`` are the persisted admin tables; they are
    loaded at ``start`` and saved atomically (topics on every change, offsets every
    ``offset_persist_interval_ms`` and at shutdown).
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
            checkpoint = Checkpoint.load(self.config.checkpoint_path)
            report = recover(self.commit_log, self.queues, self.index, checkpoint)
            report = self._clamp_offsets(report)
            self._dispatched_offset = self.commit_log.max_offset
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
