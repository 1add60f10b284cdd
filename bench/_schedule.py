"""The open-loop schedule of ``python -m bench latency``: when each message is due, the body
that carries its due time, a producer's pacing and the consumer's receipts.

Message ``i`` of a run at ``rate`` msgs/s is due at ``t0 + i / rate`` (:func:`due_ns`); the
producer sends it then, or at once when it is late (a late send does not skip the message, so
the time it waited counts: open loop). Its latency is taken from that due time to the moment
the consumer's fetch (``poll()``, ``XREADGROUP``, ``fetch``, a pipe read) returned it; the due
time travels in the body. Every process of a run is on one machine and reads one
``CLOCK_MONOTONIC`` (``time.monotonic_ns()``).

The body (:data:`BODY_LENGTH` bytes, little-endian)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                     Due time (monotonic ns)                   |
    |                                                               |
    +---------------------------------------------------------------+
    |                           Sequence                            |
    |                                                               |
    +---------------------------------------------------------------+
    |                     Padding (b".") to 100 bytes              ...

A sequence >= 0 is a scheduled message; a negative one ``-(k + 1)`` is warm-up message ``k``,
sent before the schedule starts until the consumer has had :data:`PRIMED_AFTER` of them in a
row (every queue of the topic served), and never measured.

Used by the latency suite's roles (:mod:`bench._latency_roles`) and its tests; no I/O but the
producer's sleep.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "BODY_LENGTH",
    "DUE_OFFSET",
    "PRIMED_AFTER",
    "SEQUENCE_OFFSET",
    "Pacer",
    "Plan",
    "Receipts",
    "body",
    "due_ns",
    "fine_timer_slack",
    "warm_up_body",
]

DUE_OFFSET = 0
SEQUENCE_OFFSET = DUE_OFFSET + 8
PADDING_OFFSET = SEQUENCE_OFFSET + 8
BODY_LENGTH = 100
_STAMP = struct.Struct("<qq")
_PADDING = b"." * (BODY_LENGTH - PADDING_OFFSET)
PRIMED_AFTER = 16
"""Warm-up messages the consumer must have had in a row (of consecutive numbers, so from every
queue of a topic of up to 16) before the schedule starts."""
_PR_SET_TIMERSLACK = 29


@dataclass(frozen=True)
class Plan:
    """One run: ``count`` messages at ``rate`` msgs/s (None: one after another, as fast as
    the send returns), those due in the first ``warm_up_s`` not measured; a producer still
    sending ``give_up_s`` after the start stops there (and says so)."""

    rate: float | None
    count: int
    warm_up_s: float
    give_up_s: float

    @property
    def warm_up_count(self) -> int:
        """Scheduled messages due in the warm-up, not measured (all of a rate-less run's are)."""
        if self.rate is None:
            return 0
        return min(self.count, int(self.warm_up_s * self.rate))


def due_ns(t0_ns: int, sequence: int, rate: float) -> int:
    """When message ``sequence`` of a run started at ``t0_ns`` at ``rate`` msgs/s is due."""
    return t0_ns + round(sequence * 1e9 / rate)


def body(due: int, sequence: int) -> bytes:
    """The :data:`BODY_LENGTH` bytes of a message (see the module docstring)."""
    return _STAMP.pack(due, sequence) + _PADDING


def warm_up_body(index: int) -> bytes:
    """Warm-up message ``index`` (sequence ``-(index + 1)``), due now."""
    return body(time.monotonic_ns(), -(index + 1))


def fine_timer_slack() -> None:
    """Ask Linux to wake this thread's sleeps on time (a timer slack of 1 ns, not 50 us): the
    producer's wake-up for a due message is part of every latency, the floor's too. A no-op
    where ``prctl`` is missing."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0)


class Pacer:
    """A producer's schedule: :meth:`next` sleeps until the next message is due and returns
    its body; :meth:`sent` records how long its send took and how late it started.

    ``clock_ns`` and ``sleep_s`` are the clock it reads and the sleep it waits with: the
    monotonic clock and ``time.sleep`` unless a test gives a clock of its own.

    Caller: the producer role's loop, one message at a time. Affects: nothing outside."""

    def __init__(
        self,
        plan: Plan,
        t0_ns: int,
        *,
        clock_ns: Callable[[], int] = time.monotonic_ns,
        sleep_s: Callable[[float], None] = time.sleep,
    ) -> None:
        self.plan = plan
        self._clock_ns = clock_ns
        self._sleep_s = sleep_s
        self.t0_ns = t0_ns
        self.sequence = 0
        self.last_end_ns = t0_ns
        self.gave_up = False
        self.durations_ns = array.array("q")
        self.lags_ns = array.array("q")
        self._give_up_ns = t0_ns + int(plan.give_up_s * 1e9)
        self._due = t0_ns

    def next(self) -> bytes | None:
        """The next message's body once it is due (at once if late), or None when the run is
        over: every message sent, or its time (``give_up_s``) is up."""
        if self.sequence >= self.plan.count:
            return None
        now = self._clock_ns()
        if now >= self._give_up_ns:
            self.gave_up = self.plan.rate is not None
            return None
        if self.plan.rate is None:
            self._due = now
        else:
            self._due = due_ns(self.t0_ns, self.sequence, self.plan.rate)
            if self._due > now:
                self._sleep_s((self._due - now) / 1e9)
        return body(self._due, self.sequence)

    def sent(self, started_ns: int, ended_ns: int) -> None:
        """The message :meth:`next` returned was sent from ``started_ns`` to ``ended_ns``."""
        self.durations_ns.append(ended_ns - started_ns)
        self.lags_ns.append(started_ns - self._due)
        self.last_end_ns = ended_ns
        self.sequence += 1

    def achieved_msgs_per_s(self) -> float:
        """Messages sent over the time from the start to the last send's end."""
        elapsed_ns = self.last_end_ns - self.t0_ns
        return self.sequence / (elapsed_ns / 1e9) if elapsed_ns > 0 else 0.0

    def fell_behind(self) -> bool:
        """The run took over 1% longer than its schedule (or gave up): its sends queued."""
        rate = self.plan.rate
        return rate is not None and (self.gave_up or self.achieved_msgs_per_s() < 0.99 * rate)


class Receipts:
    """What a consumer received: each scheduled message's first receipt (its latency from its
    due time), duplicates counted, and whether the warm-up has primed it.

    Caller: the consumer role's loop, after each fetch. Affects: nothing outside."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.seen = bytearray(count)
        self.distinct = 0
        self.duplicates = 0
        self.last_ns = 0
        self.sequences = array.array("q")
        self.latencies_ns = array.array("q")
        self.primed = False
        self._warm_ups: set[int] = set()

    def take(self, bodies: list[bytes], now_ns: int) -> None:
        """Record the bodies one fetch returned at ``now_ns``."""
        unpack = _STAMP.unpack_from
        for one in bodies:
            due, sequence = unpack(one, DUE_OFFSET)
            if sequence < 0:
                self._warm_up(-sequence - 1)
            elif self.seen[sequence]:
                self.duplicates += 1
            else:
                self.seen[sequence] = 1
                self.distinct += 1
                self.sequences.append(sequence)
                self.latencies_ns.append(now_ns - due)
                self.last_ns = now_ns

    def _warm_up(self, index: int) -> None:
        if self.primed:
            return
        got = self._warm_ups
        got.add(index)
        low = high = index  # the run of consecutive numbers through index (any order)
        while low - 1 in got:
            low -= 1
        while high + 1 in got:
            high += 1
        self.primed = high - low + 1 >= PRIMED_AFTER

    def complete(self, sent: int) -> bool:
        """Every message of the run has come, or every one of the ``sent`` first (``sent`` < 0:
        the producer has not said yet; it says only once its last send returned, which may be
        after that message came)."""
        return self.distinct >= self.count or 0 <= sent <= self.distinct

    def measured(self, warm_up_count: int) -> list[int]:
        """The latencies of the messages due after the warm-up, in nanoseconds."""
        return [
            latency
            for sequence, latency in zip(self.sequences, self.latencies_ns, strict=True)
            if sequence >= warm_up_count
        ]
