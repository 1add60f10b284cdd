"""``LogStorage``: the driver's logs that may still take shared memory, for its storage checks.

Aeron's ``perform_storage_checks`` refuses a new log (``STORAGE_SPACE``) when the file system
has no room for it. A sparse log takes its pages only as they are written, so the room must also
cover what the live logs may still take: each one's length less the blocks it holds. A log can
take more only while something writes it:

- a publication's (IPC or UDP) while it is ACTIVE: its writers map it; once the last one let go
  (REMOVE_PUBLICATION, or its client's end of life) it drains and lingers, written no more;
- an image's while the receiver inserts into it (ACTIVE, DRAINING); from LINGER on it is read
  only.

So a log counts from the moment it is made (:meth:`LogStorage.track`) until its writers are gone,
not until its file is deleted after the linger (5 s by default): a client that closed its
sessions gives their unwritten room back at once. Each check stats the tracked files (a few
microseconds each) and forgets the logs that hold nothing more. Conductor thread only.
"""

from __future__ import annotations

import os
from typing import Protocol

from aeromq.transport.command import ErrorCode
from aeromq.transport.driver.command_error import command_error

__all__ = ["LogStorage", "StoredLog", "check_storage", "unbacked_bytes"]

_BLOCK_BYTES = 512  # st_blocks counts 512-byte units


class StoredLog(Protocol):
    """A publication or image whose log file the driver made."""

    @property
    def log_file_name(self) -> str: ...

    def may_take_storage(self) -> bool:
        """Whether something may still write (and so back) more of its log."""
        ...


def unbacked_bytes(path: str) -> int:
    """What the file at ``path`` may still take: its length less the blocks it holds (0 for a
    log allocated up front, or a file gone)."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return 0
    return max(0, stat.st_size - stat.st_blocks * _BLOCK_BYTES)


def check_storage(directory: str, log_length: int, unbacked: int = 0) -> None:
    """Refuse (``STORAGE_SPACE``) a log of ``log_length`` bytes that the file system holding
    ``directory`` has no room for beside ``unbacked`` bytes the live logs may still take."""
    stat = os.statvfs(directory)
    usable = stat.f_bavail * stat.f_frsize
    if usable < log_length + unbacked:
        raise command_error(
            ErrorCode.STORAGE_SPACE,
            "insufficient usable storage for new log",
            log_length=log_length,
            usable=usable,
            unbacked_by_live_logs=unbacked,
            directory=directory,
        )


class LogStorage:
    """The driver's live logs, for the storage checks (see module)."""

    __slots__ = ("_logs", "_pending")

    def __init__(self) -> None:
        self._logs: list[StoredLog] = []
        self._pending: dict[str, int] = {}

    def track(self, log: StoredLog) -> None:
        """Count ``log`` in the checks until it may take no more (see module)."""
        self._logs.append(log)

    def reserve(self, path: str, log_length: int) -> None:
        """Count a log being made elsewhere (off the conductor) in full, until :meth:`settle`."""
        self._pending[path] = log_length

    def settle(self, path: str) -> None:
        """The log at ``path`` was made (and is tracked) or given up: stop counting it here."""
        self._pending.pop(path, None)

    def unbacked_bytes(self) -> int:
        """What the live logs may still take; logs that may take no more are forgotten."""
        live = [log for log in self._logs if log.may_take_storage()]
        self._logs = live
        return sum(unbacked_bytes(log.log_file_name) for log in live) + sum(self._pending.values())

    def check(self, directory: str, log_length: int) -> None:
        """:func:`check_storage` of a new log, counting every live one."""
        check_storage(directory, log_length, self.unbacked_bytes())

    def __len__(self) -> int:
        return len(self._logs)
