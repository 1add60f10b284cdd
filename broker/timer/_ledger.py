"""Which entries of the timer topic's queue are delivered: everything below ``low``, and a
byte per offset from ``low`` on (1: delivered) up to the end read so far. ``low`` moves up as
the entries at it are delivered, so the bytes kept span the oldest pending entry to the newest
read one. No I/O: the checkpoint (``_checkpoint``) stores it, packed a bit per entry.

Caller: the timer service's thread only.
"""

from __future__ import annotations

__all__ = ["DeliveryLedger"]

_TRIM_AT = 1 << 16
"""Bytes below ``low`` dropped once this many have gathered (a slice copy now and then)."""


class DeliveryLedger:
    """Delivered marks of the timer queue's offsets (see module)."""

    def __init__(self, low: int = 0, marks: bytes = b"") -> None:
        self._base = low  # the offset of _marks[0]
        self._marks = bytearray(marks)
        self._first = 0  # index of the first 0 byte at or after the start: low - _base
        self.changes = 0
        self._advance()

    @property
    def low(self) -> int:
        """Every offset below is delivered."""
        return self._base + self._first

    def delivered(self, offset: int) -> bool:
        """Whether ``offset`` is marked delivered."""
        index = offset - self._base
        if index < 0:
            return True
        return index < len(self._marks) and self._marks[index] == 1

    def mark(self, offset: int) -> None:
        """Mark ``offset`` delivered."""
        index = offset - self._base
        if index < 0:
            return
        marks = self._marks
        if index >= len(marks):
            marks.extend(bytes(index + 1 - len(marks)))
        marks[index] = 1
        self.changes += 1
        if index == self._first:
            self._advance()

    def marks(self) -> bytes:
        """The marks from ``low`` on, a byte per offset (trailing undelivered ones cut)."""
        return bytes(self._marks[self._first :]).rstrip(b"\x00")

    def _advance(self) -> None:
        found = self._marks.find(0, self._first)
        self._first = len(self._marks) if found < 0 else found
        if self._first >= _TRIM_AT:
            del self._marks[: self._first]
            self._base += self._first
            self._first = 0
