"""The store's configuration: one typed, validated, immutable object.

Defaults are RocketMQ's (``MessageStoreConfig``) where RocketMQ has one: 1 GiB commit log
segments, 300,000 entries per consume-queue file, ASYNC flush every 500 ms, a 5 s SYNC flush
timeout, 72 h of retention, a 4 MiB message cap. Files are private (``0600``, directories
``0700``) and sends are refused while the disk has less than 64 MiB free. A store is a single
broker's unless ``replicated`` (a member of a broker group, see ``MessageStore``); an idempotent
producer is forgotten after a day without a batch (Kafka's ``producer.id.expiration.ms``).
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, fields
from pathlib import Path

from aeromq.broker._errors import ConfigError

__all__ = ["FlushMode", "StoreConfig"]

_GIB = 1 << 30
_MIB = 1 << 20
_HOUR_MS = 3_600_000


class FlushMode(enum.Enum):
    """When an append is acknowledged: ASYNC once written to the page cache (flushed on an
    interval), SYNC once its bytes are durable (group commit)."""

    ASYNC = "ASYNC"
    SYNC = "SYNC"


@dataclass(frozen=True)
class StoreConfig:
    """Everything the message store needs to know; validated on construction.

    ``max_message_bytes`` caps one stored record batch (a batch is capped like one message, as
    RocketMQ caps a batch by its max message size); the effective cap is also bounded by the
    segment size (a batch never spans two segments), see ``max_record_bytes``.

    ``file_mode`` is the permission bits of every store file (directories get an execute bit
    beside each read bit: ``0600`` gives ``0700``). Sends are refused (``DISK_FULL``) while the
    data directory's file system would keep less than ``min_free_disk_bytes`` free, or is more
    than ``max_disk_used_percent`` used (None: no percentage limit); the free space is read at
    most every ``disk_check_interval_ms``.

    The checkpoint (every ``flush_consume_queue_interval_ms``) flushes the consume queues;
    the key index is flushed every ``flush_index_interval_ms`` (and at an admin flush and at
    shutdown): after a crash, recovery takes it back to its last flush and indexes the rest
    again from the commit log.

    ``replicated`` makes the store a member of a broker group: what puts wait for and what gets
    see is the committed offset the replication layer sets (``set_high_watermark``), a put
    waiting longer than ``replication_timeout_ms`` is answered ``REPLICATION_TIMEOUT``, and
    topic configs and consumer offsets go through the log. ``producer_expiry_ms``: an
    idempotent producer with no batch stored for this long is forgotten (its next batch is
    taken whatever its sequence).
    """

    data_dir: Path
    commit_log_segment_bytes: int = _GIB
    consume_queue_entries_per_segment: int = 300_000
    flush_mode: FlushMode = FlushMode.ASYNC
    flush_interval_ms: int = 500
    sync_flush_timeout_ms: int = 5_000
    flush_consume_queue_interval_ms: int = 1_000
    flush_index_interval_ms: int = 10_000
    max_message_bytes: int = 4 * _MIB
    file_reserved_time_ms: int = 72 * _HOUR_MS
    max_store_bytes: int | None = None
    clean_interval_ms: int = 10_000
    offset_persist_interval_ms: int = 5_000
    max_filter_scan_entries: int = 800
    index_enabled: bool = True
    index_slots: int = 5_000_000
    index_entries: int = 20_000_000
    store_host: str = "127.0.0.1:10911"
    file_mode: int = 0o600
    min_free_disk_bytes: int = 64 * _MIB
    max_disk_used_percent: int | None = None
    disk_check_interval_ms: int = 100
    replicated: bool = False
    replication_timeout_ms: int = 5_000
    producer_expiry_ms: int = 86_400_000

    def __post_init__(self) -> None:
        if not isinstance(self.data_dir, Path):
            object.__setattr__(self, "data_dir", Path(os.fspath(self.data_dir)))
        if not isinstance(self.flush_mode, FlushMode):
            raise ConfigError("flush_mode must be a FlushMode", flush_mode=self.flush_mode)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("data_dir", "flush_mode", "store_host", "index_enabled", "replicated"):
                continue
            if value is None and f.name in ("max_store_bytes", "max_disk_used_percent"):
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError("must be an int", field=f.name, value=value)
        _at_least("commit_log_segment_bytes", self.commit_log_segment_bytes, 4096)
        _at_most("commit_log_segment_bytes", self.commit_log_segment_bytes, (1 << 31) - 1)
        _at_least("consume_queue_entries_per_segment", self.consume_queue_entries_per_segment, 2)
        _at_least("flush_interval_ms", self.flush_interval_ms, 1)
        _at_least("sync_flush_timeout_ms", self.sync_flush_timeout_ms, 1)
        _at_least("flush_consume_queue_interval_ms", self.flush_consume_queue_interval_ms, 1)
        _at_least("flush_index_interval_ms", self.flush_index_interval_ms, 1)
        _at_least("max_message_bytes", self.max_message_bytes, 256)
        _at_least("file_reserved_time_ms", self.file_reserved_time_ms, 0)
        if self.max_store_bytes is not None:
            _at_least("max_store_bytes", self.max_store_bytes, self.commit_log_segment_bytes)
        _at_least("clean_interval_ms", self.clean_interval_ms, 1)
        _at_least("offset_persist_interval_ms", self.offset_persist_interval_ms, 1)
        _at_least("max_filter_scan_entries", self.max_filter_scan_entries, 1)
        _at_least("index_slots", self.index_slots, 1)
        _at_least("index_entries", self.index_entries, 2)
        _at_most("index_entries", self.index_entries, (1 << 31) - 1)
        _at_least("file_mode", self.file_mode, 0o600)
        _at_most("file_mode", self.file_mode, 0o777)
        if self.file_mode & 0o600 != 0o600:
            raise ConfigError("file_mode must let the owner read and write", field="file_mode")
        _at_least("min_free_disk_bytes", self.min_free_disk_bytes, 0)
        if self.max_disk_used_percent is not None:
            _at_least("max_disk_used_percent", self.max_disk_used_percent, 1)
            _at_most("max_disk_used_percent", self.max_disk_used_percent, 100)
        _at_least("disk_check_interval_ms", self.disk_check_interval_ms, 1)
        _at_least("replication_timeout_ms", self.replication_timeout_ms, 1)
        _at_least("producer_expiry_ms", self.producer_expiry_ms, 1)
        host, _, port = self.store_host.rpartition(":")
        parts = host.split(".")
        if (
            len(parts) != 4
            or not all(p.isdigit() and int(p) < 256 for p in parts)
            or not port.isdigit()
            or not 0 <= int(port) < 65536
        ):
            raise ConfigError("store_host must be 'a.b.c.d:port'", store_host=self.store_host)

    @property
    def max_record_bytes(self) -> int:
        """The largest record batch accepted: the configured cap, bounded by the segment
        (which must keep 8 bytes for an end-of-segment blank filler)."""
        return min(self.max_message_bytes, self.commit_log_segment_bytes - 8)

    @property
    def commit_log_dir(self) -> Path:
        """``data_dir/commitlog``: the commit log's segments."""
        return self.data_dir / "commitlog"

    @property
    def consume_queue_dir(self) -> Path:
        """``data_dir/consumequeue``: one folder per topic, one per queue in it."""
        return self.data_dir / "consumequeue"

    @property
    def index_dir(self) -> Path:
        """``data_dir/index``: the index files by message key and unique key."""
        return self.data_dir / "index"

    @property
    def config_dir(self) -> Path:
        """``data_dir/config``: ``topics.json`` and ``consumer_offsets.json``."""
        return self.data_dir / "config"

    @property
    def checkpoint_path(self) -> Path:
        """``data_dir/checkpoint``: the commit log offset up to which the queues and the index
        are durable, and whether the last shutdown was clean."""
        return self.data_dir / "checkpoint"

    @property
    def producer_state_path(self) -> Path:
        """``data_dir/producer_state``: the idempotent producers' last batches, as of a commit
        log offset (a snapshot the checkpoint writes; recovery scans the log from there)."""
        return self.data_dir / "producer_state"

    @property
    def lock_path(self) -> Path:
        """``data_dir/lock``: the file an open store holds locked (``flock``), so a second
        store on the directory fails fast with :class:`StoreLockedError`."""
        return self.data_dir / "lock"


def _at_least(name: str, value: int, minimum: int) -> None:
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}", field=name, value=value)


def _at_most(name: str, value: int, maximum: int) -> None:
    if value > maximum:
        raise ConfigError(f"{name} must be <= {maximum}", field=name, value=value)
