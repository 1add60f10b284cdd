"""One index file: a hash table on disk from ``topic#key`` to commit log offsets (RocketMQ's
``IndexFile``). Integers little-endian. A file is a header, ``slot_count`` hash slots and
``entry_count`` entries; entry 0 is never used, so 0 means "none".

Header::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                   Begin Store Timestamp (ms)                  |   0
    |                                                               |
    +---------------------------------------------------------------+
    |                    End Store Timestamp (ms)                   |   8
    |                                                               |
    +---------------------------------------------------------------+
    |                    Begin Physical Offset                      |  16
    |                                                               |
    +---------------------------------------------------------------+
    |                     End Physical Offset                       |  24
    |                                                               |
    +---------------------------------------------------------------+
    |                          Slot Count                           |  32
    +---------------------------------------------------------------+
    |                 Entries Used (next entry number)              |  36
    +---------------------------------------------------------------+

Slot (4 bytes each, from byte 40): the number of the newest entry whose key hashes there.

Entry (20 bytes each, after the slots)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                           Key Hash                            |   0
    +---------------------------------------------------------------+
    |                       Physical Offset                         |   4
    |                                                               |
    +---------------------------------------------------------------+
    |          Time Difference (s, from Begin Store Timestamp)      |  12
    +---------------------------------------------------------------+
    |               Previous Entry Number (same slot)               |  16
    +---------------------------------------------------------------+

A put writes the entry, then the header, then the slot: a process that dies in between leaves
at worst an unreachable entry, never a slot pointing at an unwritten one. Hash collisions are
expected: readers check the key on the message itself.

:meth:`IndexFile.put_entries` writes many queued messages' keys in one native call
(``_index_put.c``, the interpreter let go while it writes), the same bytes as :meth:`put` key
by key, which is its reference and its fallback when the module is not built.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aeromq.broker._errors import StoreError
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE, make_dirs
from aeromq.broker.store._mapped_file import MappedFile, file_name_for, fsync_directory

try:
    from aeromq.broker.store import _index_put as _native
except ImportError:  # not built: key by key in Python
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = ["ENTRY_LENGTH", "HEADER_LENGTH", "SLOT_LENGTH", "IndexFile", "IndexItem", "key_hash"]

IndexItem = tuple[str, Sequence[str] | bytes, int, int]
"""A message's keys to index: (topic, keys, physical offset, store timestamp ms); ``keys`` its
key texts, or its one unique key as the UTF-8 bytes it was stored in."""

BEGIN_TIMESTAMP_OFFSET = 0
END_TIMESTAMP_OFFSET = 8
BEGIN_PHYSICAL_OFFSET_OFFSET = 16
END_PHYSICAL_OFFSET_OFFSET = 24
SLOT_COUNT_OFFSET = 32
ENTRIES_USED_OFFSET = 36
HEADER_LENGTH = 40
SLOT_LENGTH = 4
ENTRY_KEY_HASH_OFFSET = 0
ENTRY_PHYSICAL_OFFSET_OFFSET = 4
ENTRY_TIME_DIFF_OFFSET = 12
ENTRY_PREVIOUS_OFFSET = 16
ENTRY_LENGTH = 20

_HEADER = struct.Struct("<qqqqii")
assert _HEADER.size == HEADER_LENGTH
_ENTRY = struct.Struct("<iqii")
assert _ENTRY.size == ENTRY_LENGTH
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_ENTRY_DTYPE = np.dtype(
    [("hash", "<i4"), ("offset", "<i8"), ("time_diff", "<i4"), ("previous", "<i4")]
)
assert _ENTRY_DTYPE.itemsize == ENTRY_LENGTH


def key_hash(topic: str, key: str) -> int:
    """The non-negative 31-bit hash of ``topic#key``."""
    return zlib.crc32(f"{topic}#{key}".encode()) & 0x7FFFFFFF


