"""The permission bits of the store's files and directories (private by default).

Message bodies sit in the commit log: files are created ``0600`` and directories ``0700``
unless the store is configured with another ``file_mode``. A directory's mode is the file
mode with an execute bit beside each read bit (``0640`` gives ``0750``). The modes are
applied with ``chmod`` after creation, so the process umask does not change them.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Final

from aeromq.broker._errors import NoSpaceError, StoreIOError

__all__ = ["DEFAULT_FILE_MODE", "directory_mode", "make_dirs"]

DEFAULT_FILE_MODE: Final = 0o600
"""Owner read and write only."""

_READ_BITS: Final = 0o444


def directory_mode(file_mode: int) -> int:
    """The mode of a directory holding files of ``file_mode``: execute wherever read is set."""
    return file_mode | ((file_mode & _READ_BITS) >> 2)


def make_dirs(path: Path, file_mode: int = DEFAULT_FILE_MODE) -> None:
    """Create ``path`` and its missing parents with ``directory_mode(file_mode)``. Directories
    that already exist keep their mode (a data directory the operator made is theirs). A full
    file system raises ``NoSpaceError``, another failure ``StoreIOError``."""
    missing: list[Path] = []
    at = path
    while not at.exists() and at != at.parent and len(missing) < 64:
        missing.append(at)
        at = at.parent
    mode = directory_mode(file_mode)
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=mode)
            os.chmod(directory, mode)
        except FileExistsError:  # another thread or process made it meanwhile
            continue
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                stat = os.statvfs(at)
                raise NoSpaceError(
                    "no room on the file system for a store directory",
                    path=str(directory),
                    needed_bytes=stat.f_bsize,
                    free_bytes=stat.f_bavail * stat.f_frsize,
                ) from exc
            raise StoreIOError(
                "cannot create store directory", path=str(directory), reason=str(exc)
            ) from exc
    if not path.is_dir():
        raise StoreIOError("not a directory", path=str(path))
