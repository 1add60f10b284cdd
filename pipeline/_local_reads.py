"""Local reads: the queue reader reads its pulls' stored batches straight from the broker's
commit log files when it runs on the broker's host (HDFS's short-circuit reads, for a queue).

A pull through the transport costs the broker a copy of each stored batch into the session's
log buffer, and the zeroing of that buffer once read (Aeron's ``cleanBufferTo``); the reader
then copies the answer out of the log. A bulk read moves every byte of a range that way: about
half of the broker's CPU in a Spark read went to that copy and that zeroing (``perf``, issue 13).

The exchange, per session (``proto/session.proto``, ``proto/messages.proto``)::

      reader (IPC session)                                  broker
        |  CONNECT local_reads=true                              |
        |------------------------------------------------------>|  an IPC session, and the
        |<------------------------------------------------------|  broker allows them:
        |  local_read_dir=/data/commitlog, local_read_file_bytes  |  local_reads_enabled
        |  PULL local_read=true                                  |
        |------------------------------------------------------>|  the same get as any pull,
        |<------------------------------------------------------|  then, instead of the bytes:
        |  FOUND, local_ranges = (commit log offset, length)...  |  where the batches are

The reader maps the commit log file that holds each range (read-only, kept for the next
answers) and reads the batches there with the consumer's one C pass
(:func:`consumer.read_pulled_batches` with ``ranges``): their CRCs, queue, topic and
lengths are checked exactly as for a pull through the transport, and no copy of the batches is
made at all (the record batch's Arrow columns are gathered from the mapping).

Why it is safe:

- The broker names only batches it has stored and found for the pull, after the same checks
  and permissions as any pull; the reader reads nothing else.
- A commit log file never shrinks while it exists: the broker deletes whole files (retention)
  and zeroes a torn tail in place (recovery). A mapping the reader holds keeps the deleted
  file's pages until it drops it, and they still hold the batches it was told about.
- The reader uses the directory only if it is the broker's: its device and inode numbers, as
  the broker sees them, come with the grant and must match the reader's (another host's or
  another mount namespace's directory of the same path does not).
- A file that is gone (retention won the race), that is not the one mapped before (another
  broker's store in the same place: the file's device and inode are checked on every answer),
  that this process may not open, or whose batches fail a check, makes :meth:`CommitLogFiles.read`
  return None: the reader asks for the same offsets again through the transport, which answers
  or fails as any pull does (``MESSAGE_WAS_REMOVING``, data loss). A directory this process
  cannot open at all (another host's path, another user's files) turns local reads off for
  that broker in this process.

Files are named by their first commit log offset, 20 decimal digits (as the broker names
them), and are ``local_read_file_bytes`` long.
"""

from __future__ import annotations

import mmap
import os
import threading
from collections import OrderedDict
from typing import Final

import numpy as np

from aeromq.client import CorruptMessageError, MessageQueue
from aeromq.consumer import MessageBatch, read_pulled_batches

__all__ = ["MAPPED_FILES_MAX", "CommitLogFiles", "commit_log_files"]

MAPPED_FILES_MAX: Final = 8
"""Mapped files kept per broker (least recently used dropped first): a read moves along one
file at a time; the pages of a dropped mapping stay in the page cache."""

_Mapping = tuple[mmap.mmap, int, int]  # the mapping, the file's device and inode


