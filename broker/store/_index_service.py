"""The index by message key and unique key: a run of ``IndexFile``s, newest last.

Caller: the ``MessageStore`` (``put`` under its put lock, ``query`` from any thread, ``flush``
and ``delete_expired`` from its services). Lookups return candidate physical offsets; the
store checks the key on each message (hashes collide).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE, make_dirs
from aeromq.broker.store._index_file import IndexFile, key_hash
from aeromq.broker.store._mapped_file import FILE_NAME_DIGITS, TEMP_SUFFIX

__all__ = ["IndexService"]


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
        """The newest record indexed (-1 when none)."""
        files = self.files
        return files[-1].end_physical_offset if files and files[-1].entries_used > 1 else -1

    def put(
        self, topic: str, keys: Iterable[str], physical_offset: int, store_timestamp_ms: int
    ) -> None:
        """Index each key of one message."""
        for key in keys:
            h = key_hash(topic, key)
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
        h = key_hash(topic, key)
        found: list[int] = []
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

    def flush(self) -> None:
        for index_file in self.files[-2:]:
            index_file.flush()

    def delete_expired(self, physical_min: int) -> int:
        """Delete files whose every record is before ``physical_min``, never the newest."""
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
        for index_file in self.files:
            index_file.close()
        self.files = []
