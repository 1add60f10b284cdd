"""The free-space watermark of the store's file system: below it, sends are refused.

RocketMQ stops taking messages when its disk passes a used-space ratio; this store refuses a
put (``PutMessageStatus.DISK_FULL``, answered ``DISK_FULL``, retriable) when the file system of
the data directory would keep less than ``min_free_bytes`` free after it, or is more than
``max_used_percent`` used. Reads and pulls never look at it. ``statvfs`` is read at most every
``check_interval_ms`` (on the putting thread, ~2 us): a put pays one monotonic clock read and
a compare. The bytes put since the last read are counted against the free space, so a burst
between two reads cannot run past the watermark by more than one batch. A segment that could
not be allocated (``refused``) raises the bar to its size until that much is free, so puts do
not retry a doomed allocation each. Sends are taken again as soon as a read finds the space
back. The change each way is logged once (a warning, then an info line).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["DiskSpaceGuard"]

_log = logging.getLogger(__name__)


class DiskSpaceGuard:
    """The watermark of ``directory``'s file system (see module). ``clock_ns`` is monotonic."""

    __slots__ = (
        "_check_interval_ns",
        "_clock_ns",
        "_next_check_ns",
        "_put_since_check",
        "_segment_needed_bytes",
        "directory",
        "free_bytes",
        "max_used_percent",
        "min_free_bytes",
        "needed_bytes",
        "refusing",
        "total_bytes",
    )

    def __init__(
        self,
        directory: Path,
        *,
        min_free_bytes: int,
        max_used_percent: int | None,
        check_interval_ms: int,
        clock_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.directory = directory
        self.min_free_bytes = min_free_bytes
        self.max_used_percent = max_used_percent
        self._check_interval_ns = check_interval_ms * 1_000_000
        self._clock_ns = clock_ns
        self._next_check_ns = 0
        self._put_since_check = 0
        self.free_bytes = 0
        self.total_bytes = 0
        self.needed_bytes = 0  # what the last refused put needed free
        self._segment_needed_bytes = 0  # a segment that could not be allocated
        self.refusing = False

    def refresh(self) -> None:
        """Read the file system's free space now. Caller: ``has_room``, and tests."""
        stat = os.statvfs(self.directory)
        self.free_bytes = stat.f_bavail * stat.f_frsize
        self.total_bytes = stat.f_blocks * stat.f_frsize
        self._put_since_check = 0
        self._next_check_ns = self._clock_ns() + self._check_interval_ns

    def has_room(self, length: int) -> bool:
        """Whether a put of ``length`` bytes keeps the file system above the watermark; a
        refusal records ``needed_bytes``. Caller: the store's put path, under its put lock."""
        if self._clock_ns() >= self._next_check_ns:
            self.refresh()
        free = self.free_bytes - self._put_since_check
        needed = self.min_free_bytes + length
        if needed < self._segment_needed_bytes:
            needed = self._segment_needed_bytes
        limit = self.max_used_percent  # (inline: this runs once a put)
        total = self.total_bytes
        if free < needed or (
            limit is not None and total > 0 and (total - free) * 100 > limit * total
        ):
            self.needed_bytes = needed
            if not self.refusing:
                self.refusing = True
                _log.warning("disk full, refusing sends: %s", self.describe())
            return False
        if self.refusing:
            self.refusing = False
            self._segment_needed_bytes = 0
            _log.info("disk space is back, taking sends again: free_bytes=%d", free)
        self._put_since_check += length
        return True

    def refused(self, needed_bytes: int, free_bytes: int) -> None:
        """Record a file that could not be allocated (``NoSpaceError``): the next put reads
        the free space again."""
        self.needed_bytes = self._segment_needed_bytes = needed_bytes
        self.free_bytes = free_bytes
        self._next_check_ns = 0
        if not self.refusing:
            self.refusing = True
            _log.warning("disk full, refusing sends: %s", self.describe())

    def describe(self) -> str:
        """``key=value`` of the last reading, for a refusal's message."""
        return (
            f"free_bytes={self.free_bytes} needed_bytes={self.needed_bytes} "
            f"min_free_bytes={self.min_free_bytes} max_used_percent={self.max_used_percent} "
            f"directory={str(self.directory)!r}"
        )
