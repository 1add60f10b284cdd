"""The commit log: every record batch of every topic, appended in order to mapped segments.

A segment holds whole record batches (``common/record_batch/``) back to back, exactly as
producers encoded them, with the broker's fields patched into each header. A batch never spans
two segments: when the next one does not fit (with room for a blank), the rest of the segment
is one blank filler, and the batch starts the next segment. Never-written space is zeros.

::

    segment (file named by the commit log offset of its first byte)
    +--------------------+----------------+--- ... ---+-----------------+--------------------+
    | batch              | batch          |           | batch           | blank filler       |
    | Total Length  (i32)| ...            |           |                 | Length (i32) =     |
    | Magic "AQB1"  (u32)|                |           |                 |   bytes to the end |
    | broker fields, CRC,|                |           |                 | Magic "AQBE" (u32) |
    | columns, data      |                |           |                 | (anything, ignored)|
    +--------------------+----------------+--- ... ---+-----------------+--------------------+
    ^ start_offset       ^ start + length of the first                                       ^ end

    blank filler, at the end of a segment only:
     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |           Length (from here to the end of the segment)        |   0
    +---------------------------------------------------------------+
    |                         Magic ("AQBE")                        |   4
    +---------------------------------------------------------------+

A batch's commit log (physical) offset is where its first byte lands; its record ``i`` has
offset ``batch offset + i``. An append writes the batch but its first 8 bytes, with the
broker's fields patched in, then the length and magic (a second write): a process killed
mid-append leaves no batch whose magic is there without its fields. A batch over
:data:`MAP_COPY_MAX_LENGTH` is written by ``pwritev`` into the page cache, which the segment's
map shows (a store through the map would take a page fault on each fresh page); a smaller one
(a one-message send) by stores through the map, without the two system calls. The CRC (the
producer's) catches a batch torn by a crash of the machine; the physical offset field, a stale
batch left past a truncated tail. Logs of the previous format (one record per message, magic "AQM1") are
refused, never truncated.

Caller: the ``MessageStore``, which serialises appends under its put lock; reads, lookups,
flushes and retention may run on other threads. ``max_offset`` is where the next batch goes;
``flushed_offset`` how far the log is durable.
"""

from __future__ import annotations

import bisect
import enum
import struct
import threading
import time
from pathlib import Path

from aeromq.broker._errors import CorruptRecordError, InvalidArgumentError, StoreError
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE
from aeromq.broker.store._fsync_ledger import open_fsync_ledger
from aeromq.broker.store._mapped_file import MappedFile
from aeromq.broker.store._mapped_file_queue import MappedFileQueue
from aeromq.common import LatencyHistogram
from aeromq.common.record_batch import (
    BASE_QUEUE_OFFSET_OFFSET,
    BATCH_MAGIC,
    CRC_START,
    FIXED_HEADER_LENGTH,
    BatchCheck,
    check_batch,
)

__all__ = [
    "BLANK_MAGIC",
    "MAP_COPY_MAX_LENGTH",
    "MIN_BLANK_LENGTH",
    "OLD_RECORD_MAGIC",
    "CommitLog",
    "LogCheck",
    "check_at",
]

BLANK_MAGIC = 0x45425141  # "AQBE" in the file
OLD_RECORD_MAGIC = 0x314D5141  # "AQM1": one record per message, the format before batches
MIN_BLANK_LENGTH = 8  # length and magic

