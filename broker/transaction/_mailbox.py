"""``CheckMailbox``: the check-backs due, by producer group, until a producer of the group takes
them (RocketMQ's broker calls a producer's channel; aeromq's producers hold a
``PollTransactionChecks`` call open, which the mailbox wakes).

A check posted again for the same half replaces the first (one per half); an end drops it. A
poll takes the checks it answers; a RocketMQ 5 telemetry stream peeks, so that every stream of
a topic gets each check once (a stream the client abandoned cannot swallow one). A
group no producer polls keeps its checks until the next check of each half replaces them: the
check still counts (as RocketMQ counts a check its producer never answered), so a half whose
producers are all gone is discarded after ``transaction_check_max`` checks.

Caller: the service's thread (``post``), ends (``drop``), the gRPC poll (``take``, waiters).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import NamedTuple

from aeromq.broker.store import StoredMessage

__all__ = ["Check", "CheckMailbox"]


class Check(NamedTuple):
    """One check-back: the half message, its real queue, this check's number (from 1)."""

    half: StoredMessage
    topic: str
    queue_id: int
    check_times: int


class CheckMailbox:
    """Checks by producer group (see module); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._boxes: dict[str, dict[int, Check]] = {}
        self._waiters: dict[str, list[Callable[[], None]]] = {}

    def post(self, group: str, check: Check) -> None:
        """Leave ``check`` for ``group`` and wake its pollers."""
        with self._lock:
            self._boxes.setdefault(group, {})[check.half.queue_offset] = check
            waiters = list(self._waiters.get(group, ()))
        for wake in waiters:
            wake()

    def drop(self, half_offset: int) -> None:
        """Forget the checks of an ended half."""
        with self._lock:
            for box in self._boxes.values():
                box.pop(half_offset, None)

    def take(self, group: str, max_count: int) -> list[Check]:
        """Up to ``max_count`` of ``group``'s checks, oldest half first, removed."""
        with self._lock:
            box = self._boxes.get(group)
            if not box:
                return []
            taken = [box.pop(offset) for offset in sorted(box)[:max_count]]
        return taken

    def peek(self, group: str, max_count: int) -> list[Check]:
        """Up to ``max_count`` of ``group``'s checks, oldest half first, left in the box (for
        callers that each send every check, as the RocketMQ 5 endpoint's telemetry streams)."""
        with self._lock:
            box = self._boxes.get(group)
            if not box:
                return []
            return [box[offset] for offset in sorted(box)[:max_count]]

    def add_waiter(self, group: str, wake: Callable[[], None]) -> None:
        """Call ``wake`` (from any thread) whenever a check for ``group`` is posted."""
        with self._lock:
            self._waiters.setdefault(group, []).append(wake)

    def remove_waiter(self, group: str, wake: Callable[[], None]) -> None:
        """Stop waking ``wake``."""
        with self._lock:
            waiters = self._waiters.get(group, [])
            if wake in waiters:
                waiters.remove(wake)
            if not waiters:
                self._waiters.pop(group, None)

    def pollers(self, group: str) -> int:
        """How many calls of ``group`` are waiting now."""
        with self._lock:
            return len(self._waiters.get(group, ()))
