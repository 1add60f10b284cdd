"""The consume queue of one (topic, queue id): the index from queue offset to commit log.

Entry ``i`` (the record at queue offset ``i``; it points at the record batch that holds
it, so a batch's records share its offset and size) is at byte ``i * 20`` of the queue's files;
integers little-endian::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                  Commit Log (Physical) Offset                 |   0
    |                                                               |
    +---------------------------------------------------------------+
    |                 Batch Size (the whole batch)                  |   8
    +---------------------------------------------------------------+
    |                          Tag Hash                             |  12
    |                                                               |
    +---------------------------------------------------------------+

A written entry has a size > 0; zeros mean "not written". Each file is viewed as a numpy
structured array, so scans (recovery, truncation, tag filtering, the min offset after
retention) are vectorised; physical offsets increase with the queue offset, which makes
``searchsorted`` valid on them.

Caller: the ``MessageStore`` (writes under its put lock; reads from any thread).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE
from aeromq.broker.store._mapped_file import MappedFile
from aeromq.broker.store._mapped_file_queue import MappedFileQueue

__all__ = ["ENTRY_DTYPE", "ENTRY_LENGTH", "ConsumeQueue", "LastBatch"]

PHYSICAL_OFFSET_OFFSET = 0
SIZE_OFFSET = 8
TAG_HASH_OFFSET = 12
ENTRY_LENGTH = 20
ENTRY_DTYPE = np.dtype([("offset", "<i8"), ("size", "<i4"), ("tag", "<i8")])
assert ENTRY_DTYPE.itemsize == ENTRY_LENGTH

_ENTRY = struct.Struct("<qiq")
assert _ENTRY.size == ENTRY_LENGTH
LastBatch = tuple[int, int, int, int, MappedFile]
"""``(base queue offset, record count, physical offset, size, commit log segment)`` of the
batch a queue's last put appended (``ConsumeQueue.last_batch``)."""
Entries = npt.NDArray[np.void]
Int64Array = npt.NDArray[np.int64]