def item_hashes(topic: str, keys: Sequence[str] | bytes) -> list[int]:
    """The hashes of a message's keys (``key_hash``; of a unique key's UTF-8 bytes as they
    are)."""
    if isinstance(keys, bytes):
        return [zlib.crc32(b"%s#%s" % (topic.encode(), keys)) & 0x7FFFFFFF]
    return [key_hash(topic, key) for key in keys]


def index_file_length(slot_count: int, entry_count: int) -> int:
    return HEADER_LENGTH + slot_count * SLOT_LENGTH + entry_count * ENTRY_LENGTH


class IndexFile:
    """An index file named by the physical offset of its first indexed record."""

    def __init__(self, mapped: MappedFile, slot_count: int, entry_count: int) -> None:
        self.mapped = mapped
        self.slot_count = slot_count
        self.entry_count = entry_count
        self._entries_at = HEADER_LENGTH + slot_count * SLOT_LENGTH
        begin_ms, end_ms, begin_offset, end_offset, slots, used = _HEADER.unpack_from(mapped.mm, 0)
        if slots != slot_count or not 1 <= used <= entry_count:
            mapped.close()
            raise StoreError(
                "index file header does not match the config",
                path=str(mapped.path),
                slot_count=slots,
                entries_used=used,
                expected_slot_count=slot_count,
            )
        self.begin_timestamp_ms: int = begin_ms
        self.end_timestamp_ms: int = end_ms
        self.begin_physical_offset: int = begin_offset
        self.end_physical_offset: int = end_offset
        self.entries_used: int = used
        self._flushed_used = self.entries_used

    @classmethod
    def create(
        cls,
        directory: Path,
        begin_physical_offset: int,
        begin_timestamp_ms: int,
        slot_count: int,
        entry_count: int,
        *,
        file_mode: int = DEFAULT_FILE_MODE,
    ) -> IndexFile:
        make_dirs(directory, file_mode)
        size = index_file_length(slot_count, entry_count)

        def write_header(mm: mmap.mmap) -> None:
            _HEADER.pack_into(
                mm,
                0,
                begin_timestamp_ms,
                begin_timestamp_ms,
                begin_physical_offset,
                begin_physical_offset,
                slot_count,
                1,
            )

        mapped = MappedFile.create(
            directory, begin_physical_offset, size, write_header, mode=file_mode
        )
        return cls(mapped, slot_count, entry_count)

    @classmethod
    def open(cls, path: Path, slot_count: int, entry_count: int) -> IndexFile:
        size = index_file_length(slot_count, entry_count)
        return cls(MappedFile.open(path, size), slot_count, entry_count)

    @property
    def is_full(self) -> bool:
        return self.entries_used >= self.entry_count

    def put(self, hash_value: int, physical_offset: int, store_timestamp_ms: int) -> bool:
        """Add one key occurrence; False when the file is full."""
        used = self.entries_used
        if used >= self.entry_count:
            return False
        mm = self.mapped.mm
        slot_at = HEADER_LENGTH + (hash_value % self.slot_count) * SLOT_LENGTH
        previous = _I32.unpack_from(mm, slot_at)[0]
        if not 0 < previous < used:
            previous = 0
        diff_s = max(0, (store_timestamp_ms - self.begin_timestamp_ms) // 1000)
        _ENTRY.pack_into(
            mm,
            self._entries_at + used * ENTRY_LENGTH,
            hash_value,
            physical_offset,
            min(diff_s, 0x7FFFFFFF),
            previous,
        )
        end_timestamp = max(self.end_timestamp_ms, store_timestamp_ms)
        end_physical = max(self.end_physical_offset, physical_offset)
        _I64.pack_into(mm, END_TIMESTAMP_OFFSET, end_timestamp)
        _I64.pack_into(mm, END_PHYSICAL_OFFSET_OFFSET, end_physical)
        _I32.pack_into(mm, ENTRIES_USED_OFFSET, used + 1)
        _I32.pack_into(mm, slot_at, used)
        self.entries_used = used + 1
        self.end_timestamp_ms = end_timestamp
        self.end_physical_offset = end_physical
        return True

    def put_entries(self, items: Sequence[IndexItem], *, native: bool = True) -> int:
        """Index the keys of ``items`` in order; how many items were written whole. It stops
        before the first item whose keys do not all fit in the free entries (the caller puts
        that one key by key, rolling to a new file). In one native call when built (see the
        module doc); ``native`` False: key by key, the reference."""
        if native and _native is not None:
            written = _native.put_entries(self.mapped.mm, self.slot_count, self.entry_count, items)
            _, end_ms, _, end_offset, _, used = _HEADER.unpack_from(self.mapped.mm, 0)
            self.end_timestamp_ms = end_ms
            self.end_physical_offset = end_offset
            self.entries_used = used
            return written
        free = self.entry_count - self.entries_used
        written = 0
        for topic, keys, physical_offset, store_timestamp_ms in items:
            hashes = item_hashes(topic, keys)
            if len(hashes) > free:
                break
            for hash_value in hashes:
                self.put(hash_value, physical_offset, store_timestamp_ms)
            free -= len(hashes)
            written += 1
        return written

    def lookup(
        self, hash_value: int, begin_ms: int, end_ms: int, limit: int, out: list[int]
    ) -> None:
        """Append to ``out`` the physical offsets of entries with this hash stored within
        ``[begin_ms, end_ms]``, newest first, until ``out`` holds ``limit``."""
        mm = self.mapped.mm
        used = self.entries_used
        number = _I32.unpack_from(mm, HEADER_LENGTH + (hash_value % self.slot_count) * 4)[0]
        steps = 0
        while 0 < number < used and len(out) < limit and steps < used:
            steps += 1
            found_hash, offset, diff_s, previous = _ENTRY.unpack_from(
                mm, self._entries_at + number * ENTRY_LENGTH
            )
            stamp = self.begin_timestamp_ms + diff_s * 1000
            if found_hash == hash_value and begin_ms - 999 <= stamp <= end_ms:
                out.append(offset)
            if previous >= number:  # chains only go back; anything else is damage
                break
            number = previous

    def rewind(self, entries_used: int, end_physical_offset: int) -> None:
        """Take the file back to its first ``entries_used`` entries, its newest record the one
        at ``end_physical_offset``: what it held at its last flush (``IndexService.rewind``).
        Those entries reached the disk whole; of what came after, after a crash of the machine,
        any page (the header, a slot, an entry) may or may not have. So the header is written
        again and every slot rebuilt from the entries kept: the newest of them whose key hashes
        there (the chain's head a put would have left), 0 for none. The entries after them are
        left as they are, unreachable: the next puts write over them."""
        if not 1 <= entries_used <= self.entry_count:
            raise StoreError(
                "cannot rewind an index file past its entries",
                path=str(self.mapped.path),
                entries_used=entries_used,
                entry_count=self.entry_count,
            )
        mm = self.mapped.mm
        entries = np.frombuffer(mm, _ENTRY_DTYPE, entries_used, self._entries_at)
        slots = np.frombuffer(mm, np.int32, self.slot_count, HEADER_LENGTH)
        try:
            newest_first = (entries["hash"][:0:-1].astype(np.int64)) % self.slot_count
            buckets, last_seen = np.unique(newest_first, return_index=True)
            slots[:] = 0
            slots[buckets] = entries_used - 1 - last_seen  # entry numbers, newest per slot
        finally:
            del entries, slots  # (the map cannot close while an array holds it)
        _I64.pack_into(mm, END_PHYSICAL_OFFSET_OFFSET, end_physical_offset)
        _I32.pack_into(mm, ENTRIES_USED_OFFSET, entries_used)
        self.entries_used = entries_used
        self.end_physical_offset = end_physical_offset
        self._flushed_used = -1  # rewritten: the next flush makes it durable

    def flush(self) -> None:
        if self.entries_used != self._flushed_used:
            self.mapped.flush()
            self._flushed_used = self.entries_used

    def close(self) -> None:
        self.mapped.close()

    def delete(self) -> None:
        self.mapped.delete()
        fsync_directory(self.mapped.path.parent)

    @staticmethod
    def name_for(begin_physical_offset: int) -> str:
        return file_name_for(begin_physical_offset)
