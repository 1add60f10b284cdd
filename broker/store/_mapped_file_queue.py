"""An ordered run of equal-size mapped files that together hold one log (RocketMQ's
``MappedFileQueue``): the commit log, one consume queue, or the index.

Files are contiguous: file ``k`` starts at ``first.start_offset + k * file_size``. Retention
removes files only from the front; truncation only from the back. The list is replaced, not
mutated in place, on every change, so a reader holding the old list stays valid.

The last file's part still to be written has no read-ahead (``MappedFile.advise_end``, whose
module says why): from its start when the queue makes it, from the log's end when a truncation
or the owner's recovery (:meth:`MappedFileQueue.mark_end`) puts the end there; the file before
it gets the normal read-ahead back when the next one is made.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from aeromq.broker._errors import StoreError
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE, make_dirs
from aeromq.broker.store._mapped_file import (
    FILE_NAME_DIGITS,
    TEMP_SUFFIX,
    MappedFile,
    fsync_directory,
)

__all__ = ["MappedFileQueue"]


class MappedFileQueue:
    """The files of one log in ``directory``, each ``file_size`` bytes, created with
    ``file_mode`` (the directory with its ``directory_mode``)."""

    def __init__(
        self, directory: Path, file_size: int, *, file_mode: int = DEFAULT_FILE_MODE
    ) -> None:
        self.directory = directory
        self.file_size = file_size
        self.file_mode = file_mode
        self.files: list[MappedFile] = []
        self._lock = threading.Lock()  # structural changes: create, truncate, delete

    def load(self) -> None:
        """Map every file of the directory (created if missing); names must be contiguous."""
        make_dirs(self.directory, self.file_mode)
        for leftover in self.directory.glob(f"*{TEMP_SUFFIX}"):
            leftover.unlink()  # a file whose creation a crash interrupted
        names = sorted(
            p
            for p in self.directory.iterdir()
            if len(p.name) == FILE_NAME_DIGITS and p.name.isdigit() and p.is_file()
        )
        files: list[MappedFile] = []
        try:
            for path in names:
                mapped = MappedFile.open(path, self.file_size)
                files.append(mapped)
                if mapped.start_offset % self.file_size != 0:
                    raise StoreError(
                        "store file name is not a multiple of the file size",
                        path=str(path),
                        file_size=self.file_size,
                    )
                if len(files) > 1 and files[-2].end_offset != mapped.start_offset:
                    raise StoreError(
                        "store files are not contiguous",
                        path=str(path),
                        expected_start_offset=files[-2].end_offset,
                    )
        except BaseException:
            for mapped in files:
                mapped.close()
            raise
        self.files = files

    @property
    def first(self) -> MappedFile | None:
        files = self.files
        return files[0] if files else None

    @property
    def last(self) -> MappedFile | None:
        files = self.files
        return files[-1] if files else None

    @property
    def min_offset(self) -> int:
        """The first byte held (-1 when there are no files)."""
        files = self.files
        return files[0].start_offset if files else -1

    def find(self, offset: int) -> MappedFile | None:
        """The file holding byte ``offset``, or None when no file does."""
        files = self.files
        if not files:
            return None
        index = (offset - files[0].start_offset) // self.file_size
        if 0 <= index < len(files):
            return files[index]
        return None

    def files_between(self, begin: int, end: int) -> list[MappedFile]:
        """The files holding any byte of ``[begin, end)``."""
        files = self.files
        if not files or end <= begin:
            return []
        first = files[0].start_offset
        lo = max(0, (begin - first) // self.file_size)
        hi = min(len(files), (end - 1 - first) // self.file_size + 1)
        return files[lo:hi]

    def create(self, start_offset: int) -> MappedFile:
        """Map a new file at ``start_offset``, which must follow the last file (or start the
        queue, at a multiple of the file size)."""
        with self._lock:
            last = self.last
            expected = last.end_offset if last is not None else start_offset
            if start_offset != expected or start_offset % self.file_size != 0:
                raise StoreError(
                    "new store file would not be contiguous",
                    directory=str(self.directory),
                    start_offset=start_offset,
                    expected=expected,
                )
            make_dirs(self.directory, self.file_mode)
            mapped = MappedFile.create(
                self.directory, start_offset, self.file_size, mode=self.file_mode
            )
            mapped.advise_end(0)
            if last is not None:
                last.advise_written()
            self.files = [*self.files, mapped]
            return mapped

    def mark_end(self, offset: int) -> None:
        """The log ends at ``offset`` (its owner's recovery found it there): the file holding
        it is advised as written up to there (see module)."""
        mapped = self.find(offset)
        if mapped is not None:
            mapped.advise_end(offset - mapped.start_offset)

    def truncate(self, offset: int) -> int:
        """Drop every byte at or after ``offset``: later files are deleted, the file holding
        ``offset`` has its tail zeroed. Returns the bytes zeroed plus the deleted files'."""
        with self._lock:
            files = self.files
            keep = [f for f in files if f.start_offset < offset]
            self.files = keep
            dropped = 0
            for mapped in files[len(keep) :]:
                mapped.delete()
                dropped += mapped.size
            if keep and keep[-1].end_offset > offset:
                dropped += keep[-1].zero_tail(offset - keep[-1].start_offset)
                keep[-1].advise_end(offset - keep[-1].start_offset)
            if len(keep) != len(files):
                fsync_directory(self.directory)
            return dropped

    def delete_front(self, should_delete: Callable[[MappedFile], bool], max_files: int) -> int:
        """Delete files from the front while ``should_delete`` says so, never the last file.
        Returns how many were deleted."""
        with self._lock:
            files = self.files
            count = 0
            while count < min(max_files, len(files) - 1) and should_delete(files[count]):
                count += 1
            if count:
                self.files = files[count:]
                for mapped in files[:count]:
                    mapped.delete()
                fsync_directory(self.directory)
            return count

    def total_bytes(self) -> int:
        return len(self.files) * self.file_size

    def close(self) -> None:
        with self._lock:
            files, self.files = self.files, []
        for mapped in files:
            mapped.close()

    def delete_all(self) -> None:
        with self._lock:
            files, self.files = self.files, []
        for mapped in files:
            mapped.delete()
