"""The timer service's pending messages, by due time: ``(due_ms, queue_offset)`` entries of the
timer topic's queue in two heaps, those with the stored message kept beside them (*held*: put
back without reading the store again) and those without (*cold*: due later than the hold horizon
when read, or read when the memory for held messages was used up). The service warms cold
entries before they are due (:meth:`TimerIndex.pop_cold`, then :meth:`TimerIndex.add` with the
message), so that only a cold entry it could not warm in time is read again when due. No I/O,
no clock: the caller gives the times. Memory: about 100 bytes an entry, plus the messages held.

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
        self._held_heap: list[tuple[int, int]] = []
        self._cold_heap: list[tuple[int, int]] = []
        self._held: dict[int, M] = {}

    def __len__(self) -> int:
        return len(self._held_heap) + len(self._cold_heap)

    @property
    def cold(self) -> int:
        """How many entries are held without their message."""
        return len(self._cold_heap)

    def add(self, due_ms: int, offset: int, message: M | None = None) -> None:
        """Hold the entry of queue ``offset``, due at ``due_ms``; ``message`` kept if given."""
        if message is None:
            heapq.heappush(self._cold_heap, (due_ms, offset))
        else:
            heapq.heappush(self._held_heap, (due_ms, offset))
            self._held[offset] = message

    def next_due_ms(self) -> int | None:
        """The earliest due time held, None when empty."""
        held, cold = self._held_heap, self._cold_heap
        if held and cold:
            return min(held[0][0], cold[0][0])
        if held or cold:
            return (held or cold)[0][0]
        return None

    def next_cold_ms(self) -> int | None:
        """The earliest due time of a cold entry, None when there is none."""
        return self._cold_heap[0][0] if self._cold_heap else None

    def pop_due(self, now_ms: int, limit: int) -> list[tuple[int, int, M | None]]:
        """Up to ``limit`` entries due at or before ``now_ms``, earliest first, as
        ``(due_ms, offset, message or None)``; they leave the index."""
        held_heap, cold_heap = self._held_heap, self._cold_heap
        held = self._held
        due: list[tuple[int, int, M | None]] = []
        while len(due) < limit:
            if held_heap and (not cold_heap or held_heap[0] <= cold_heap[0]):
                if held_heap[0][0] > now_ms:
                    break
                due_ms, offset = heapq.heappop(held_heap)
                due.append((due_ms, offset, held.pop(offset)))
            elif cold_heap and cold_heap[0][0] <= now_ms:
                due_ms, offset = heapq.heappop(cold_heap)
                due.append((due_ms, offset, None))
            else:
                break
        return due

    def pop_cold(self, until_ms: int, limit: int) -> list[tuple[int, int]]:
        """Up to ``limit`` cold entries due at or before ``until_ms``, earliest first, as
        ``(due_ms, offset)``; they leave the index (the caller adds them back, with their
        message when it has it)."""
        cold_heap = self._cold_heap
        found: list[tuple[int, int]] = []
        while cold_heap and cold_heap[0][0] <= until_ms and len(found) < limit:
            found.append(heapq.heappop(cold_heap))
        return found

    def clear(self) -> None:
        """Forget every entry."""
        self._held_heap.clear()
        self._cold_heap.clear()
        self._held.clear()