class ConsumeQueue:
    """The entries of (``topic``, ``queue_id``) in ``directory``, ``entries_per_file`` a file.

    ``max_offset`` is the next queue offset to write; ``min_offset`` the first entry whose
    record is still in the commit log. ``last_batch`` is the batch the store's one-record put
    (``PutPath._append_one``) appended last, while nothing else changed the queue since (see
    :data:`LastBatch`): a caught-up consumer's pull reads it without a look at the entries
    (``MessageReader.get_batches``); every other write, truncation or deletion clears it.
    """

    def __init__(
        self,
        topic: str,
        queue_id: int,
        directory: Path,
        entries_per_file: int,
        *,
        file_mode: int = DEFAULT_FILE_MODE,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.entries_per_file = entries_per_file
        self.files = MappedFileQueue(
            directory, entries_per_file * ENTRY_LENGTH, file_mode=file_mode
        )
        self._arrays: dict[int, Entries] = {}
        self.max_offset = 0
        self.min_offset = 0
        self._flushed_offset = 0
        self.last_batch: LastBatch | None = None

    # -- loading and recovery --------------------------------------------------------------

    def load(self) -> None:
        """Map the files and find the last written entry (zeros end the queue)."""
        self.files.load()
        files = self.files.files
        if not files:
            return
        self.min_offset = files[0].start_offset // ENTRY_LENGTH
        end = files[0].start_offset // ENTRY_LENGTH
        for mapped in files:
            entries = self._entries_of(mapped)
            unwritten = np.flatnonzero(entries["size"] <= 0)
            end = mapped.start_offset // ENTRY_LENGTH + (
                int(unwritten[0]) if unwritten.size else len(entries)
            )
            if unwritten.size:
                break
        self.truncate(end)
        self._flushed_offset = self.max_offset

    def truncate(self, queue_offset: int) -> None:
        """Drop the entries at and after ``queue_offset``."""
        self.last_batch = None
        queue_offset = max(queue_offset, self.min_offset)
        for mapped in self.files.files:
            if mapped.start_offset >= queue_offset * ENTRY_LENGTH:
                self._arrays.pop(mapped.start_offset, None)
        self.files.truncate(queue_offset * ENTRY_LENGTH)
        self.max_offset = queue_offset
        self._flushed_offset = min(self._flushed_offset, queue_offset)

    def truncate_physical(self, physical_end: int) -> None:
        """Drop the entries whose records reach past ``physical_end`` (the commit log's end)."""
        low = self.min_offset
        high = self.max_offset
        # files are searched from the last; physical offsets ascend with the queue offset
        for mapped in reversed(self.files.files):
            first = max(low, mapped.start_offset // ENTRY_LENGTH)
            if first >= high:
                continue
            entries = self._entries_of(mapped)
            base = mapped.start_offset // ENTRY_LENGTH
            part = entries[first - base : high - base]
            ends = part["offset"] + part["size"]
            cut = int(np.searchsorted(ends, physical_end, side="right"))
            if cut < len(part):
                high = first + cut
            if cut > 0:
                break
        if high < self.max_offset:
            self.truncate(high)

    # -- writing ---------------------------------------------------------------------------

    def put(
        self,
        queue_offset: int,
        physical_offsets: Sequence[int],
        sizes: Sequence[int],
        tag_hashes: Sequence[int],
    ) -> None:
        """Write the entries of consecutive queue offsets from ``queue_offset``.

        Entries must follow the queue's end (``queue_offset <= max_offset``); rewriting
        existing ones (recovery) is allowed.
        """
        self.last_batch = None
        count = len(physical_offsets)
        done = 0
        while done < count:
            at = queue_offset + done
            mapped = self._file_for(at)
            entries = self._entries_of(mapped)
            index = at - mapped.start_offset // ENTRY_LENGTH
            n = min(count - done, len(entries) - index)
            if n == 1:
                _ENTRY.pack_into(
                    mapped.mm,
                    index * ENTRY_LENGTH,
                    physical_offsets[done],
                    sizes[done],
                    tag_hashes[done],
                )
            else:
                part = entries[index : index + n]
                part["offset"] = physical_offsets[done : done + n]
                part["size"] = sizes[done : done + n]
                part["tag"] = tag_hashes[done : done + n]
            done += n
        end = queue_offset + count
        if end > self.max_offset:
            self.max_offset = end

    def put_batch(
        self,
        queue_offset: int,
        physical_offset: int,
        size: int,
        tag_hashes: Int64Array | Sequence[int],
    ) -> None:
        """Write the entries of one batch's records, from ``queue_offset`` on: each points at
        the batch (``physical_offset``, ``size``) with its record's tag hash. One numpy write
        per column and file (a batch crosses at most a file boundary or two), then one
        ``pwrite`` of the entries a file (``MappedFile.write_at``), not stores through the map:
        a store's page fault (a fresh page, or the tail page again after the flush wrote it
        back) holds the GIL for as long as the kernel takes, tens of ms beside other fsyncs
        (measured, ``docs/history/replication-log.md``), and the whole broker stopped with it;
        ``pwrite`` waits with the GIL released. A batch of one
        record, one ``struct`` store through the map (a third of the numpy writes' cost,
        measured; the one-at-a-time send's path)."""
        self.last_batch = None
        count = len(tag_hashes)
        if count == 1:
            mapped = self._file_for(queue_offset)
            byte = queue_offset * ENTRY_LENGTH - mapped.start_offset
            _ENTRY.pack_into(mapped.mm, byte, physical_offset, size, int(tag_hashes[0]))
            if queue_offset >= self.max_offset:
                self.max_offset = queue_offset + 1
            return
        done = 0
        while done < count:
            at = queue_offset + done
            mapped = self._file_for(at)
            byte = at * ENTRY_LENGTH - mapped.start_offset
            n = min(count - done, (mapped.size - byte) // ENTRY_LENGTH)
            part = np.empty(n, dtype=ENTRY_DTYPE)
            part["offset"] = physical_offset
            part["size"] = size
            part["tag"] = tag_hashes[done : done + n] if done or n < count else tag_hashes
            mapped.write_at(byte, (part.view(np.uint8).data,))
            done += n
        end = queue_offset + count
        if end > self.max_offset:
            self.max_offset = end

    def ensure_room(self, queue_offset: int, count: int) -> None:
        """Create the files that ``count`` entries from ``queue_offset`` need, so that a put
        whose file cannot be allocated fails before its batch is in the commit log (raises
        ``NoSpaceError``). Caller: the store's put path, under its put lock."""
        last = self.files.last
        if last is not None and (queue_offset + count) * ENTRY_LENGTH <= last.end_offset:
            return
        file_size = self.files.file_size
        first = queue_offset * ENTRY_LENGTH
        end = (queue_offset + count - 1) * ENTRY_LENGTH  # the last entry's first byte
        for start in range(first - first % file_size, end + 1, file_size):  # each, in order
            self._file_for(start // ENTRY_LENGTH)

    def reserve(self, end: int) -> None:
        """Create every file the entries before queue offset ``end`` need, contiguously from
        the last one (raises ``NoSpaceError``): a broker group's leader gives queue offsets
        when it appends and writes the entries when the batch is committed, maybe several files
        later. Caller: the store's group put path, under its put lock."""
        last = self.files.last
        need = (end - 1) * ENTRY_LENGTH  # the last entry's first byte
        if end <= 0 or (last is not None and need < last.end_offset):
            return
        file_size = self.files.file_size
        if last is not None:
            start = last.end_offset
        else:
            first = self.max_offset * ENTRY_LENGTH
            start = first - first % file_size
        while start <= need:
            self.files.create(start)
            start += file_size

    def _file_for(self, queue_offset: int) -> MappedFile:
        byte = queue_offset * ENTRY_LENGTH
        mapped = self.files.find(byte)
        if mapped is not None:
            return mapped
        file_size = self.files.file_size
        return self.files.create(byte - byte % file_size)

    def _entries_of(self, mapped: MappedFile) -> Entries:
        entries = self._arrays.get(mapped.start_offset)
        if entries is None:
            entries = np.frombuffer(mapped.mm, dtype=ENTRY_DTYPE)
            self._arrays[mapped.start_offset] = entries
        return entries

    # -- reading ---------------------------------------------------------------------------

    def entries(self, queue_offset: int, max_count: int) -> Entries:
        """Up to ``max_count`` written entries from ``queue_offset`` (a view, possibly fewer
        when a file ends first; empty outside ``[min_offset, max_offset)``)."""
        end = min(self.max_offset, queue_offset + max_count)
        if queue_offset < self.min_offset or queue_offset >= end:
            return np.empty(0, dtype=ENTRY_DTYPE)
        mapped = self.files.find(queue_offset * ENTRY_LENGTH)
        if mapped is None:
            return np.empty(0, dtype=ENTRY_DTYPE)
        base = mapped.start_offset // ENTRY_LENGTH
        return self._entries_of(mapped)[queue_offset - base : end - base]

    def entry(self, queue_offset: int) -> tuple[int, int, int] | None:
        """``(physical offset, size, tag hash)`` at ``queue_offset``, or None."""
        found = self.entries(queue_offset, 1)
        if not len(found):
            return None
        return int(found["offset"][0]), int(found["size"][0]), int(found["tag"][0])

    def offset_by_time(
        self, timestamp_ms: int, upper: bool, store_timestamp: Callable[[int], int | None]
    ) -> int:
        """Binary search by store time (``store_timestamp`` reads it from the commit log).

        Lower boundary: the first offset stored at or after ``timestamp_ms`` (``max_offset``
        when all are earlier). Upper: the last offset stored at or before it (``min_offset``
        when none is). Store timestamps never decrease along a queue.
        """
        low, high = self.min_offset, self.max_offset
        if low >= high:
            return low
        while low < high:
            middle = (low + high) // 2
            found = self.entry(middle)
            stamp = store_timestamp(found[0]) if found is not None else None
            if stamp is None:  # removed meanwhile: treat as older than anything
                low = middle + 1
                continue
            if stamp < timestamp_ms or (upper and stamp == timestamp_ms):
                low = middle + 1
            else:
                high = middle
        if upper:
            return max(self.min_offset, low - 1)
        return low

    # -- retention and durability ----------------------------------------------------------

    def correct_min_offset(self, physical_min: int) -> None:
        """Move ``min_offset`` to the first entry whose record is at or after ``physical_min``."""
        mapped = self.files.first
        if mapped is None:
            self.min_offset = self.max_offset
            return
        base = mapped.start_offset // ENTRY_LENGTH
        first = max(self.min_offset, base)
        end = min(self.max_offset, base + self.entries_per_file)
        if first >= end:
            return
        part = self._entries_of(mapped)[first - base : end - base]
        self.min_offset = first + int(np.searchsorted(part["offset"], physical_min, side="left"))

    def delete_expired(self, physical_min: int, max_files: int = 10) -> int:
        """Delete whole files whose every record is before ``physical_min``, never the last.
        Returns how many were deleted."""

        def expired(mapped: MappedFile) -> bool:
            entries = self._entries_of(mapped)
            last = entries[len(entries) - 1]
            return bool(last["size"] > 0 and last["offset"] + last["size"] <= physical_min)

        first_before = self.files.min_offset
        deleted = self.files.delete_front(expired, max_files)
        if deleted:
            for k in range(deleted):
                self._arrays.pop(first_before + k * self.files.file_size, None)
        self.correct_min_offset(physical_min)
        return deleted

    def flush(self) -> None:
        """Make the entries written since the last flush durable."""
        end = self.max_offset
        if end > self._flushed_offset:
            begin = self._flushed_offset * ENTRY_LENGTH
            for mapped in self.files.files_between(begin, end * ENTRY_LENGTH):
                mapped.flush()
            self._flushed_offset = end

    def close(self) -> None:
        self._arrays.clear()
        self.files.close()

    def delete(self) -> None:
        self.last_batch = None
        self._arrays.clear()
        self.files.delete_all()
        self.max_offset = self.min_offset = 0
