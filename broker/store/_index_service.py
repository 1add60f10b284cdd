"""The index by message key and unique key: a run of ``IndexFile``s, newest last, and the
entries not yet written to them.

A put queues its entry (a deque append, no file touched) and :meth:`IndexService.drain` writes
the queued entries to the files in order: the store's services thread every 20 ms, what came
since (a second's worth at once, at the checkpoint, held the interpreter long enough to stall
the session agent tens of ms: ``broker/store/_store_services.py``), each checkpoint (every
``flush_consume_queue_interval_ms``, before it records how far the derived data is written),
:meth:`IndexService.flush` (every ``flush_index_interval_ms``: its :class:`IndexMark` says what
it made durable), :meth:`IndexService.close`, retention; and past :data:`MAX_PENDING` queued (over 65,536 keyed
messages a checkpoint interval), each put writes the two oldest, so the queue stays bounded at
any rate without a long write on any one put. A drain writes the entries that fit in the
newest file in one native call (``IndexFile.put_entries``, ``_index_put.c``), which lets the
interpreter go while it writes the slots and takes their page faults (measured: 100 entries
into a 20 MB slot table in 89-96 us, 2.3-2.5 us of CPU an entry, mostly those faults, the
interpreter held only while the keys are hashed; key by key in Python 300-340 us, 4.4-4.9 us
an entry, all of it held), and gives the GIL up every :data:`DRAIN_CHUNK` entries (more when it
found a backlog: :data:`DRAIN_CHUNK_MAX`), so the
session agent, whose sends it no longer slows, is not kept waiting for the interpreter's switch
interval (5 ms) behind it either. A put wrote its
entry at once before: a random 4-byte slot in a 20 MB table, whose page the checkpoint's
flush had write-protected again, so nearly every send took a page fault there (6-22 us of the
store's append, ``docs/history/latency-log.md``). A query reads the queued entries as well as
the files: a message is found by key from the moment its put returned. The queue is part of
the derived data the checkpoint covers: recovery re-indexes from the checkpoint whatever a
killed process lost, and after any stop that was not clean first takes the files back to the
last flush's mark (:meth:`IndexService.rewind`), since a crash of the machine leaves the pages
written after it in any state.

Caller: the ``MessageStore`` (``put`` under its put lock, ``query`` from any thread, ``flush``
and ``delete_expired`` from its services). Lookups return candidate physical offsets; the
store checks the key on each message (hashes collide).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from aeromq.broker._errors import StoreIOError
from aeromq.broker.store._checkpoint import IndexMark
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE, make_dirs
from aeromq.broker.store._index_file import IndexFile, item_hashes, key_hash
from aeromq.broker.store._mapped_file import FILE_NAME_DIGITS, TEMP_SUFFIX

__all__ = ["DRAIN_CHUNK", "DRAIN_CHUNK_MAX", "MAX_PENDING", "IndexService", "Keys"]

_log = logging.getLogger(__name__)

MAX_PENDING: Final = 1 << 16
"""Past this many entries queued (about 100 bytes each: 6.5 MB), each put writes the two
oldest: the cost the put paid before, spread, at rates above 65,536 keyed messages between two
checkpoints (a second by default)."""
DRAIN_CHUNK: Final = 64
"""A drain writes this many entries (about 0.06 ms natively, 0.2 ms key by key), then gives the
GIL up (``time.sleep(0)``); more when it found a backlog (:data:`DRAIN_CHUNK_MAX`)."""
DRAIN_CHUNK_MAX: Final = 4096
"""A drain that found ``n`` entries queued writes ``n / 8`` at a time, from :data:`DRAIN_CHUNK`
up to this many: each chunk costs the drain a wait for the interpreter (up to its switch
interval, 5 ms, while a thread runs Python: the session agent under load), so with 64 a chunk a
drain of a full queue (:data:`MAX_PENDING`) took 1,024 such waits, seconds, and the store's
other duties (the commit log's flush under ASYNC) waited behind it. A drain thus takes at most
about eight waits; the interpreter is held while a chunk's keys are hashed (the slots are
written without it)."""
_WRITTEN_A_PUT: Final = 2

Keys = Sequence[str] | bytes
"""A message's keys: their texts, or its one unique key as the UTF-8 bytes it was stored in
(``_put_one.c`` reads it so; decoded when written)."""


class IndexService:
    """Index files in ``directory`` with ``slot_count`` slots and ``entry_count`` entries."""

    def __init__(
        self,
        directory: Path,
        slot_count: int,
        entry_count: int,
        *,
        file_mode: int = DEFAULT_FILE_MODE,
    ) -> None:
        self.directory = directory
        self.file_mode = file_mode
        self.slot_count = slot_count
        self.entry_count = entry_count
        self.files: list[IndexFile] = []
        self._lock = threading.Lock()  # guards the list against retention
        self.pending: deque[tuple[str, Keys, int, int]] = deque()
        """Entries put and not yet written: (topic, keys, physical offset, store time)."""
        self._drain_lock = threading.Lock()  # one writer of the files at a time
        self.errors = 0
        """Entries that could not be written (a file that could not be made)."""
        self.on_error: Callable[[StoreIOError], None] | None = None
        """Told of each such failure (the store: a full disk stops sends until there is room)."""

    def load(self) -> None:
        make_dirs(self.directory, self.file_mode)
        for leftover in self.directory.glob(f"*{TEMP_SUFFIX}"):
            leftover.unlink()  # a file whose creation a crash interrupted
        paths = sorted(
            p
            for p in self.directory.iterdir()
            if len(p.name) == FILE_NAME_DIGITS and p.name.isdigit() and p.is_file()
        )
        self.files = [IndexFile.open(p, self.slot_count, self.entry_count) for p in paths]

    @property
    def end_physical_offset(self) -> int:
        """The newest record indexed, queued entries included (-1 when none)."""
        files = self.files
        end = files[-1].end_physical_offset if files and files[-1].entries_used > 1 else -1
        try:
            return max(end, self.pending[-1][2])  # put in the log's order: the last is newest
        except IndexError:  # nothing queued (or drained meanwhile, into the files read above)
            return end

    def put(self, topic: str, keys: Keys, physical_offset: int, store_timestamp_ms: int) -> None:
        """Index each key of one message: queued, written by the next :meth:`drain`."""
        pending = self.pending
        pending.append((topic, keys, physical_offset, store_timestamp_ms))
        if len(pending) > MAX_PENDING and self._drain_lock.acquire(blocking=False):
            try:  # (a drain under way meanwhile writes them all)
                self._write_oldest(_WRITTEN_A_PUT)
            finally:
                self._drain_lock.release()

    def drain(self) -> int:
        """Write the queued entries to the files, oldest first; returns how many. An entry
        whose file cannot be made is counted in ``errors`` and dropped (the index is a
        convenience: the log and its queues go on). Each entry leaves the queue once written,
        so a concurrent query finds it in one place or the other."""
        written = 0
        count = len(self.pending)  # not those put meanwhile: a drain ends
        chunk = min(max(count >> 3, DRAIN_CHUNK), DRAIN_CHUNK_MAX)
        while written < count:
            with self._drain_lock:
                done = self._write_oldest(min(chunk, count - written))
            if not done:
                break
            written += done
            if written < count:
                time.sleep(0)  # the GIL to whoever waits for it between chunks (see module)
        return written

    def _write_oldest(self, count: int) -> int:
        """Write up to ``count`` of the oldest queued entries (see :meth:`drain`), under the
        drain lock; returns how many. Those that fit in the newest file go in one call
        (``IndexFile.put_entries``); the first that does not (or any, with no file yet) goes
        key by key, which makes the next file."""
        pending = self.pending
        written = 0
        while written < count and pending:
            files = self.files
            if files:
                batch = list(itertools.islice(pending, count - written))
                done = files[-1].put_entries(batch)
                for _ in range(done):
                    pending.popleft()  # (written: a query finds it in the file now)
                written += done
                if done == len(batch):
                    continue
            topic, keys, physical_offset, store_timestamp_ms = pending[0]
            try:
                self._write(topic, keys, physical_offset, store_timestamp_ms)
            except StoreIOError as exc:  # (NoSpaceError too)
                self.errors += 1
                _log.error("cannot index: physical_offset=%d: %s", physical_offset, exc)
                if self.on_error is not None:
                    self.on_error(exc)
            pending.popleft()
            written += 1
        return written

    def _write(self, topic: str, keys: Keys, physical_offset: int, store_timestamp_ms: int) -> None:
        for h in item_hashes(topic, keys):
            last = self.files[-1] if self.files else None
            if last is None or not last.put(h, physical_offset, store_timestamp_ms):
                last = IndexFile.create(
                    self.directory,
                    physical_offset,
                    store_timestamp_ms,
                    self.slot_count,
                    self.entry_count,
                    file_mode=self.file_mode,
                )
                with self._lock:
                    self.files = [*self.files, last]
                last.put(h, physical_offset, store_timestamp_ms)

    def query(self, topic: str, key: str, max_count: int, begin_ms: int, end_ms: int) -> list[int]:
        """Candidate physical offsets for ``key``, newest first, without duplicates."""
        found = _queued(list(self.pending), topic, key, begin_ms, end_ms)  # before the files
        h = key_hash(topic, key)
        for index_file in reversed(self.files):
            if index_file.end_timestamp_ms < begin_ms - 999:
                break
            if index_file.begin_timestamp_ms > end_ms:
                continue
            try:
                index_file.lookup(h, begin_ms, end_ms, max_count * 4, found)
            except ValueError:  # deleted by retention meanwhile
                continue
        return list(dict.fromkeys(found))

    def flush(self, dispatched_offset: int) -> IndexMark:
        """Write the queued entries, then make the files' new entries durable; returns the mark
        of what is (``dispatched_offset``: the store's, read before this call, so every record
        before it was queued and is written now)."""
        self.drain()
        files = self.files
        for index_file in files:
            index_file.flush()  # (nothing to do for a file unchanged since its last flush)
        if not files:
            return IndexMark(-1, 1, -1, dispatched_offset)
        last = files[-1]
        return IndexMark(
            last.begin_physical_offset,
            last.entries_used,
            last.end_physical_offset,
            dispatched_offset,
        )

    def rewind(self, mark: IndexMark) -> bool:
        """Take the index back to ``mark`` at a start after a stop that was not clean: the
        files made after it deleted, its newest file rewound (``IndexFile.rewind``). Returns
        False, changing nothing, when that file is not there (the directory was emptied: the
        index is rebuilt from where recovery starts anyway)."""
        files = self.files
        if mark.file_offset >= 0 and not any(
            f.begin_physical_offset == mark.file_offset for f in files
        ):
            return False
        kept = [f for f in files if f.begin_physical_offset <= mark.file_offset]
        with self._lock:
            self.files = kept
        for index_file in files[len(kept) :]:
            index_file.delete()
        if kept:
            kept[-1].rewind(mark.entries_used, mark.end_physical_offset)
        return True

    def delete_expired(self, physical_min: int) -> int:
        """Delete files whose every record is before ``physical_min``, never the newest."""
        self.drain()  # the queued entries first: they may fill and roll the files
        with self._lock:
            files = self.files
            count = 0
            while count < len(files) - 1 and files[count].end_physical_offset < physical_min:
                count += 1
            self.files = files[count:]
        for index_file in files[:count]:
            index_file.delete()
        return count

    def close(self) -> None:
        self.drain()
        for index_file in self.files:
            index_file.close()
        self.files = []


def _queued(
    pending: list[tuple[str, Keys, int, int]], topic: str, key: str, begin_ms: int, end_ms: int
) -> list[int]:
    """The physical offsets of the queued entries of ``topic`` with ``key`` stored within
    ``[begin_ms, end_ms]``, newest first."""
    raw = key.encode()
    return [
        physical_offset
        for entry_topic, keys, physical_offset, stamp in reversed(pending)
        if entry_topic == topic
        and begin_ms <= stamp <= end_ms
        and (keys == raw if isinstance(keys, bytes) else key in keys)
    ]
