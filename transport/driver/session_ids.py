"""``SessionIdAllocator``: session ids for new publications, as Aeron's conductor picks them.

Ids are handed out in sequence from a random start, wrapping as i32, skipping the reserved range
``[publication_reserved_session_id_low, publication_reserved_session_id_high]`` (which channels
may pin with ``session-id``) and any id already used by a live publication of the same stream.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection

__all__ = ["SessionIdAllocator", "wrap_int32"]


def wrap_int32(value: int) -> int:
    """``value`` wrapped into the signed 32-bit range, as Java's int arithmetic does."""
    return ((value + 0x8000_0000) & 0xFFFF_FFFF) - 0x8000_0000


class SessionIdAllocator:
    """Allocates session ids (see module); ``next_session_id`` defaults to a random i32."""

    __slots__ = ("_high", "_low", "_next")

    def __init__(self, reserved_low: int, reserved_high: int, next_session_id: int | None = None):
        self._low = reserved_low
        self._high = reserved_high
        self._next = wrap_int32(
            secrets.randbits(32) if next_session_id is None else next_session_id
        )

    def allocate(self, in_use: Collection[int]) -> int:
        """The next free id not in ``in_use`` and not reserved."""
        session_id = self._next
        for _ in range(len(in_use) + 2):
            if self._low <= session_id <= self._high:
                session_id = wrap_int32(self._high + 1)
            if session_id not in in_use:
                break
            session_id = wrap_int32(session_id + 1)
        self._next = wrap_int32(session_id + 1)
        return session_id
