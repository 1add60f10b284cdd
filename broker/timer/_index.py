"""The timer service's pending messages, by due time: a heap of ``(due_ms, queue_offset)`` of
the timer topic's queue, with the stored message kept beside an entry due within the horizon
(the others are read again from the store when they are due). No I/O, no clock: the caller
gives the times. Memory: about 100 bytes an entry, plus the messages held.

Caller: the timer service's thread only.
"""

from __future__ import annotations

import heapq
from typing import Generic, TypeVar

__all__ = ["TimerIndex"]

M = TypeVar("M")


class TimerIndex(Generic[M]):
    """Pending entries ordered by due time, then queue offset (store order among equals)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int]] = []
        self._held: dict[int, M] = {}

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, due_ms: int, offset: int, message: M | None = None) -> None:
        """Hold the entry of queue ``offset``, due at ``due_ms``; ``message`` kept if given."""
        heapq.heappush(self._heap, (due_ms, offset))
        if message is not None:
            self._held[offset] = message

    def next_due_ms(self) -> int | None:
        """The earliest due time held, None when empty."""
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int, limit: int) -> list[tuple[int, int, M | None]]:
        """Up to ``limit`` entries due at or before ``now_ms``, earliest first, as
        ``(due_ms, offset, message or None)``; they leave the index."""
        heap = self._heap
        held = self._held
        due: list[tuple[int, int, M | None]] = []
        while heap and heap[0][0] <= now_ms and len(due) < limit:
            due_ms, offset = heapq.heappop(heap)
            due.append((due_ms, offset, held.pop(offset, None)))
        return due

    def clear(self) -> None:
        """Forget every entry."""
        self._heap.clear()
        self._held.clear()
