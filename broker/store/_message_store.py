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
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import struct
import threading
import time
from collections.abc import Callable, Collection, Sequence
from typing import Self

import numpy as np

from aeromq.broker._errors import IllegalStateError, NoSpaceError, StoreIOError
from aeromq.broker.store._arrival import ArrivalListener, ArrivalNotifier
from aeromq.broker.store._batch_codec import batch_keys, encode_messages
from aeromq.broker.store._checkpoint import Checkpoint
from aeromq.broker.store._commit_log import CommitLog
from aeromq.broker.store._config import FlushMode, StoreConfig
from aeromq.broker.store._consumer_offsets import ConsumerOffsetManager
from aeromq.broker.store._dir_lock import DirectoryLock
from aeromq.broker.store._disk_space import DiskSpaceGuard
from aeromq.broker.store._file_modes import make_dirs
from aeromq.broker.store._group_commit import GroupCommitService
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._message import (
    InboundMessage,
    StoredMessage,
    decode_message_id,
    pack_host,
)
from aeromq.broker.store._queue_table import ConsumeQueueTable
from aeromq.broker.store._reader import DEFAULT_MAX_BYTES, DEFAULT_MAX_COUNT, MessageReader
from aeromq.broker.store._recovery import RecoveryReport, recover
from aeromq.broker.store._results import (
    BoundaryType,
    GetMessageResult,
    PutMessageResult,
    PutMessageStatus,
)
from aeromq.broker.store._retention import RetentionReport, run_retention
from aeromq.broker.store._scheduler import Duty, Scheduler
from aeromq.broker.store._topic_config import TopicConfigManager
from aeromq.common import is_valid_topic_name
from aeromq.common.record_batch import (
    BATCH_MAGIC,
    FIXED_HEADER_LENGTH,
    RECORD_COUNT_OFFSET,
    RECORD_OVERHEAD,
    TOPIC_OFFSET,
)

__all__ = ["MessageStore"]

_log = logging.getLogger(__name__)

_MAX_QUEUE_ID = (1 << 31) - 1
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_TOPIC_CACHE_LIMIT = 10_000

PutCallback = Callable[[PutMessageResult], None]