_PREFIX = struct.Struct("<iI")
BATCH_HEAD = struct.Struct("<iIqqq8siIi20xHH")
"""A stored batch's header as the store reads it: length, magic, the broker's fields, CRC,
record count, attributes and topic length (the producer's other fields skipped)."""
assert BATCH_HEAD.size == FIXED_HEADER_LENGTH
_I64 = struct.Struct("<q")
_BROKER_FIELDS = struct.Struct("<qqq8si")  # the header's broker fields, from offset 8
MAP_COPY_MAX_LENGTH = 4096
"""A batch up to this long is appended by stores through the segment's map, a longer one by
``pwritev`` (``MappedFile.write_at``). Two ``pwritev`` calls (the batch, then its length and
magic) cost a one-record send about 10 us of the broker's CPU on this VM, a quarter of the
store's whole append; stores through the map take a page fault on each fresh page instead,
which a small batch shares with the batches after it (one in 4 KiB), and a large one pays once
per 4 KiB (for which ``pwritev`` was measured cheaper). The map is the file's page cache, so
``fdatasync`` makes both durable alike; the length and magic still go last."""
ZERO_AHEAD_BYTES = 1 << 20
"""How far ahead of the log's end :meth:`CommitLog.zero_ahead` writes zeros (see there)."""
_ZERO_LOW_WATER = ZERO_AHEAD_BYTES // 2
_ZEROS = bytes(ZERO_AHEAD_BYTES)
_STORE_TIMESTAMP_OFFSET = 24
_BASE_PHYSICAL_OFFSET_OFFSET = 16
_PREFIX_LENGTH = 8


class LogCheck(enum.IntEnum):
    """What :func:`check_at` found: >= 0 is a well-formed position, < 0 a broken one."""

    OK = 0
    BLANK = 1
    END = 2  # never-written (zero) space
    BAD_MAGIC = -1
    BAD_SIZE = -2  # a length that does not fit the segment
    BAD_LENGTHS = -3  # the batch's own lengths do not add up
    BAD_CRC = -4
    BAD_POSITION = -5  # intact, but its physical offset field names another place
    OLD_FORMAT = -6  # a record of the format before batches


def check_at(
    buffer: memoryview, position: int, limit: int, physical_offset: int
) -> tuple[LogCheck, int]:
    """Whether a whole, intact batch (framing and CRC) that belongs at ``physical_offset``
    starts at ``position`` of ``buffer`` (bytes up to ``limit`` are the segment's).

    Returns ``(OK, length)`` for a batch, ``(BLANK, length)`` for a blank filler that runs
    exactly to ``limit``, ``(END, 0)`` for never-written space, a negative check with 0 for
    anything else. A hot-path function: it returns, never raises.
    """
    if limit - position < MIN_BLANK_LENGTH:
        if limit == position or not any(buffer[position:limit]):
            return LogCheck.END, 0
        return LogCheck.BAD_SIZE, 0
    size, magic = _PREFIX.unpack_from(buffer, position)
    if magic == BATCH_MAGIC:
        if size < FIXED_HEADER_LENGTH or size > limit - position:
            return LogCheck.BAD_SIZE, 0
        with buffer[position : position + size] as view:
            check, _why = check_batch(view, check_content=False)
        if check is BatchCheck.BAD_CRC:
            return LogCheck.BAD_CRC, 0
        if check is not BatchCheck.OK:
            return LogCheck.BAD_LENGTHS, 0
        if _I64.unpack_from(buffer, position + _BASE_PHYSICAL_OFFSET_OFFSET)[0] != physical_offset:
            return LogCheck.BAD_POSITION, 0
        return LogCheck.OK, size
    if magic == BLANK_MAGIC:
        if size == limit - position:
            return LogCheck.BLANK, size
        return LogCheck.BAD_SIZE, 0
    if magic == OLD_RECORD_MAGIC:
        return LogCheck.OLD_FORMAT, 0
    if size == 0 and magic == 0:
        return LogCheck.END, 0
    return LogCheck.BAD_MAGIC, 0


