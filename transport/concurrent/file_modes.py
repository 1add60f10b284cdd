"""The permission bits of shared-memory and store files: private by default.

Log buffers and ``cnc.dat`` hold message bodies and a driver's counters, the broker's store its
messages: files are created ``0600`` and directories ``0700`` unless configured with another
``file_mode``. A directory's mode is the file mode with an execute bit beside each read bit
(``0640`` gives ``0750``). Modes are set with ``chmod`` after creation, so the process umask
does not change them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_FILE_MODE", "directory_mode", "make_dirs"]

DEFAULT_FILE_MODE: Final = 0o600
"""Owner read and write only."""

_READ_BITS: Final = 0o444
_MAX_DEPTH: Final = 64


def directory_mode(file_mode: int) -> int:
    """The mode of a directory holding files of ``file_mode``: execute wherever read is set."""
    return file_mode | ((file_mode & _READ_BITS) >> 2)


def make_dirs(path: str | os.PathLike[str], file_mode: int = DEFAULT_FILE_MODE) -> None:
    """Create ``path`` and its missing parents with ``directory_mode(file_mode)``; directories
    that already exist keep their mode (one the operator made is theirs). Raises ``OSError``."""
    target = Path(path)
    missing: list[Path] = []
    at = target
    while not at.exists() and at != at.parent and len(missing) < _MAX_DEPTH:
        missing.append(at)
        at = at.parent
    mode = directory_mode(file_mode)
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=mode)
        except FileExistsError:  # another thread or process made it meanwhile
            continue
        os.chmod(directory, mode)
    if not target.is_dir():
        raise NotADirectoryError(f"not a directory: path={str(target)!r}")
