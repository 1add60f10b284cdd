"""One fixed-size, memory-mapped store file (a commit log, consume queue or index segment).

The file is created at its full length, zero-filled and allocated for real
(``posix_fallocate``): a full file system is a :class:`~broker.NoSpaceError` when a segment is
created, never a SIGBUS when a page of the map is first written. It is named by the offset of
its first byte in the whole log, 20 digits, as RocketMQ names them, and created with the
store's file mode (``0600`` by default). Owners keep their own write
positions; this class maps, flushes (``os.fdatasync``, which releases the GIL, unlike
``mmap.flush``) and deletes.

Read-ahead: a store through the map into a page the page cache does not hold yet faults, and
the kernel reads the file around that page in (``filemap_fault``'s read-ahead, as big as the
disk's ``read_ahead_kb``: 8 MiB on this VM). Over ``posix_fallocate``'s unwritten blocks that
read is no I/O but pages allocated and zero-filled, 8 MiB of them in the one fault: the put that
took it, on the broker's session agent, ran 1-2 ms and up to 21 ms once every 8 MiB appended,
each time longer as the log grew (``docs/latency.md``, "Read-ahead in the write path"). The
part of a file still to be written is therefore advised ``MADV_RANDOM``
(:meth:`MappedFile.advise_end`): each fresh page faults alone (about 3 us a page, 0.2-0.3 us a
100-byte message) and nothing is read ahead. The advice starts at a new file's first byte (what
is written into it later is read from the page cache, where the write left it) or at the end
that recovery or a truncation found in a file written before (its written part keeps the normal
read-ahead, for recovery's and a lagging consumer's reads); a file its queue moved on from gets
the normal read-ahead back (:meth:`MappedFile.advise_written`). The cost: a page of the file
being written that memory pressure evicted is read back alone, not with its neighbours.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from aeromq.broker._errors import NoSpaceError, StoreIOError
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["TEMP_SUFFIX", "MappedFile", "file_name_for", "fsync_directory"]

FILE_NAME_DIGITS = 20
TEMP_SUFFIX = ".creating"
_SCAN_CHUNK_BYTES = 16 << 20
_MAX_WRITE_CALLS = 64  # a pwritev that writes less goes on, this many times at most


def file_name_for(start_offset: int) -> str:
    """The 20-digit name of the file whose first byte is at ``start_offset``."""
    return f"{start_offset:0{FILE_NAME_DIGITS}d}"


def fsync_directory(directory: Path) -> None:
    """Make a directory's entries (created, renamed or removed files) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _allocate(fd: int, path: Path, size: int) -> None:
    """Give the file ``size`` bytes of real blocks (its length too); ENOSPC or EDQUOT is a
    ``NoSpaceError`` naming the bytes wanted and those free."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        stat = os.fstatvfs(fd)
        raise NoSpaceError(
            "no room on the file system for a store file",
            path=str(path),
            needed_bytes=size,
            free_bytes=stat.f_bavail * stat.f_frsize,
        ) from exc


class MappedFile:
    """A mapped file of ``size`` bytes whose first byte is at ``start_offset`` of its log.

    ``mm`` is the map and ``view`` a memoryview of it. ``flushed_position`` (relative) is how
    far ``flush`` has made the bytes durable.
    """

    __slots__ = ("_fd", "flushed_position", "mm", "path", "size", "start_offset", "view")

    def __init__(
        self,
        path: Path,
        start_offset: int,
        size: int,
        *,
        create: bool,
        mode: int = DEFAULT_FILE_MODE,
    ) -> None:
        self.path = path
        self.start_offset = start_offset
        self.size = size
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            self._fd = os.open(path, flags, mode)
        except OSError as exc:
            raise StoreIOError("cannot open store file", path=str(path), reason=str(exc)) from exc
        try:
            if create:
                os.fchmod(self._fd, mode)  # exactly ``mode``, whatever the umask
                _allocate(self._fd, path, size)
            else:
                actual = os.fstat(self._fd).st_size
                if actual != size:
                    raise StoreIOError(
                        "store file has the wrong length",
                        path=str(path),
                        length=actual,
                        expected=size,
                    )
            self.mm = mmap.mmap(self._fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException as exc:
            os.close(self._fd)
            if create:  # leave no half-made file (nor its blocks) behind
                with contextlib.suppress(OSError):
                    path.unlink()
            if isinstance(exc, OSError) and not isinstance(exc, StoreIOError):
                raise StoreIOError(
                    "cannot map store file", path=str(path), reason=str(exc)
                ) from exc
            raise
        self.view = memoryview(self.mm)
        self.flushed_position = 0

    @classmethod
    def create(
        cls,
        directory: Path,
        start_offset: int,
        size: int,
        initialize: Callable[[mmap.mmap], None] | None = None,
        *,
        mode: int = DEFAULT_FILE_MODE,
    ) -> MappedFile:
        """A new zero-filled file. It is sized (and ``initialize``d) under a temporary name
        and renamed into place, so a crash never leaves a short or half-made file under a
        segment name; the directory entry is made durable."""
        name = file_name_for(start_offset)
        temp = directory / f"{name}{TEMP_SUFFIX}"
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        mapped = cls(temp, start_offset, size, create=True, mode=mode)
        try:
            if initialize is not None:
                initialize(mapped.mm)
                mapped.flush()
            os.replace(temp, directory / name)
        except OSError as exc:
            mapped.delete()
            raise StoreIOError("cannot create store file", path=str(temp)) from exc
        mapped.path = directory / name
        fsync_directory(directory)
        return mapped

    @classmethod
    def open(cls, path: Path, size: int) -> MappedFile:
        """An existing file named by its start offset."""
        return cls(path, int(path.name), size, create=False)

    @property
    def end_offset(self) -> int:
        return self.start_offset + self.size

    def write_at(self, position: int, pieces: Sequence[Buffer]) -> None:
        """Write ``pieces`` back to back from ``position`` (relative) with ``pwritev``: into the
        page cache that the map shows too, without the page fault that a store through the
        map takes on each fresh page (a third of an append's cost). Raises ``StoreIOError``."""
        views = [
            piece
            if type(piece) is memoryview and piece.format == "B" and piece.ndim == 1
            else memoryview(piece).cast("B")
            for piece in pieces
        ]
        remaining = sum(map(len, views))
        at = position
        if at < 0 or at + remaining > self.size:
            raise StoreIOError(
                "write outside the store file",
                path=str(self.path),
                position=position,
                length=remaining,
                size=self.size,
            )
        for _ in range(_MAX_WRITE_CALLS):
            if not remaining:
                return
            try:
                written = os.pwritev(self._fd, views, at)
            except OSError as exc:
                raise StoreIOError(
                    "write failed", path=str(self.path), position=at, reason=str(exc)
                ) from exc
            at += written
            remaining -= written
            while views and written >= len(views[0]):  # a short write: go on after it
                written -= len(views[0])
                views.pop(0)
            if views and written:
                views[0] = views[0][written:]
        raise StoreIOError(
            "write made no progress", path=str(self.path), position=at, remaining=remaining
        )

    def advise_end(self, position: int) -> None:
        """The file is written up to ``position`` (relative): the bytes from the page holding
        it on are advised ``MADV_RANDOM``, those before it ``MADV_NORMAL`` (see module). A hint:
        a kernel that refuses it leaves the file as it was."""
        start = min(self.size, (position // mmap.PAGESIZE) * mmap.PAGESIZE)
        with contextlib.suppress(OSError, ValueError):  # (a hint; ValueError: closed)
            if start:
                self.mm.madvise(mmap.MADV_NORMAL, 0, start)
            if start < self.size:
                self.mm.madvise(mmap.MADV_RANDOM, start, self.size - start)

    def advise_written(self) -> None:
        """The file is written to its end: all of it back to the normal read-ahead."""
        with contextlib.suppress(OSError, ValueError):  # (a hint; ValueError: closed)
            self.mm.madvise(mmap.MADV_NORMAL)

    def flush(self) -> None:
        """Make every written byte of the file durable (``fdatasync``; releases the GIL)."""
        try:
            os.fdatasync(self._fd)
        except OSError as exc:
            raise StoreIOError("flush failed", path=str(self.path), reason=str(exc)) from exc

    def zero_tail(self, position: int) -> int:
        """Zero every byte from ``position`` (relative) up to the last non-zero one, so a
        truncated tail reads as never written. Only the file's data extents are scanned
        (``SEEK_DATA``/``SEEK_HOLE``): never-touched sparse space is not read. Returns how
        many bytes were zeroed."""
        data = np.frombuffer(self.mm, dtype=np.uint8)
        last = -1
        for begin, end in self._data_extents(position):
            while end > begin:
                chunk_begin = max(begin, end - _SCAN_CHUNK_BYTES)
                chunk = data[chunk_begin:end]
                if chunk.any():
                    last = max(last, chunk_begin + int(np.flatnonzero(chunk)[-1]))
                    break
                end = chunk_begin
        if last >= position:
            data[position : last + 1] = 0
        del data
        return max(0, last + 1 - position)

    def _data_extents(self, position: int) -> list[tuple[int, int]]:
        """The ``[begin, end)`` ranges from ``position`` that hold data (not holes)."""
        extents: list[tuple[int, int]] = []
        at = position
        try:
            while at < self.size:
                try:
                    begin = os.lseek(self._fd, at, os.SEEK_DATA)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:  # only a hole from here on
                        break
                    raise
                if begin >= self.size:
                    break
                end = min(self.size, os.lseek(self._fd, begin, os.SEEK_HOLE))
                extents.append((max(begin, position), end))
                at = end
        except OSError:  # no SEEK_DATA here: scan everything
            return [(position, self.size)]
        return extents

    def close(self) -> None:
        """Unmap and close. A reader still holding a view keeps the pages mapped until it lets
        go (the map is then released by its last reference)."""
        if self._fd < 0:
            return
        self.view.release()
        # exported to a live reader: then unmapped when that reader drops it
        with contextlib.suppress(BufferError):
            self.mm.close()
        os.close(self._fd)
        self._fd = -1

    def delete(self) -> None:
        """Close and remove the file."""
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreIOError("cannot delete store file", path=str(self.path)) from exc

    def __repr__(self) -> str:
        return f"MappedFile(path={str(self.path)!r}, start_offset={self.start_offset})"