class CommitLogFiles:
    """Read-only mappings of one broker's commit log files (see module). Thread-safe."""

    def __init__(self, directory: str, file_bytes: int) -> None:
        self.directory = directory
        self.file_bytes = file_bytes
        self.usable = True
        """False once this process could not open the directory itself: no more local reads
        from it."""
        self.answers_read = 0
        """Answers read here."""
        self.fallbacks = 0
        """Answers this process could not read here (read again through the transport)."""
        self._lock = threading.Lock()
        self._mapped: OrderedDict[int, _Mapping] = OrderedDict()

    def read(
        self, ranges: bytes, queue: MessageQueue, offset: int, next_offset: int
    ) -> MessageBatch | None:
        """The records in ``[offset, next_offset)`` of the batches at ``ranges`` (a local
        answer's ``local_ranges``), or None when they cannot be read here (see module)."""
        if len(ranges) % 16:  # not (offset, length) pairs: ask the transport instead
            self.fallbacks += 1
            return None
        pairs = np.frombuffer(ranges, "<i8").reshape(-1, 2)
        bases = pairs[:, 0] - pairs[:, 0] % self.file_bytes
        batches: list[MessageBatch] = []
        for base in np.unique(bases).tolist():  # ascending, as the ranges are
            mapped = self._file(base)
            if mapped is None:
                self.fallbacks += 1
                return None
            within = pairs[bases == base].copy()
            within[:, 0] -= base
            try:
                batches.append(
                    read_pulled_batches(
                        mapped,  # type: ignore[arg-type]  # a buffer, as bytes are
                        queue,
                        queue.broker_name,
                        offset,
                        next_offset,
                        None,
                        within.tobytes(),
                    )
                )
            except CorruptMessageError:  # not the file the broker meant: ask it instead
                self.fallbacks += 1
                return None
        self.answers_read += 1
        return batches[0] if len(batches) == 1 else MessageBatch.concat(batches)

    def _file(self, base: int) -> mmap.mmap | None:
        """The mapping of the file that starts at ``base``: the one kept if the file is still
        that file, else mapped anew; None when it cannot be opened."""
        path = os.path.join(self.directory, f"{base:020d}")
        try:
            status = os.stat(path)
        except OSError:
            self._unusable_unless_dir()
            return None
        with self._lock:
            kept = self._mapped.get(base)
            if kept is not None and (kept[1], kept[2]) == (status.st_dev, status.st_ino):
                self._mapped.move_to_end(base)
                return kept[0]
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except PermissionError:  # another user's store: none of its files will open
            self.usable = False
            return None
        except OSError:
            self._unusable_unless_dir()
            return None
        try:
            opened = os.fstat(fd)
            if opened.st_size == 0:
                return None
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)
        with self._lock:
            self._mapped[base] = (mapped, opened.st_dev, opened.st_ino)
            self._mapped.move_to_end(base)
            while len(self._mapped) > MAPPED_FILES_MAX:
                self._mapped.popitem(last=False)  # unmapped once no batch holds it
        return mapped

    def _unusable_unless_dir(self) -> None:
        """A file could not be opened: if the directory itself cannot be read either, this
        process has no local view of the store (another host's path, another user's files)."""
        if not os.access(self.directory, os.R_OK | os.X_OK):
            self.usable = False

    @property
    def mapped_count(self) -> int:
        """How many files are mapped."""
        return len(self._mapped)

    def close(self) -> None:
        """Drop every mapping (each is unmapped once no batch holds it)."""
        with self._lock:
            self._mapped.clear()


_files: dict[tuple[str, int, tuple[int, int], str], CommitLogFiles] = {}
_files_lock = threading.Lock()


def commit_log_files(
    directory: str, file_bytes: int, directory_id: tuple[int, int], broker_id: str = ""
) -> CommitLogFiles | None:
    """This process's :class:`CommitLogFiles` of a broker's commit log (a session's
    ``local_read_dir``, ``local_read_file_bytes`` and ``local_read_dir_id``; its route's
    ``broker_id``: another broker's store in the same place is mapped apart), or None when local
    reads are off for it: not granted, or ``directory`` is not that directory here (another
    mount namespace, another host), or it was found unusable."""
    if not directory or file_bytes <= 0:
        return None
    key = (directory, file_bytes, directory_id, broker_id)
    with _files_lock:
        files = _files.get(key)
        if files is None:
            files = _files[key] = CommitLogFiles(directory, file_bytes)
            try:
                status = os.stat(directory)
                files.usable = (status.st_dev, status.st_ino) == directory_id
            except OSError:
                files.usable = False
    return files if files.usable else None
