"""Idle strategies: what a duty-cycle thread does when a cycle found no work.

Agrona's ``IdleStrategy`` family. ``idle(work_count)`` is called after every duty cycle: a
positive ``work_count`` means the agent did something, and the strategy resets; otherwise it
idles by its rule. ``idle()`` (``work_count`` 0) idles unconditionally. ``reset()`` returns to
the not-idle state. ``alias`` is the name :func:`idle_strategy_from_name` parses.

In CPython a spinning thread holds the GIL until the interpreter's switch interval (5 ms) takes
it away, so ``spin`` and ``noop`` suit a thread that is alone on its core and in its process.
``yield`` gives the GIL and the CPU away (``os.sched_yield`` releases the GIL), ``sleep-ns``
and ``backoff`` park; ``time.sleep`` rounds short periods up to roughly 50-60 us on Linux.

Names (case-insensitive): ``noop``; ``spin`` (also ``busy-spin``, ``busy_spin``); ``yield``
(``yielding``); ``sleep-ns[:period_ns]`` (``sleeping``; default 1 us); ``sleep-ms[:period_ms]``
(default 1 ms); ``backoff[:max_spins,max_yields,min_park_period_ns,max_park_period_ns]``
(defaults 10, 5, 1 us, 1 ms, as Agrona), optionally followed by
``,deep_park_period_ns,deep_idle_after_ns`` (see :class:`BackoffIdleStrategy`).

The parking strategies (``sleep-ns``, ``sleep-ms``, ``backoff``) park in ``time.sleep`` unless
given a waiter (:meth:`BackoffIdleStrategy.park_with`): a function that blocks for at most the
park period and may return early, e.g. a ``poll`` on the agent's sockets, so that a datagram
ends the park at once (the media driver's network agents, see
:mod:`~transport.driver.udp.socket_waiter`).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable
from typing import Final, Protocol

from aeromq.transport._errors import ConfigurationError

__all__ = [
    "BackoffIdleStrategy",
    "BusySpinIdleStrategy",
    "IdleStrategy",
    "NoOpIdleStrategy",
    "Parker",
    "SleepingIdleStrategy",
    "YieldingIdleStrategy",
    "check_backoff_shape",
    "idle_strategy_from_name",
    "next_park_period_ns",
    "tighten_timer_slack",
]


Parker = Callable[[float], object]
"""Blocks for at most the given seconds; may return early (``time.sleep``, a socket poll)."""


class BackoffShape(Protocol):
    """What :func:`next_park_period_ns` reads of a backoff strategy."""

    max_park_period_ns: int
    deep_park_period_ns: int
    deep_idle_after_ns: int
    parked_ns: int


def check_backoff_shape(
    max_spins: int,
    max_yields: int,
    min_park_period_ns: int,
    max_park_period_ns: int,
    deep_park_period_ns: int,
    deep_idle_after_ns: int,
) -> None:
    """Raise ``ConfigurationError`` for a backoff shape (Agrona's, with a deep park) that is not
    one: negative spins or yields, park periods not positive or min > max, a deep park (when
    not 0) shorter than the max park or after a negative time."""
    if max_spins < 0 or max_yields < 0:
        raise ConfigurationError(
            "spins and yields must not be negative", max_spins=max_spins, max_yields=max_yields
        )
    if min_park_period_ns <= 0 or max_park_period_ns < min_park_period_ns:
        raise ConfigurationError(
            "park periods must be positive and min <= max",
            min_park_period_ns=min_park_period_ns,
            max_park_period_ns=max_park_period_ns,
        )
    if deep_park_period_ns and (deep_park_period_ns < max_park_period_ns or deep_idle_after_ns < 0):
        raise ConfigurationError(
            "the deep park must be 0 (off) or >= the max park, after a time >= 0",
            max_park_period_ns=max_park_period_ns,
            deep_park_period_ns=deep_park_period_ns,
            deep_idle_after_ns=deep_idle_after_ns,
        )


def next_park_period_ns(shape: BackoffShape, period_ns: int) -> int:
    """The park after one of ``period_ns`` that timed out: doubled up to the max park, then,
    once ``shape`` has parked ``deep_idle_after_ns`` in all, doubled on up to the deep park."""
    if period_ns < shape.max_park_period_ns:
        return min(period_ns * 2, shape.max_park_period_ns)
    if period_ns < shape.deep_park_period_ns and shape.parked_ns >= shape.deep_idle_after_ns:
        return min(period_ns * 2, shape.deep_park_period_ns)
    return period_ns


class IdleStrategy(Protocol):
    """What a duty-cycle thread does after each cycle (see the module)."""

    @property
    def alias(self) -> str:
        """The name :func:`idle_strategy_from_name` parses to this kind of strategy."""
        ...

    def idle(self, work_count: int = 0) -> None:
        """Called after every duty cycle: a positive ``work_count`` resets, 0 idles."""
        ...

    def reset(self) -> None:
        """Return to the not-idle state, as work does."""
        ...


class NoOpIdleStrategy:
    """Does nothing: the caller goes straight to its next duty cycle."""

    __slots__ = ()
    alias = "noop"

    def idle(self, work_count: int = 0) -> None:
        """Return at once, whatever ``work_count``."""
        return None

    def reset(self) -> None:
        """Nothing to reset: this strategy keeps no state."""
        return None

    def __repr__(self) -> str:
        return "NoOpIdleStrategy()"


class BusySpinIdleStrategy:
    """Spins: returns at once. CPython has no spin-wait hint to give the core."""

    __slots__ = ()
    alias = "spin"

    def idle(self, work_count: int = 0) -> None:
        """Return at once, whatever ``work_count``."""
        return None

    def reset(self) -> None:
        """Nothing to reset: this strategy keeps no state."""
        return None

    def __repr__(self) -> str:
        return "BusySpinIdleStrategy()"


class YieldingIdleStrategy:
    """Yields the CPU (and the GIL) when idle."""

    __slots__ = ()
    alias = "yield"

    def idle(self, work_count: int = 0) -> None:
        """``os.sched_yield()`` when ``work_count`` is 0 (it releases the GIL)."""
        if work_count <= 0:
            os.sched_yield()

    def reset(self) -> None:
        """Nothing to reset: this strategy keeps no state."""
        return None

    def __repr__(self) -> str:
        return "YieldingIdleStrategy()"


class SleepingIdleStrategy:
    """Sleeps ``period_ns`` when idle."""

    __slots__ = ("_park", "_period_s", "period_ns")
    alias = "sleep-ns"
    DEFAULT_PERIOD_NS = 1_000

    def __init__(self, period_ns: int = DEFAULT_PERIOD_NS) -> None:
        if period_ns <= 0:
            raise ConfigurationError("sleep period must be positive", period_ns=period_ns)
        self.period_ns = period_ns
        self._period_s = period_ns / 1e9
        self._park: Parker | None = None

    def park_with(self, park: Parker) -> None:
        """Park in ``park(seconds)`` instead of ``time.sleep`` (see module)."""
        self._park = park

    def idle(self, work_count: int = 0) -> None:
        """Park for ``period_ns`` when ``work_count`` is 0."""
        if work_count <= 0:
            (self._park or time.sleep)(self._period_s)

    def reset(self) -> None:
        """Nothing to reset: this strategy keeps no state."""
        return None

    def __repr__(self) -> str:
        return f"SleepingIdleStrategy(period_ns={self.period_ns})"


class BackoffIdleStrategy:
    """Spin ``max_spins`` times, then yield ``max_yields`` times, then park for a period that
    doubles from ``min_park_period_ns`` up to ``max_park_period_ns``; any work resets.

    Agrona's state machine: NOT_IDLE -> SPINNING -> YIELDING -> PARKING. ``state``,
    ``spins``, ``yields`` and ``park_period_ns`` are readable for tests and diagnostics.

    A deep idle (not Agrona's; off when ``deep_park_period_ns`` is 0): once the thread has
    parked for ``deep_idle_after_ns`` in a row, the park goes on doubling up to
    ``deep_park_period_ns``. In CPython a 1 ms park costs ~5-20 us of CPU per wake-up (the
    GIL's hand-over), so four agents parked at 1 ms keep an idle process at 2-8% of a core;
    at 10 ms they cost a tenth of that. Parked longer, a wake-up costs more (40-150 us on a
    2-core VM: caches gone cold, the duty cycle's Python included), and the count of wake-ups
    is what an idle process pays for. The price: the first work after a quiet second waits
    up to ``deep_park_period_ns``; steady traffic never reaches it. A waiter
    (:meth:`park_with`) that returns when the work arrives removes that price for the work it
    watches.

    ``settled`` (not Agrona's; None by default), when set, is asked on every empty cycle whether
    the thread owes nothing soon: all its work comes by what ends a park (a waiter that returns
    when it comes, a wake) and none of its timers is due within the longest park. While it says
    so, the cycle parks the longest at once (``deep_park_period_ns``, else
    ``max_park_period_ns``), whatever the state: the spins, yields and short parks are for work
    about to come that nothing would end a park for. The backoff's own walk goes on beneath
    (its period and ``parked_ns``), so a park after the owner stops saying so is the backoff's.

    ``settled_after_work`` (not Agrona's; None by default), when set, is asked after each cycle
    that did work whether that cycle settled: it left nothing that would not end a park (all of
    its sources end one when their work comes: a waiter's sockets and wakes, which stay
    readable or pending until a park returns for them), and ``settled`` would say so too. Then
    the strategy parks the settled park at once (the reset first), instead of leaving the next
    cycle, which would find nothing, to run first: a wake or a datagram that came during the
    cycle ends that park at once, as it would have ended the empty cycle's. ``parks_after_work``
    counts those parks.

    ``idle_for`` (not Agrona's; None by default), when set, is asked once the backoff parks its
    longest (the deep park, else the max park): how long the thread may park at once, until the
    next of its timers is due, because all its other work ends a park when it comes (a waiter
    that returns for it). A longer time than the longest park is parked at once: an idle thread
    wakes for its timers, not for the park's period. A settled park asks it at once (what it
    waits for ends the park anyway), so a settled idle thread wakes for its timers only too.
    """

    __slots__ = (
        "_park",
        "deep_idle_after_ns",
        "deep_park_period_ns",
        "idle_for",
        "max_park_period_ns",
        "max_spins",
        "max_yields",
        "min_park_period_ns",
        "park_period_ns",
        "parked_ns",
        "parks_after_work",
        "parks_until_due",
        "settled",
        "settled_after_work",
        "settled_parks",
        "spins",
        "state",
        "yields",
    )
    alias = "backoff"

    NOT_IDLE = 0
    SPINNING = 1
    YIELDING = 2
    PARKING = 3

    DEFAULT_MAX_SPINS = 10
    DEFAULT_MAX_YIELDS = 5
    DEFAULT_MIN_PARK_PERIOD_NS = 1_000
    DEFAULT_MAX_PARK_PERIOD_NS = 1_000_000

    def __init__(
        self,
        max_spins: int = DEFAULT_MAX_SPINS,
        max_yields: int = DEFAULT_MAX_YIELDS,
        min_park_period_ns: int = DEFAULT_MIN_PARK_PERIOD_NS,
        max_park_period_ns: int = DEFAULT_MAX_PARK_PERIOD_NS,
        deep_park_period_ns: int = 0,
        deep_idle_after_ns: int = 1_000_000_000,
    ) -> None:
        check_backoff_shape(
            max_spins,
            max_yields,
            min_park_period_ns,
            max_park_period_ns,
            deep_park_period_ns,
            deep_idle_after_ns,
        )
        self.max_spins = max_spins
        self.max_yields = max_yields
        self.min_park_period_ns = min_park_period_ns
        self.max_park_period_ns = max_park_period_ns
        self.deep_park_period_ns = deep_park_period_ns
        self.deep_idle_after_ns = deep_idle_after_ns
        self.parked_ns = 0
        self.state = self.NOT_IDLE
        self.spins = 0
        self.yields = 0
        self.park_period_ns = min_park_period_ns
        self._park: Parker | None = None
        self.settled: Callable[[], bool] | None = None
        """Asked on every empty cycle: whether the thread owes nothing soon (see class)."""
        self.settled_parks = 0
        """Parks taken at the longest at once because ``settled`` said so."""
        self.settled_after_work: Callable[[], bool] | None = None
        """Asked after every cycle that worked: whether it settled (see class)."""
        self.parks_after_work = 0
        """Settled parks taken right after a cycle that worked (see class)."""
        self.idle_for: Callable[[], int] | None = None
        """Asked when the backoff parks its longest: how long (ns) the thread may park at once,
        until its next due time (0: not now; see class)."""
        self.parks_until_due = 0
        """Parks taken until the next due time because ``idle_for`` allowed one."""

    def park_with(self, park: Parker) -> None:
        """Park in ``park(seconds)`` instead of ``time.sleep`` (see module); a park that ends
        early still counts its whole period toward the deep idle, so a waiter woken by work
        (which resets the strategy) and a waiter woken for nothing stay on the same schedule."""
        self._park = park

    def idle(self, work_count: int = 0) -> None:
        """Work resets (and parks the settled park at once when ``settled_after_work`` says so);
        an empty cycle takes the next step: a spin, a yield or a park, or the longest park at
        once while ``settled`` says so (see class)."""
        if work_count > 0:
            if self.state != self.NOT_IDLE:
                self.reset()
            after_work = self.settled_after_work
            if after_work is not None and after_work():
                self.parks_after_work += 1
                self._park_settled()
            return
        settled = self.settled
        if settled is not None and settled():
            self._park_settled()
            return
        state = self.state
        if state == self.NOT_IDLE:
            self.state = self.SPINNING
            self.spins += 1
        elif state == self.SPINNING:
            self.spins += 1
            if self.spins > self.max_spins:
                self.state = self.YIELDING
                self.yields = 0
        elif state == self.YIELDING:
            self.yields += 1
            if self.yields > self.max_yields:
                self.state = self.PARKING
                self.park_period_ns = self.min_park_period_ns
                self.parked_ns = 0
            else:
                os.sched_yield()
        else:
            period = self.park_period_ns
            idle_for = self.idle_for
            if idle_for is not None and period >= (
                self.deep_park_period_ns or self.max_park_period_ns
            ):
                until_due_ns = idle_for()
                if until_due_ns > period:
                    (self._park or time.sleep)(until_due_ns / 1e9)
                    self.parks_until_due += 1
                    return
            (self._park or time.sleep)(period / 1e9)
            self.parked_ns += period
            self.park_period_ns = next_park_period_ns(self, period)

    def _park_settled(self) -> None:
        """The longest park at once; the walk goes on beneath, from its first park (see class)."""
        if self.state != self.PARKING:
            self.state = self.PARKING
            self.park_period_ns = self.min_park_period_ns
            self.parked_ns = 0
        period = self.park_period_ns
        longest = self.deep_park_period_ns or self.max_park_period_ns
        idle_for = self.idle_for
        if idle_for is not None:  # settled, nothing is owed before the next timer either
            longest = max(longest, idle_for())
        (self._park or time.sleep)(longest / 1e9)
        self.settled_parks += 1
        self.parked_ns += period
        self.park_period_ns = next_park_period_ns(self, period)

    def reset(self) -> None:
        """Back to NOT_IDLE: counts cleared, park period back to ``min_park_period_ns``."""
        self.spins = 0
        self.yields = 0
        self.parked_ns = 0
        self.park_period_ns = self.min_park_period_ns
        self.state = self.NOT_IDLE

    def __repr__(self) -> str:
        return (
            f"BackoffIdleStrategy(max_spins={self.max_spins}, max_yields={self.max_yields}, "
            f"min_park_period_ns={self.min_park_period_ns}, "
            f"max_park_period_ns={self.max_park_period_ns}, "
            f"deep_park_period_ns={self.deep_park_period_ns}, "
            f"deep_idle_after_ns={self.deep_idle_after_ns})"
        )


def _int_params(name: str, text: str, count: int) -> list[int]:
    parts = [part.strip() for part in text.split(",")] if text else []
    if len(parts) != count:
        raise ConfigurationError(
            "idle strategy takes a different number of parameters",
            name=name,
            expected=count,
            given=len(parts),
        )
    try:
        return [int(part.replace("_", "")) for part in parts]
    except ValueError as exc:
        raise ConfigurationError("idle strategy parameter is not an integer", name=name) from exc


def idle_strategy_from_name(name: str) -> IdleStrategy:
    """An idle strategy from its name, e.g. ``"backoff"``, ``"sleep-ns:1000"`` (see module)."""
    alias, _, params = name.strip().partition(":")
    alias = alias.strip().lower()
    if alias == "noop" and not params:
        return NoOpIdleStrategy()
    if alias in ("spin", "busy-spin", "busy_spin") and not params:
        return BusySpinIdleStrategy()
    if alias in ("yield", "yielding") and not params:
        return YieldingIdleStrategy()
    if alias in ("sleep-ns", "sleeping"):
        if not params:
            return SleepingIdleStrategy()
        return SleepingIdleStrategy(_int_params(name, params, 1)[0])
    if alias == "sleep-ms":
        period_ms = _int_params(name, params, 1)[0] if params else 1
        return SleepingIdleStrategy(period_ms * 1_000_000)
    if alias == "backoff":
        if not params:
            return BackoffIdleStrategy()
        values = _int_params(name, params, 6 if params.count(",") == 5 else 4)
        return BackoffIdleStrategy(*values)
    raise ConfigurationError("unknown idle strategy", name=name)


_PR_SET_TIMERSLACK: Final = 29
_libc: ctypes.CDLL | None = None


def tighten_timer_slack(slack_ns: int = 1_000) -> bool:
    """Set the calling thread's timer slack to ``slack_ns`` (Linux ``prctl(PR_SET_TIMERSLACK)``);
    whether it was set (False off Linux).

    A parking idle strategy sleeps with ``time.sleep``; Linux lets a sleep overshoot by the
    thread's timer slack, 50 us by default, so a 1 us park lasts about 55 us and an agent that
    has just parked answers tens of microseconds late. Latency-sensitive agents (a broker's
    session agent, a client's response poller) tighten it on their own thread.
    """
    global _libc
    if not sys.platform.startswith("linux"):
        return False
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        return int(_libc.prctl(_PR_SET_TIMERSLACK, ctypes.c_ulong(slack_ns), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False
