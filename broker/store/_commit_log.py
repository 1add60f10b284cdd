"""The commit log: every record of every topic, appended in order to mapped segments.

Caller: the ``MessageStore``, which serialises appends under its put lock and passes the queue
offsets; reads, flushes and retention may run on other threads. ``max_offset`` is the
physical offset of the next record; ``flushed_offset`` how far the log is durable.
"""

from __future__ import annotations

import struct
import threading
from pathlib import Path

from aeromq.broker._errors import CorruptRecordError
from aeromq.broker.store._batch_encoder import EncodedBatch
from aeromq.broker.store._mapped_file import MappedFile
from aeromq.broker.store._mapped_file_queue import MappedFileQueue
from aeromq.broker.store._message import StoredMessage
from aeromq.broker.store._record import (
    BLANK_MAGIC,
    MESSAGE_MAGIC,
    MIN_BLANK_LENGTH,
    RecordCheck,
    check_record,
    decode_record,
    read_store_timestamp,
)

__all__ = ["CommitLog"]

_PREFIX = struct.Struct("<iI")


class CommitLog:
    """Segments of ``segment_bytes`` in ``directory``; records stamped with ``store_host``."""

    def __init__(self, directory: Path, segment_bytes: int, store_host: bytes) -> None:
        self.files = MappedFileQueue(directory, segment_bytes)
        self.segment_bytes = segment_bytes
        self.store_host = store_host
        self.max_offset = 0
        self.flushed_offset = 0
        self.last_store_timestamp_ms = 0
        self._flush_lock = threading.Lock()

    def load(self) -> None:
        self.files.load()

    @property
    def min_offset(self) -> int:
        """The first physical offset still held (``max_offset`` when the log holds nothing)."""
        first = self.files.min_offset
        return first if first >= 0 else self.max_offset

    def set_end(self, offset: int) -> None:
        """After recovery: the log ends at ``offset`` (everything after is already gone)."""
        self.max_offset = offset
        self.flushed_offset = offset

    def append(self, batch: EncodedBatch, positions: list[int]) -> None:
        """Copy an encoded batch to the log's end (it was encoded for ``max_offset``; if it
        must start a new segment it is rebased there). The physical offset of each record is
        appended to ``positions``. Raises ``StoreIOError`` when a segment cannot be created.
        """
        total = batch.total
        mapped = self._segment_for(total)
        offset = self.max_offset
        if batch.base_offset != offset:
            batch.rebase(offset)
        position = offset - mapped.start_offset
        mapped.view[position : position + total] = batch.view[:total]
        append = positions.append
        for size in batch.sizes:
            append(offset)
            offset += size
        self.max_offset = offset

    def _segment_for(self, length: int) -> MappedFile:
        """The segment the next ``length`` bytes go to, rolling (with a blank) when needed."""
        offset = self.max_offset
        mapped = self.files.last
        if mapped is not None and offset < mapped.end_offset:
            room = mapped.end_offset - offset
            if length + MIN_BLANK_LENGTH <= room:
                return mapped
            _PREFIX.pack_into(mapped.mm, offset - mapped.start_offset, room, BLANK_MAGIC)
            offset = mapped.end_offset
            self.max_offset = offset
        start = offset - offset % self.segment_bytes
        return self.files.create(start)

    def check(self, offset: int) -> tuple[RecordCheck, int]:
        """``check_record`` at a physical offset (``END`` past the last segment)."""
        mapped = self.files.find(offset)
        if mapped is None:
            return RecordCheck.END, 0
        return check_record(mapped.view, offset - mapped.start_offset, mapped.size)

    def read(self, offset: int, size: int) -> StoredMessage | None:
        """The message at ``offset`` if an intact record of ``size`` bytes is there, else
        None (removed, or failed its check). A hot-path call: it never raises."""
        mapped = self.files.find(offset)
        if mapped is None:
            return None
        position = offset - mapped.start_offset
        try:
            check, found = check_record(mapped.view, position, min(mapped.size, position + size))
            if check is not RecordCheck.OK or found != size:
                return None
            return decode_record(mapped.mm, position)
        except ValueError:  # the segment was unmapped by retention meanwhile
            return None

    def read_checked(self, offset: int) -> StoredMessage:
        """The message at ``offset``; raises ``CorruptRecordError`` when the record there
        is broken, or when no record starts there."""
        mapped = self.files.find(offset)
        if mapped is None or offset >= self.max_offset:
            raise CorruptRecordError(
                "no record at this offset",
                physical_offset=offset,
                min_offset=self.min_offset,
                max_offset=self.max_offset,
            )
        position = offset - mapped.start_offset
        check, _size = check_record(mapped.view, position, mapped.size)
        if check is not RecordCheck.OK:
            raise CorruptRecordError(
                "record failed its check", physical_offset=offset, check=check.name
            )
        return decode_record(mapped.mm, position)

    def store_timestamp(self, offset: int) -> int | None:
        """The store timestamp of the record at ``offset`` (None when not held)."""
        mapped = self.files.find(offset)
        if mapped is None:
            return None
        return read_store_timestamp(mapped.mm, offset - mapped.start_offset)

    def first_store_timestamp(self, mapped: MappedFile) -> int | None:
        """The store timestamp of the first record of a segment, if it has one."""
        size, magic = _PREFIX.unpack_from(mapped.mm, 0)
        if magic != MESSAGE_MAGIC or size <= 0:
            return None
        return read_store_timestamp(mapped.mm, 0)

    def flush(self) -> int:
        """Make every appended byte durable; returns the new ``flushed_offset``.

        Safe to call from any thread; concurrent appends continue while the disk works.
        """
        with self._flush_lock:
            target = self.max_offset
            if target > self.flushed_offset:
                for mapped in self.files.files_between(self.flushed_offset, target):
                    mapped.flush()
                self.flushed_offset = target
            return self.flushed_offset

    def truncate(self, offset: int) -> int:
        """Drop everything from ``offset`` on (recovery); returns the bytes dropped."""
        dropped = self.files.truncate(offset)
        self.max_offset = offset
        self.flushed_offset = min(self.flushed_offset, offset)
        return dropped

    def close(self) -> None:
        self.files.close()
