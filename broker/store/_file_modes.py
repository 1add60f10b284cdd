"""The store's files and directories are private by default (``0600``, ``0700``): the rule is
the transport's (:mod:`transport.concurrent.file_modes`); this module turns a failure to make
a directory into the store's errors."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from aeromq.broker._errors import NoSpaceError, StoreIOError
from aeromq.transport.concurrent.file_modes import DEFAULT_FILE_MODE
from aeromq.transport.concurrent.file_modes import make_dirs as _make_dirs

__all__ = ["DEFAULT_FILE_MODE", "make_dirs"]


def make_dirs(path: Path, file_mode: int = DEFAULT_FILE_MODE) -> None:
    """``transport.concurrent.file_modes.make_dirs``; a full file system raises
    ``NoSpaceError``, another failure ``StoreIOError``."""
    try:
        _make_dirs(path, file_mode)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            at = path
            while not at.exists() and at != at.parent:
                at = at.parent
            stat = os.statvfs(at)
            raise NoSpaceError(
                "no room on the file system for a store directory",
                path=str(path),
                needed_bytes=stat.f_bsize,
                free_bytes=stat.f_bavail * stat.f_frsize,
            ) from exc
        raise StoreIOError(
            "cannot create store directory", path=str(path), reason=str(exc)
        ) from exc
