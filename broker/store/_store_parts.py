"""The message store's parts, built from its config, and the state its roles share.

``MessageStore`` is one object whose methods are arranged by role, one class per module, all on
these parts: ``StoreParts`` (here) < ``LeaderPath`` (``_leader_path``: a group leader's appends
and log reads) < ``PutPath`` (``_put_path``: appends) and ``MetaPath`` (``_metadata_log``: topic
configs and consumer offsets, through the log in a group); ``GetPath`` (``_get_path``: reads,
lookups, long polling); ``CommitPath`` (``_commit_path``: the committed offset, dispatch on
commit); ``ReplicaPath`` (``_replica_appends``: a follower's appends); ``StoreServices``
(``_store_services``: flush, checkpoint, retention, offsets, start-up steps) < ``TruncationPath``
(``_truncation``: a follower's durable truncation) < ``MessageStore`` (``_message_store``: start
and shutdown). One object, so a put or a get makes the same calls as when it was one class.

Caller: those classes (``MessageStore(config)`` runs :meth:`StoreParts.__init__`); nothing
else builds it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from aeromq.broker._errors import BrokerStateError
from aeromq.broker.store._arrival import ArrivalNotifier
from aeromq.broker.store._commit_log import CommitLog
from aeromq.broker.store._commit_watermark import CommitWatermark
from aeromq.broker.store._config import StoreConfig
from aeromq.broker.store._consumer_offsets import ConsumerOffsetManager
from aeromq.broker.store._dir_lock import DirectoryLock
from aeromq.broker.store._disk_space import DiskSpaceGuard
from aeromq.broker.store._group_commit import GroupCommitService
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._log_state import QueueCounters
from aeromq.broker.store._message import pack_host
from aeromq.broker.store._producer_state import ProducerStateTable
from aeromq.broker.store._queue_table import ConsumeQueueTable
from aeromq.broker.store._reader import MessageReader
from aeromq.broker.store._recovery import RecoveryReport
from aeromq.broker.store._scheduler import Scheduler
from aeromq.broker.store._topic_config import TopicConfigManager

__all__ = ["StoreParts", "wall_clock_ms"]


def wall_clock_ms() -> int:
    """The store's default clock: epoch milliseconds (the put path reads it inline)."""
    return time.time_ns() // 1_000_000


class StoreParts:
    """The parts of the store for ``config`` and its shared state (see module); ``clock_ms``
    gives store timestamps."""

    def __init__(self, config: StoreConfig, *, clock_ms: Callable[[], int] | None = None) -> None:
        self.config = config
        self._clock_ms = clock_ms or wall_clock_ms
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
        self.producer_states = ProducerStateTable()  # idempotent producers' last batches
        # a broker group's (StoreConfig.replicated): the committed offset and its waiters, the
        # queue offsets given at append, whether puts are taken, a follower's incomplete unit,
        # and the commit log offset after which the dispatch indexes keys
        self._replicated = config.replicated
        self._commits = CommitWatermark(config.replication_timeout_ms)
        self._counters = QueueCounters()
        self._leading = not config.replicated
        self._pending = bytearray()
        self._index_from = -1

    def _require_group(self) -> None:
        """Raise :class:`BrokerStateError` unless the store is a broker group's."""
        if not self._replicated:
            raise BrokerStateError(
                "not a store of a broker group (StoreConfig.replicated is off)",
                data_dir=str(self.config.data_dir),
            )
