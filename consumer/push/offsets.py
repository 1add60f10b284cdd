"""``InFlightOffsets``: the offsets a queue's consumer may commit while messages are in hand.

A push consumer hands messages of one queue to several threads at once; they finish in any
order. The offset it may commit is the lowest offset still in hand (nothing below it is
unfinished), else one past the highest taken: RocketMQ's ``ProcessQueue.removeMessage``.
No I/O, no lock (the caller holds its own).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["InFlightOffsets"]


class InFlightOffsets:
    """One queue's offsets in hand (see the module)."""

    __slots__ = ("_in_hand", "_next")

    def __init__(self) -> None:
        self._in_hand: set[int] = set()
        self._next = -1

    def __len__(self) -> int:
        return len(self._in_hand)

    def take(self, offsets: Iterable[int]) -> None:
        """Messages at ``offsets`` are in hand now."""
        for offset in offsets:
            self._in_hand.add(offset)
            if offset >= self._next:
                self._next = offset + 1

    def finish(self, offsets: Iterable[int]) -> int:
        """Messages at ``offsets`` are done; the offset to commit now (-1: none taken yet)."""
        self._in_hand.difference_update(offsets)
        return self.commit_offset

    @property
    def commit_offset(self) -> int:
        """The lowest offset in hand, else one past the highest taken (-1: none taken)."""
        return min(self._in_hand, default=self._next)
