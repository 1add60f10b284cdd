"""An exclusive lock on a store's data directory, held while the store is open.

``flock`` on ``<data dir>/lock``: a second store on the same directory, in this process or
another, fails fast with ``StoreLockedError``; the kernel drops the lock when the holder
dies, so a crashed broker never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from aeromq.broker._errors import StoreLockedError

__all__ = ["DirectoryLock"]


class DirectoryLock:
    """The lock file at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise StoreLockedError(
                "data directory is in use by another store", path=str(self.path)
            ) from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
