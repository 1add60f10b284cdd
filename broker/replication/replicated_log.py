"""What replication needs of a member's message store (``MessageStore`` with
``StoreConfig.replicated``), as a protocol: the leader takes puts while it leads, reads its log
and sets the high watermark; a follower appends the leader's bytes, flushes them and truncates.

Caller: the replication agent's roles (``replicator``, ``fetcher``); the broker hands them its
``MessageStore``. Affects: the store (through it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from aeromq.broker.replication.epoch_file import EpochFile

__all__ = ["ReplicatedLog"]


class ReplicatedLog(Protocol):
    """The store's side of replication (see the store's contract for groups)."""

    @property
    def max_physical_offset(self) -> int:
        """The log end offset (LEO): where the next byte goes."""

    @property
    def flushed_physical_offset(self) -> int:
        """How far the log is known fsynced."""

    @property
    def committed_offset(self) -> int:
        """The high watermark the store applies (what clients see, what completes puts)."""

    def read_log(self, offset: int, max_bytes: int) -> bytes | memoryview:
        """Raw log bytes from the batch (or blank) boundary ``offset``: whole batches up to
        ``max_bytes`` (at least one), never past the log end."""

    def append_replicated(self, offset: int, data: bytes | memoryview) -> int:
        """Append the leader's bytes starting at ``offset``: the log end plus the bytes held of
        an incomplete batch, or the log end itself (a fetch started over); returns the log end
        after it."""

    def flush(self) -> int:
        """fsync what was appended (group commit); returns the flushed offset."""

    def set_high_watermark(self, offset: int) -> int:
        """Raise the committed offset (monotonic, never above the log end); returns it."""

    def truncate_to(self, offset: int, *, epochs: EpochFile | None = None) -> int:
        """Cut the log back to ``offset`` durably (intent, log, state, ``epochs`` from the
        point, intent cleared); returns the bytes dropped."""

    def start_leading(self) -> None:
        """Take puts from now on (this member's epoch is in its epoch file)."""

    def stop_leading(self) -> int:
        """Refuse puts from now on and fail those waiting for the committed offset (outcome
        unknown); returns how many."""

    def on_commit_wait(self, listener: Callable[[], object] | None) -> None:
        """Call ``listener()`` (None: no one) after each put starts waiting for the committed
        offset, from the putting thread: the replication agent is woken by new appends."""