class CommitLog:
    """Segments of ``segment_bytes`` in ``directory``; batches stamped with ``store_host``."""

    def __init__(
        self,
        directory: Path,
        segment_bytes: int,
        store_host: bytes,
        *,
        file_mode: int = DEFAULT_FILE_MODE,
    ) -> None:
        self.files = MappedFileQueue(directory, segment_bytes, file_mode=file_mode)
        self.segment_bytes = segment_bytes
        self.store_host = store_host
        self.max_offset = 0
        self.flushed_offset = 0
        self.last_store_timestamp_ms = 0
        self._flush_lock = threading.Lock()
        self.flush_latency = LatencyHistogram()  # flushes that wrote something, for metrics
        self._starts_lock = threading.Lock()
        # per segment start offset: the physical offsets of its first batches, in order
        self._batch_starts: dict[int, list[int]] = {}
        self._fsync_ledger = open_fsync_ledger(directory.parent)  # None unless a fault test
        self._zeroed_to = 0
        """The log offset up to which the last segment's bytes past the log's end were
        written with zeros (:meth:`zero_ahead`)."""

    def load(self) -> None:
        """Map the segments; raises ``StoreError`` when one holds the previous format."""
        self.files.load()
        for mapped in self.files.files:
            _size, magic = _PREFIX.unpack_from(mapped.mm, 0)
            if magic == OLD_RECORD_MAGIC:
                path = str(mapped.path)
                self.files.close()
                raise StoreError(
                    "the commit log holds records of an older format: move the data "
                    "directory away (or drain it with the old version) to start",
                    path=path,
                    found_format="AQM1 (one record per message)",
                    expected_format="AQB1 (record batches)",
                )

    @property
    def min_offset(self) -> int:
        """The first physical offset still held (``max_offset`` when the log holds nothing)."""
        first = self.files.min_offset
        return first if first >= 0 else self.max_offset

    def set_end(self, offset: int) -> None:
        """After recovery: the log ends at ``offset`` (everything after is already gone)."""
        self.max_offset = offset
        self.flushed_offset = offset
        self.files.mark_end(offset)

    # -- appending -------------------------------------------------------------------------

    def append_batch(
        self, batch: memoryview, queue_offset: int, store_timestamp_ms: int, queue_id: int
    ) -> int:
        """Copy ``batch`` (format ``B``) to the log's end, patch its broker fields there, and
        return its physical offset. Raises ``StoreIOError`` when a segment cannot be made."""
        length = len(batch)
        mapped = self._segment_for(length)
        offset = self.max_offset
        end = offset + length
        position = offset - mapped.start_offset
        if length <= MAP_COPY_MAX_LENGTH:  # a small batch: stores through the map (see above)
            mm = mapped.mm
            mm[position + _PREFIX_LENGTH : position + length] = batch[_PREFIX_LENGTH:]
            _BROKER_FIELDS.pack_into(
                mm,
                position + BASE_QUEUE_OFFSET_OFFSET,
                queue_offset,
                offset,
                store_timestamp_ms,
                self.store_host,
                queue_id,
            )
            mm[position : position + _PREFIX_LENGTH] = batch[:_PREFIX_LENGTH]  # last: visible
            self.max_offset = end
            return offset
        head = bytearray(batch[:CRC_START])  # length, magic and the broker's fields
        _BROKER_FIELDS.pack_into(
            head,
            BASE_QUEUE_OFFSET_OFFSET,
            queue_offset,
            offset,
            store_timestamp_ms,
            self.store_host,
            queue_id,
        )
        fields = memoryview(head)
        mapped.write_at(position + _PREFIX_LENGTH, (fields[_PREFIX_LENGTH:], batch[CRC_START:]))
        mapped.write_at(position, (fields[:_PREFIX_LENGTH],))
        self.max_offset = end
        return offset

    def append_copy(self, unit: memoryview) -> int:
        """Copy a unit of another member's log (a batch with its broker fields, or a blank
        filler) as it is to the log's end, and return its physical offset: a follower's
        append. A batch needs room for a blank after it in the segment, a blank runs exactly
        to the segment's end, as on the leader; ``InvalidArgumentError`` otherwise (the
        members' segment sizes differ). Raises ``StoreIOError`` when a segment cannot be
        made."""
        length = len(unit)
        offset = self.max_offset
        mapped = self.files.last
        if mapped is None or offset >= mapped.end_offset:
            mapped = self.files.create(offset)
        room = mapped.end_offset - offset
        is_blank = _PREFIX.unpack_from(unit, 0)[1] == BLANK_MAGIC
        if (length != room) if is_blank else (length + MIN_BLANK_LENGTH > room):
            raise InvalidArgumentError(
                "a unit of the leader's log does not fit this log's segment: are the "
                "segment sizes the same?",
                physical_offset=offset,
                length=length,
                room=room,
                blank=is_blank,
            )
        position = offset - mapped.start_offset
        mapped.write_at(position + _PREFIX_LENGTH, (unit[_PREFIX_LENGTH:],))
        mapped.write_at(position, (unit[:_PREFIX_LENGTH],))
        self.max_offset = offset + length
        return offset

    def zero_ahead(self) -> MappedFile | None:
        """Write zeros over the next :data:`ZERO_AHEAD_BYTES` of the last segment past the
        log's end, once the end comes within half of that of the bytes zeroed so far; returns
        the segment to ``flush`` (outside the caller's lock), or None when nothing was written.
        A segment is made by ``posix_fallocate``, whose blocks the file system marks unwritten:
        the fsync of an append into them writes the block map too (the extents become written),
        a second write the disk does in turn after the data, in every commit round (an
        ``fdatasync`` of 46 KB appended took 527-546 us there against 327-347 us in space
        written before, median of 300, alternating, on this VM's ext4). Zeros written and made
        durable ahead, off the round, leave each round's fsync the data alone. The bytes past
        the log's end are zeros already: readers see nothing new. Caller: the store's services
        thread, holding the store's put lock (no append meanwhile)."""
        offset = self.max_offset
        if self._zeroed_to - offset > _ZERO_LOW_WATER:
            return None
        mapped = self.files.last
        if mapped is None or offset >= mapped.end_offset:
            return None  # the next append makes the segment
        start = max(offset, self._zeroed_to)
        end = min(mapped.end_offset, start + ZERO_AHEAD_BYTES)
        if end <= start:
            return None
        with memoryview(_ZEROS) as zeros:
            mapped.write_at(start - mapped.start_offset, (zeros[: end - start],))
        self._zeroed_to = end
        return mapped

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

    # -- reading ---------------------------------------------------------------------------

    def check(self, offset: int) -> tuple[LogCheck, int]:
        """:func:`check_at` at a physical offset (``END`` past the last segment)."""
        mapped = self.files.find(offset)
        if mapped is None:
            return LogCheck.END, 0
        try:
            return check_at(mapped.view, offset - mapped.start_offset, mapped.size, offset)
        except ValueError:  # unmapped by retention meanwhile
            return LogCheck.END, 0

    def batch_at(self, offset: int) -> memoryview:
        """The checked batch (framing and CRC) that starts at ``offset``, as a view of its
        segment; raises ``CorruptRecordError`` when no intact batch starts there."""
        mapped = self.files.find(offset)
        if mapped is None or offset >= self.max_offset:
            raise CorruptRecordError(
                "no batch at this offset",
                physical_offset=offset,
                min_offset=self.min_offset,
                max_offset=self.max_offset,
            )
        position = offset - mapped.start_offset
        try:
            check, size = check_at(mapped.view, position, mapped.size, offset)
            if check is not LogCheck.OK:
                raise CorruptRecordError(
                    "batch failed its check", physical_offset=offset, check=check.name
                )
            return mapped.view[position : position + size]
        except ValueError as exc:  # unmapped by retention meanwhile
            raise CorruptRecordError("batch went to retention", physical_offset=offset) from exc

    def find_batch(self, offset: int) -> int:
        """The physical offset of the batch whose bytes hold ``offset`` (a record's commit log
        offset), or -1 when none does. Walks the segment's batches by their lengths from
        its start once; the starts found are kept, so repeated lookups are cheap."""
        mapped = self.files.find(offset)
        end = self.max_offset
        if mapped is None or offset >= end or offset < self.min_offset:
            return -1
        segment_start = mapped.start_offset
        with self._starts_lock:
            starts = self._batch_starts.get(segment_start)
            if starts is None:
                self._prune_starts()
                starts = self._batch_starts[segment_start] = [segment_start]
            try:
                while starts[-1] <= offset:
                    at = starts[-1]
                    if at >= end:
                        break
                    size, magic = _PREFIX.unpack_from(mapped.mm, at - segment_start)
                    if magic != BATCH_MAGIC or size < FIXED_HEADER_LENGTH:
                        break  # the blank, or a broken length: nothing past here
                    starts.append(at + size)
            except ValueError:  # unmapped by retention meanwhile
                return -1
        index = bisect.bisect_right(starts, offset) - 1
        found = starts[index]
        if index == len(starts) - 1:  # no batch known to end after it: beyond the last
            return -1
        return found

    def _prune_starts(self) -> None:
        held = {mapped.start_offset for mapped in self.files.files}
        for start in [s for s in self._batch_starts if s not in held]:
            del self._batch_starts[start]

    def store_timestamp(self, offset: int) -> int | None:
        """The store timestamp of the batch at ``offset`` (None when not held)."""
        mapped = self.files.find(offset)
        if mapped is None:
            return None
        try:
            position = offset - mapped.start_offset + _STORE_TIMESTAMP_OFFSET
            return int(_I64.unpack_from(mapped.mm, position)[0])
        except ValueError:  # unmapped by retention meanwhile
            return None

    def first_store_timestamp(self, mapped: MappedFile) -> int | None:
        """The store timestamp of the first batch of a segment, if it has one."""
        size, magic = _PREFIX.unpack_from(mapped.mm, 0)
        if magic != BATCH_MAGIC or size <= 0:
            return None
        return int(_I64.unpack_from(mapped.mm, _STORE_TIMESTAMP_OFFSET)[0])

    # -- durability and recovery -----------------------------------------------------------

    def flush(self) -> int:
        """Make every appended byte durable; returns the new ``flushed_offset``.

        Safe to call from any thread; concurrent appends continue while the disk works.
        """
        with self._flush_lock:
            target = self.max_offset
            if target > self.flushed_offset:
                started_ns = time.perf_counter_ns()
                for mapped in self.files.files_between(self.flushed_offset, target):
                    mapped.flush()
                self.flushed_offset = target
                self.flush_latency.observe_ns(time.perf_counter_ns() - started_ns)
                if self._fsync_ledger is not None:
                    self._fsync_ledger.record(target)
            return self.flushed_offset

    def sync_recovered(self) -> None:
        """After recovery, fsync every segment: ``set_end`` counts the recovered log as
        flushed, yet a crashed process's last writes may still be only in the page cache (a
        group member acks its flushed offset as durable). Cheap when they reached the disk."""
        with self._flush_lock:
            for mapped in self.files.files:
                mapped.flush()
            if self._fsync_ledger is not None:
                self._fsync_ledger.record(self.flushed_offset)

    def truncate(self, offset: int) -> int:
        """Drop everything from ``offset`` on (recovery); returns the bytes dropped."""
        dropped = self.files.truncate(offset)
        self.max_offset = offset
        self._zeroed_to = min(self._zeroed_to, offset)
        self.flushed_offset = min(self.flushed_offset, offset)
        with self._starts_lock:
            self._batch_starts.clear()
        return dropped

    def truncate_durably(self, offset: int) -> int:
        """:meth:`truncate`, then the zeroed tail flushed to disk (the later segments' removal
        is made durable by the truncation itself): after a crash the log ends at ``offset`` or
        the truncation is to be done again. Returns the bytes dropped."""
        with self._flush_lock:
            begin = min(self.flushed_offset, offset)
            dropped = self.truncate(offset)
            files = self.files.files_between(begin, offset)
            last = self.files.last
            if last is not None and last not in files:
                files.append(last)  # where the zeroed tail is
            for mapped in files:
                mapped.flush()
            self.flushed_offset = offset
            if self._fsync_ledger is not None:
                self._fsync_ledger.record(offset)
        return dropped

    def close(self) -> None:
        self.files.close()
        self._batch_starts.clear()
        if self._fsync_ledger is not None:
            self._fsync_ledger.close()