_HEAD = struct.Struct("<iI40xi22xH")  # total length, magic, record count (48), topic length (74)
assert _HEAD.size == FIXED_HEADER_LENGTH and RECORD_COUNT_OFFSET == 48


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class MessageStore:
    """The broker's durable store for ``config``; ``clock_ms`` gives store timestamps.

    ``topic_config`` and ``consumer_offsets`` are the persisted admin tables; they are
    loaded at ``start`` and saved atomically (topics on every change, offsets every
    ``offset_persist_interval_ms`` and at shutdown).
    """

    def __init__(self, config: StoreConfig, *, clock_ms: Callable[[], int] | None = None) -> None:
        self.config = config
        self._clock_ms = clock_ms or _wall_clock_ms
        self._store_host = pack_host(config.store_host)
        mode = config.file_mode
        self._lock = DirectoryLock(config.lock_path, file_mode=mode)
        self.commit_log = CommitLog(
            config.commit_log_dir, config.commit_log_segment_bytes, self._store_host, file_mode=mode
        )
        self.queues = ConsumeQueueTable(
            config.consume_queue_dir, config.consume_queue_entries_per_segment, file_mode=mode
        )
        self.index: IndexService | None = (
            IndexService(config.index_dir, config.index_slots, config.index_entries, file_mode=mode)
            if config.index_enabled
            else None
        )
        self.topic_config = TopicConfigManager(config.config_dir / "topics.json", file_mode=mode)
        self.consumer_offsets = ConsumerOffsetManager(
            config.config_dir / "consumer_offsets.json", file_mode=mode
        )
        self.arrivals = ArrivalNotifier()
        self.disk_space = DiskSpaceGuard(
            config.data_dir,
            min_free_bytes=config.min_free_disk_bytes,
            max_used_percent=config.max_disk_used_percent,
            check_interval_ms=config.disk_check_interval_ms,
        )
        self.recovery_report: RecoveryReport | None = None
        self.index_errors = 0
        self._reader = MessageReader(self.commit_log, self.queues, config.max_filter_scan_entries)
        self._put_lock = threading.Lock()
        self._running = False
        self._writable = False
        self._dispatched_offset = 0
        self._max_batch_bytes = config.max_record_bytes  # a batch is capped like one message
        self._checkpoint_lock = threading.Lock()
        self._topics: dict[str, bytes] = {}
        self._group_commit: GroupCommitService | None = None
        self._scheduler: Scheduler | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> RecoveryReport:
        """Lock the data directory, load everything, recover, and start the services."""
        if self._running:
            raise IllegalStateError("store already started", data_dir=str(self.config.data_dir))
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

    def shutdown(self) -> None:
        """Stop the services, make everything durable, write a clean checkpoint, close."""
        if not self._running:
            return
        with self._put_lock:
            self._running = self._writable = False
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
        if self._group_commit is not None:
            self._group_commit.stop()
            self._group_commit = None
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
        return self._running

    # -- put path --------------------------------------------------------------------------

    def put_batch(
        self, batch: bytes | bytearray | memoryview, topic: str, queue_id: int
    ) -> PutMessageResult:
        """Append one record batch (``common/record_batch/``) of (topic, queue id), which
        the caller has checked (``check_batch``); under SYNC flush, return once it is durable
        (else ``FLUSH_DISK_TIMEOUT``).

        The store re-checks only what protects itself (magic, length, topic, record count,
        the size caps: a batch is capped like one message, ``config.max_record_bytes``):
        ``MESSAGE_ILLEGAL`` otherwise. Caller: the broker's produce path, from any thread."""
        result, end = self._append(batch, topic, queue_id)
        group_commit = self._group_commit
        if (
            result.status is PutMessageStatus.PUT_OK
            and group_commit is not None
            and not group_commit.wait_durable(end)
        ):
            result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
        return result

    def put_batch_async(
        self,
        batch: bytes | bytearray | memoryview,
        topic: str,
        queue_id: int,
        callback: PutCallback,
    ) -> PutMessageResult:
        """Append a batch without waiting for the disk. ``callback(result)`` runs once the
        outcome is final: at once under ASYNC flush or on failure, else on the flusher
        thread when durable (``FLUSH_DISK_TIMEOUT`` if not in time). Returns the result as
        appended (status not yet final under SYNC)."""
        result, end = self._append(batch, topic, queue_id)
        group_commit = self._group_commit
        if result.status is not PutMessageStatus.PUT_OK or group_commit is None:
            callback(result)
            return result

        def durable(ok: bool) -> None:
            if not ok:
                result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
            callback(result)

        group_commit.request(end, durable)
        return result

    def put_message(self, message: InboundMessage) -> PutMessageResult:
        """Append one message; under SYNC flush, return once it is durable."""
        return self.put_messages((message,))

    def put_messages(self, messages: Sequence[InboundMessage]) -> PutMessageResult:
        """Encode ``messages`` (all of one topic and queue) into one batch and ``put_batch``
        it: consecutive queue offsets. A batch that breaks any rule is refused whole
        (``MESSAGE_ILLEGAL`` or ``PROPERTIES_SIZE_EXCEEDED``). For tests and tools: the
        produce path sends batches as the producer encoded them."""
        status, batch, topic, queue_id = self._encode(messages)
        if batch is None:
            return PutMessageResult(status)
        return self.put_batch(batch, topic, queue_id)

    def put_messages_async(
        self, messages: Sequence[InboundMessage], callback: PutCallback
    ) -> PutMessageResult:
        """``put_messages`` without waiting for the disk (see ``put_batch_async``)."""
        status, batch, topic, queue_id = self._encode(messages)
        if batch is None:
            result = PutMessageResult(status)
            callback(result)
            return result
        return self.put_batch_async(batch, topic, queue_id, callback)

    def _encode(
        self, messages: Sequence[InboundMessage]
    ) -> tuple[PutMessageStatus, bytearray | None, str, int]:
        if not self._writable:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE, None, "", 0
        if not messages:
            return PutMessageStatus.MESSAGE_ILLEGAL, None, "", 0
        topic = messages[0].topic
        queue_id = messages[0].queue_id
        topic_bytes = self._topic_bytes(topic)
        if topic_bytes is None or not self._valid_queue_id(queue_id):
            return PutMessageStatus.MESSAGE_ILLEGAL, None, "", 0
        status, batch = encode_messages(messages, topic, topic_bytes, queue_id)
        return status, batch, topic, queue_id

    def _topic_bytes(self, topic: str) -> bytes | None:
        """The topic's UTF-8 bytes, or None when the name is not valid."""
        topic_bytes = self._topics.get(topic)
        if topic_bytes is None:
            if not isinstance(topic, str) or not is_valid_topic_name(topic):
                return None
            if len(self._topics) >= _TOPIC_CACHE_LIMIT:
                self._topics.clear()
            topic_bytes = self._topics[topic] = topic.encode()
        return topic_bytes

    @staticmethod
    def _valid_queue_id(queue_id: object) -> bool:
        return (
            isinstance(queue_id, int)
            and not isinstance(queue_id, bool)
            and 0 <= queue_id <= _MAX_QUEUE_ID
        )

    def _append(
        self, data: bytes | bytearray | memoryview, topic: str, queue_id: int
    ) -> tuple[PutMessageResult, int]:
        """Check cheaply, append, patch and dispatch; returns the result and the log's end."""
        if not self._writable:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0
        topic_bytes = self._topics.get(topic) or self._topic_bytes(topic)
        if topic_bytes is None or not (
            0 <= queue_id <= _MAX_QUEUE_ID
            if type(queue_id) is int
            else self._valid_queue_id(queue_id)
        ):
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
        batch = memoryview(data)
        if batch.format != "B" or batch.ndim != 1:
            batch = batch.cast("B")
        length = len(batch)
        if length < FIXED_HEADER_LENGTH or length > self._max_batch_bytes:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
        total, magic, count, topic_length = _HEAD.unpack_from(batch, 0)
        header_length = (FIXED_HEADER_LENGTH + topic_length + 7) & ~7  # batch_header_length
        if (
            magic != BATCH_MAGIC
            or total != length
            or count <= 0
            or header_length + count * RECORD_OVERHEAD > length
            or topic_length != len(topic_bytes)
            or batch[TOPIC_OFFSET : TOPIC_OFFSET + topic_length] != topic_bytes
        ):
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
        tag_hashes = np.frombuffer(batch, dtype="<i8", count=count, offset=header_length)
        commit_log = self.commit_log
        index = self.index
        with self._put_lock:
            if not self._writable:
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0
            if not self.disk_space.has_room(length):
                return PutMessageResult(PutMessageStatus.DISK_FULL), 0
            now_ms = self._clock_ms()
            if now_ms < commit_log.last_store_timestamp_ms:
                now_ms = commit_log.last_store_timestamp_ms
            try:
                queue = self.queues.get_or_create(topic, queue_id)
                queue_offset = queue.max_offset
                queue.ensure_room(queue_offset, count)
                position = commit_log.append_batch(batch, queue_offset, now_ms, queue_id)
            except NoSpaceError as exc:
                self.disk_space.refused(exc.values["needed_bytes"], exc.values["free_bytes"])
                return PutMessageResult(PutMessageStatus.DISK_FULL), 0
            except StoreIOError as exc:
                _log.error("cannot append: %s", exc)
                return PutMessageResult(PutMessageStatus.CREATE_MAPPED_FILE_FAILED), 0
            commit_log.last_store_timestamp_ms = now_ms
            try:
                queue.put_batch(queue_offset, position, length, tag_hashes)
            except StoreIOError as exc:
                # the log holds records its queue does not: stop writing; recovery fixes it
                self._writable = False
                _log.error("cannot dispatch, store no longer writable: %s", exc)
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0
            if index is not None:
                try:
                    for i, keys in batch_keys(batch, count, header_length):
                        index.put(topic, keys, position + i, now_ms)
                except NoSpaceError as exc:  # stored, not indexed; no more sends until room
                    self.index_errors += 1
                    self.disk_space.refused(exc.values["needed_bytes"], exc.values["free_bytes"])
                except StoreIOError as exc:  # the index is a convenience: keep storing
                    self.index_errors += 1
                    _log.error("cannot index: %s", exc)
            end = commit_log.max_offset
            self._dispatched_offset = end
        if self.arrivals.active:
            self.arrivals.notify(topic, queue_id, queue_offset + count)
        result = PutMessageResult(
            PutMessageStatus.PUT_OK,
            position,
            queue_offset,
            count,
            length,
            now_ms,
            self._store_host,
        )
        return result, end

    # -- get path --------------------------------------------------------------------------

    def get_batches(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = DEFAULT_MAX_COUNT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        tag_hashes: Collection[int] | None = None,
        into: list[memoryview] | None = None,
    ) -> GetMessageResult:
        """The stored batches holding up to ``max_count`` wanted records from ``offset`` of
        (topic, queue id), in ``data`` (or, with ``into``, as views of the commit log appended
        to it, see ``MessageReader.get_batches``): each whole, once, in order (about ``max_bytes`` of
        batches; at least one). A record is wanted when its tag hash is in ``tag_hashes``
        (all when None) and its queue offset in ``[offset, next_begin_offset)``; the others
        in those batches are the reader's to skip. Statuses and next offsets are RocketMQ's
        ``getMessage``'s; a batch whose header disagrees with its consume-queue entry is
        skipped and listed in ``corrupt``. CRCs are not checked here (the consumer does).
        Never raises. Caller: the broker's pull path, from any thread."""
        return self._reader.get_batches(
            topic, queue_id, offset, max_count, max_bytes, tag_hashes, into
        )

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = DEFAULT_MAX_COUNT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        tag_hashes: Collection[int] | None = None,
    ) -> GetMessageResult:
        """``get_batches`` with the wanted records decoded into ``messages`` (each batch
        CRC-checked; one that fails goes to ``corrupt``). For tests and admin tools."""
        return self._reader.get_messages(topic, queue_id, offset, max_count, max_bytes, tag_hashes)

    @property
    def corrupt_records_seen(self) -> int:
        """How many records gets have skipped because they failed their check."""
        return self._reader.corrupt_records_seen

    def get_min_offset(self, topic: str, queue_id: int) -> int:
        queue = self.queues.get(topic, queue_id)
        return queue.min_offset if queue is not None else 0

    def get_max_offset(self, topic: str, queue_id: int) -> int:
        """The queue offset the next message will get (0 for an unknown queue)."""
        queue = self.queues.get(topic, queue_id)
        return queue.max_offset if queue is not None else 0

    def get_offset_by_time(
        self,
        topic: str,
        queue_id: int,
        timestamp_ms: int,
        boundary: BoundaryType = BoundaryType.LOWER,
    ) -> int:
        """The queue offset by store time (see ``BoundaryType``); 0 for an unknown queue."""
        queue = self.queues.get(topic, queue_id)
        if queue is None:
            return 0
        upper = boundary is BoundaryType.UPPER
        return queue.offset_by_time(timestamp_ms, upper, self.commit_log.store_timestamp)

    def get_store_timestamp(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """The store time of the message at ``queue_offset``, or -1 when not held."""
        queue = self.queues.get(topic, queue_id)
        entry = queue.entry(queue_offset) if queue is not None else None
        if entry is None:
            return -1
        stamp = self.commit_log.store_timestamp(entry[0])
        return stamp if stamp is not None else -1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        return self.get_store_timestamp(topic, queue_id, self.get_min_offset(topic, queue_id))

    def look_message_by_offset(self, physical_offset: int) -> StoredMessage:
        """The message whose commit log offset is ``physical_offset`` (record ``i`` of the
        batch at ``b`` has offset ``b + i``); ``CorruptRecordError`` when no intact record
        has it."""
        return self._reader.look_message_by_offset(physical_offset)

    def query_message_by_id(self, message_id: str) -> StoredMessage:
        """The message of an offset message id (``PutMessageResult.message_ids``)."""
        _host, physical_offset = decode_message_id(message_id)
        return self.look_message_by_offset(physical_offset)

    def query_messages_by_key(
        self,
        topic: str,
        key: str,
        max_count: int = 32,
        begin_ms: int = 0,
        end_ms: int = 2**62,
    ) -> list[StoredMessage]:
        """Messages of ``topic`` with ``key`` among their keys or as their unique key,
        stored within ``[begin_ms, end_ms]``, newest first."""
        if self.index is None:
            raise IllegalStateError("the index is disabled", data_dir=str(self.config.data_dir))
        return self._reader.query_messages_by_key(
            self.index, topic, key, max_count, begin_ms, end_ms
        )

    # -- long polling ----------------------------------------------------------------------

    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        """Call ``listener(topic, queue_id, max_offset)`` after every put (on the writer's
        thread; keep it short)."""
        self.arrivals.add_listener(listener)

    def remove_arrival_listener(self, listener: ArrivalListener) -> None:
        self.arrivals.remove_listener(listener)

    def wait_for_message(self, topic: str, queue_id: int, offset: int, timeout_ms: int) -> bool:
        """Block until the queue holds a message at ``offset`` or later (its max offset is
        beyond ``offset``), at most ``timeout_ms``; True if it does."""

        def ready() -> bool:
            return self.get_max_offset(topic, queue_id) > offset

        return self.arrivals.wait(topic, queue_id, ready, timeout_ms / 1000.0)

    # -- admin and housekeeping ------------------------------------------------------------

    def queue_ids(self) -> list[tuple[str, int]]:
        """Every (topic, queue id) holding a consume queue."""
        return sorted((q.topic, q.queue_id) for q in self.queues)

    def delete_topic(self, topic: str) -> int:
        """Drop the consume queues of ``topic`` (its records go with retention); returns
        how many queues went."""
        with self._put_lock:
            return self.queues.remove_topic(topic)

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
            raise IllegalStateError("store is not running", data_dir=str(self.config.data_dir))

    @property
    def min_physical_offset(self) -> int:
        return self.commit_log.min_offset

    @property
    def max_physical_offset(self) -> int:
        return self.commit_log.max_offset

    @property
    def flushed_physical_offset(self) -> int:
        return self.commit_log.flushed_offset
