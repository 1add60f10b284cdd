"""A test-only record of how far the commit log is fsynced, for the fault suite's simulated power
loss: with ``AEROMQ_TEST_FSYNC_LEDGER=1`` in its environment, a store writes the commit log
offset of each fsync that completed to ``commitlog.fsynced`` in its data directory (8 bytes,
little-endian, overwritten in place: one ``pwrite`` to the page cache, which outlives a
SIGKILL). It records only fsyncs this process made (``CommitLog.flush``, a durable truncation,
a group member's sync of its recovered log), so after a SIGKILL the fault suite drops every commit log byte from the recorded
offset on: what a power loss could have lost (``tests/faults/power_loss.py``).

Off unless the variable is set (the default: no file, no write); never set it in production.

Caller: ``CommitLog`` (construction, each fsync). Affects: the ledger file only.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Final

__all__ = ["FSYNC_LEDGER_ENV", "FSYNC_LEDGER_FILE", "FsyncLedger", "open_fsync_ledger"]

FSYNC_LEDGER_ENV: Final = "AEROMQ_TEST_FSYNC_LEDGER"
FSYNC_LEDGER_FILE: Final = "commitlog.fsynced"
_OFFSET: Final = struct.Struct("<q")


class FsyncLedger:
    """The ledger file of one commit log (see module)."""

    __slots__ = ("_fd",)

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def record(self, offset: int) -> None:
        """The commit log is fsynced up to ``offset`` (called right after the fsync)."""
        os.pwrite(self._fd, _OFFSET.pack(offset), 0)

    def close(self) -> None:
        """Close the file (the record stays)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def open_fsync_ledger(data_dir: Path) -> FsyncLedger | None:
    """The ledger of the store in ``data_dir`` when ``AEROMQ_TEST_FSYNC_LEDGER=1``, else None."""
    if os.environ.get(FSYNC_LEDGER_ENV) != "1":
        return None
    data_dir.mkdir(parents=True, exist_ok=True)  # a new store's may not exist yet
    return FsyncLedger(data_dir / FSYNC_LEDGER_FILE)
