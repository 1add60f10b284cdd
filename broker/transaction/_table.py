"""``HalfTable``: which half messages wait for an end, which are ended, which checks are due.
State only, no I/O: the service feeds it what it reads from the half and op topics.

``low``: every half below this queue offset is ended (or unreadable); ``resolved``: the ended
ones at or above it; ``pending``: the halves read and not ended, each with its checks so far.
A half's first check is due ``timeout_ms`` after it was stored (RocketMQ's
``transactionTimeout``), the next ones ``interval_ms`` after the last
(``transactionCheckInterval``); one checked ``check_max`` times (``transactionCheckMax``) is
due for discard instead.

Caller: the transaction service, under its lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aeromq.broker.store import StoredMessage

__all__ = ["HalfTable", "PendingHalf"]


@dataclass(slots=True)
class PendingHalf:
    """A half message read and not ended: the message, its producer group, its checks."""

    half: StoredMessage
    group: str
    checks: int = 0
    next_check_ms: int = 0
    """When its next check is due (0: ``timeout_ms`` after it was stored)."""


class HalfTable:
    """Half messages and their ends (see module)."""

    def __init__(
        self, low: int = 0, resolved: Iterable[int] = (), checks: Mapping[int, int] | None = None
    ) -> None:
        self.low = low
        self.read_offset = low
        """Where the half queue is read next."""
        self.resolved: set[int] = {offset for offset in resolved if offset >= low}
        self.pending: dict[int, PendingHalf] = {}
        self._restored_checks = dict(checks or {})
        self.changes = 0
        """Bumped by every change a checkpoint holds."""

    def add(self, half: StoredMessage, group: str) -> None:
        """A half read from the queue (in order): pending unless ended already."""
        offset = half.queue_offset
        self.read_offset = max(self.read_offset, offset + 1)
        if offset < self.low or offset in self.resolved:
            return
        self.pending[offset] = PendingHalf(half, group, self._restored_checks.pop(offset, 0))

    def resolve(self, offset: int) -> bool:
        """Record the end of the half at ``offset``; whether it was not ended before."""
        if offset < self.low or offset in self.resolved:
            return False
        self.resolved.add(offset)
        self.pending.pop(offset, None)
        self.changes += 1
        return True

    def ended(self, offset: int) -> bool:
        """Whether the half at ``offset`` is known ended."""
        return offset < self.low or offset in self.resolved

    def advance(self) -> None:
        """Move ``low`` up to the oldest pending half (or the read offset), forgetting the ends
        below it."""
        low = min(self.pending) if self.pending else self.read_offset
        if low > self.low:
            self.low = low
            self.resolved = {offset for offset in self.resolved if offset >= low}
            self.changes += 1

    def due(
        self, now_ms: int, timeout_ms: int, interval_ms: int, check_max: int
    ) -> tuple[list[PendingHalf], list[PendingHalf]]:
        """``(halves to check now, halves to discard)``; a half to check counts the check and
        is due again ``interval_ms`` later."""
        checks: list[PendingHalf] = []
        discards: list[PendingHalf] = []
        for pending in self.pending.values():
            if now_ms < self._next_ms(pending, timeout_ms):
                continue
            if pending.checks >= check_max:
                discards.append(pending)
                continue
            pending.checks += 1
            pending.next_check_ms = now_ms + interval_ms
            checks.append(pending)
        if checks:
            self.changes += 1
        return checks, discards

    def next_due_ms(self, timeout_ms: int) -> int | None:
        """When the earliest pending half is due (None: none pending)."""
        if not self.pending:
            return None
        return min(self._next_ms(pending, timeout_ms) for pending in self.pending.values())

    def check_counts(self) -> dict[int, int]:
        """The checks so far of each pending half that had one (for the checkpoint)."""
        counts = {offset: p.checks for offset, p in self.pending.items() if p.checks}
        counts.update(self._restored_checks)
        return counts

    @staticmethod
    def _next_ms(pending: PendingHalf, timeout_ms: int) -> int:
        return pending.next_check_ms or pending.half.store_timestamp_ms + timeout_ms
