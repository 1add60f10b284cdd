"""An exclusive lock on a store's data directory, held while the store is open.

``flock`` on ``<data dir>/lock``: a second store on the same directory, in this process or
another, fails fast with ``StoreLockedError``; the kernel drops the lock when the holder
dies, so a crashed broker never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from aeromq.broker._errors import StoreLockedError
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE, make_dirs

__all__ = ["DirectoryLock"]


_log = logging.getLogger(__name__)


class DirectoryLock:
    """The lock file at ``path``."""

    def __init__(self, path: Path, *, file_mode: int = DEFAULT_FILE_MODE) -> None:
        self.path = path
        self.file_mode = file_mode
        self._fd = -1

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def acquire(self) -> None:
        make_dirs(self.path.parent, self.file_mode)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, self.file_mode)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise StoreLockedError(
                "data directory is in use by another store", path=str(self.path)
            ) from exc
        pid_line = f"{os.getpid()}\n".encode()
        try:  # over the old content first: a full disk has no block for a truncated file
            os.pwrite(fd, pid_line, 0)
            os.ftruncate(fd, len(pid_line))
        except OSError as exc:  # the pid is for people; the lock holds without it
            _log.warning(
                "cannot write the pid into the lock file: path=%s reason=%s", self.path, exc
            )
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
