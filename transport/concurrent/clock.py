"""Clocks: wall-clock milliseconds (``EpochClock``) and monotonic nanoseconds (``NanoClock``).

Agrona's two kinds of time, with the unit in the method name:

- ``EpochClock.time_ms()``: milliseconds since 1970-01-01 UTC. Comparable between processes and
  hosts; what goes into shared files (counter free-for-reuse deadlines, error log timestamps,
  heartbeats in cnc.dat).
- ``NanoClock.time_ns()``: a monotonic clock in nanoseconds (``CLOCK_MONOTONIC`` on Linux, shared
  by every process on the host). For timeouts and intervals; never goes backwards.

The ``Cached*`` clocks hold a value that a duty cycle updates once per cycle, so the many reads
within that cycle cost an attribute load. ``SettableClock`` is both kinds at once, set by hand:
the test clock, so that time-driven logic runs without sleeping.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = [
    "CachedEpochClock",
    "CachedNanoClock",
    "EpochClock",
    "NanoClock",
    "SettableClock",
    "SystemEpochClock",
    "SystemNanoClock",
]

_NS_PER_MS = 1_000_000


class EpochClock(Protocol):
    """Milliseconds since the Unix epoch."""

    def time_ms(self) -> int:
        """Milliseconds since 1970-01-01 UTC."""
        ...


class NanoClock(Protocol):
    """A monotonic time in nanoseconds from an arbitrary origin."""

    def time_ns(self) -> int:
        """Nanoseconds from an arbitrary origin; never goes backwards."""
        ...


class SystemEpochClock:
    """The system's wall clock in milliseconds (``time.time_ns() // 1_000_000``)."""

    __slots__ = ()

    def time_ms(self) -> int:
        """The wall clock now, in ms since the epoch (a system call)."""
        return time.time_ns() // _NS_PER_MS

    def __repr__(self) -> str:
        return "SystemEpochClock()"


class SystemNanoClock:
    """The system's monotonic clock in nanoseconds (``time.monotonic_ns``)."""

    __slots__ = ()

    time_ns = staticmethod(time.monotonic_ns)

    def __repr__(self) -> str:
        return "SystemNanoClock()"


class CachedEpochClock:
    """An epoch clock that returns the last value given to :meth:`update` (or advanced to)."""

    __slots__ = ("_time_ms",)

    def __init__(self, time_ms: int = 0) -> None:
        self._time_ms = time_ms

    def time_ms(self) -> int:
        """The cached time in ms: the last :meth:`update` plus any :meth:`advance`."""
        return self._time_ms

    def update(self, time_ms: int) -> None:
        """Cache ``time_ms`` (ms since the epoch); the duty cycle calls it once a cycle."""
        self._time_ms = time_ms

    def advance(self, delta_ms: int) -> None:
        """Move the cached time forward by ``delta_ms`` milliseconds."""
        self._time_ms += delta_ms

    def __repr__(self) -> str:
        return f"CachedEpochClock(time_ms={self._time_ms})"


class CachedNanoClock:
    """A nano clock that returns the last value given to :meth:`update` (or advanced to)."""

    __slots__ = ("_time_ns",)

    def __init__(self, time_ns: int = 0) -> None:
        self._time_ns = time_ns

    def time_ns(self) -> int:
        """The cached time in ns: the last :meth:`update` plus any :meth:`advance`."""
        return self._time_ns

    def update(self, time_ns: int) -> None:
        """Cache ``time_ns`` (a ``NanoClock`` reading); the duty cycle calls it once a cycle."""
        self._time_ns = time_ns

    def advance(self, delta_ns: int) -> None:
        """Move the cached time forward by ``delta_ns`` nanoseconds."""
        self._time_ns += delta_ns

    def __repr__(self) -> str:
        return f"CachedNanoClock(time_ns={self._time_ns})"


class SettableClock:
    """A clock for tests: both an ``EpochClock`` and a ``NanoClock`` over one settable time.

    ``time_ms()`` is ``time_ns() // 1_000_000``, so advancing one advances the other.
    """

    __slots__ = ("_time_ns",)

    def __init__(self, time_ns: int = 0) -> None:
        self._time_ns = time_ns

    def time_ns(self) -> int:
        """The time set, in ns."""
        return self._time_ns

    def time_ms(self) -> int:
        """The time set, in ms (``time_ns() // 1_000_000``)."""
        return self._time_ns // _NS_PER_MS

    def set_time_ns(self, time_ns: int) -> None:
        """Set the time to ``time_ns`` nanoseconds."""
        self._time_ns = time_ns

    def set_time_ms(self, time_ms: int) -> None:
        """Set the time to ``time_ms`` milliseconds (sub-ms part dropped)."""
        self._time_ns = time_ms * _NS_PER_MS

    def advance_ns(self, delta_ns: int) -> None:
        """Move the time forward by ``delta_ns`` nanoseconds."""
        self._time_ns += delta_ns

    def advance_ms(self, delta_ms: int) -> None:
        """Move the time forward by ``delta_ms`` milliseconds."""
        self._time_ns += delta_ms * _NS_PER_MS

    def __repr__(self) -> str:
        return f"SettableClock(time_ns={self._time_ns})"
