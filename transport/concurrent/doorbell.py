"""``Doorbell``: an eventcount on a shared 32-bit word, so an idle agent sleeps until rung.

A polling agent (a broker's session agent, a client's response poller) finds its work by polling
shared memory; between pieces of work an idle strategy decides how it waits. In CPython each
poll costs microseconds, so spinning and yielding between requests are most of such a thread's
CPU. With a doorbell the agent sleeps in the kernel (a futex on the word) and whoever gives it
work rings: the ring ends the sleep at once, and an agent nobody rings still wakes at its
timeout, as a backoff would.

The word (any aligned i32 in shared memory; the low half of a media driver counter's value, see
:meth:`Doorbell.for_counter`, so two processes of one driver share it)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-------------------------------------------------------------+
    |S|                 Ring sequence (31 bits, wraps)              |
    +-+-------------------------------------------------------------+

    S: SLEEPER_FLAG, set while a waiter may be asleep on the word.

The next i32 (:data:`FLAG_OFFSET`: the high half of a counter's value) is the waiter's *flag
word*, which only the waiter writes (:meth:`Doorbell.set_flag`) and ringers read
(:meth:`Doorbell.flag`): a request to ring for work they would otherwise leave unrung (the
broker's session agent asks its clients to ring their lazy pulls, ``broker.session._agent``).
Both accesses are full fences (a swap, an add of 0): a ringer that publishes its work and then
reads the flag, and a waiter that sets the flag and then polls, cannot both miss the other.

The contract (all accesses sequentially consistent atomics of the native helper):

- waiter: ``observed = prepare()`` (read the word); poll for work once more; if there is none,
  ``await_ring(observed, timeout_ns)``: CAS ``observed -> observed | S`` (a failure means a ring
  came since ``observed``: return, poll again) then ``futex_wait(observed | S, timeout_ns)``;
- ringer: publish the work first (an Aeron offer, a queue append), then ``ring()``: add 2 to the
  word; if the old value had S, clear S and wake every sleeper.

No wakeup is lost: a ring either comes before the waiter's CAS (which then fails: the waiter
polls again and sees the work, published before the ring) or after it (the ringer sees S and
wakes; a ``futex_wait`` that starts after the ring finds the word changed and returns at once).
The ringer, not the waiter, clears S, so several threads may wait on one word (a client's poller
and a caller waiting for its answer): a ring wakes them all. A waiter that timed out leaves S
set; the next ring then pays one ``futex_wake`` that wakes nobody.

The idle strategy that parks on a doorbell is
:class:`~transport.concurrent.doorbell_idle_strategy.DoorbellIdleStrategy`.
"""

from __future__ import annotations

import os
from typing import Final, Protocol

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent._atomic import FUTEX_NOT_EXPECTED, FUTEX_TIMED_OUT, HAS_FUTEX
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.counters_descriptor import (
    RECORD_ALLOCATED,
    checked_counter_offset,
)
from aeromq.transport.concurrent.counters_reader import CountersReader

__all__ = [
    "DOORBELL_TYPE_ID",
    "FLAG_OFFSET",
    "FUTEX_NOT_EXPECTED",
    "FUTEX_TIMED_OUT",
    "HAS_FUTEX",
    "RUNG",
    "SLEEPER_FLAG",
    "Doorbell",
    "Ringable",
]

SLEEPER_FLAG: Final = 1
"""Bit 0 of the word: a waiter may be asleep on it."""
RING_INCREMENT: Final = 2
"""What a ring adds to the word: one step of the sequence in bits 1..31."""
RUNG: Final = -1
"""``await_ring``'s result when a ring came between ``prepare`` and the wait (no sleep)."""
FLAG_OFFSET: Final = 4
"""The waiter's flag word (see module), this many bytes after the doorbell's word."""
DOORBELL_TYPE_ID: Final = 1_001
"""Type id of a media driver counter that holds a doorbell (``Aeron.add_counter``)."""
_WAKE_ALL: Final = 0x7FFF_FFFF
_CLEAR_SLEEPER: Final = ~SLEEPER_FLAG


class Doorbell:
    """An eventcount on the aligned i32 at ``offset`` of ``buffer`` (see module)."""

    __slots__ = ("_buffer", "_offset", "counter_id", "registration_id")

    def __init__(
        self, buffer: AtomicBuffer, offset: int, *, counter_id: int = -1, registration_id: int = 0
    ) -> None:
        if not HAS_FUTEX:
            raise ConfigurationError("a doorbell needs futexes (Linux)", platform=os.name)
        buffer.get_int32_volatile(offset)  # bounds and alignment, checked once here
        self._buffer = buffer
        self._offset = offset
        self.counter_id = counter_id
        self.registration_id = registration_id

    @classmethod
    def allocate(cls) -> Doorbell:
        """A doorbell of this process alone (anonymous memory): for threads of one process, or
        a waiter nobody rings (it wakes at its timeouts)."""
        return cls(AtomicBuffer.allocate(64), 0)

    @classmethod
    def for_counter(cls, counters: CountersReader, counter_id: int) -> Doorbell:
        """The doorbell in the low 32 bits of counter ``counter_id``'s value (any process of the
        same media driver maps the same word). Raises ``IndexOutOfBoundsError`` for an id
        outside the counters."""
        values = counters.values_buffer
        offset = checked_counter_offset(values.capacity, counter_id)
        registration_id = counters.get_counter_registration_id(counter_id)
        return cls(values, offset, counter_id=counter_id, registration_id=registration_id)

    @staticmethod
    def is_doorbell_counter(counters: CountersReader, counter_id: int) -> bool:
        """Whether ``counter_id`` names an allocated counter of :data:`DOORBELL_TYPE_ID`."""
        if not 0 <= counter_id <= counters.max_counter_id:
            return False
        return (
            counters.get_counter_state(counter_id) == RECORD_ALLOCATED
            and counters.get_counter_type_id(counter_id) == DOORBELL_TYPE_ID
        )

    def still_allocated(self, counters: CountersReader) -> bool:
        """For a counter's doorbell: whether the counter is still the one it was made from (not
        freed, not reused); a ringer stops ringing a doorbell that is not."""
        return (
            self.is_doorbell_counter(counters, self.counter_id)
            and counters.get_counter_registration_id(self.counter_id) == self.registration_id
        )

    @property
    def offset(self) -> int:
        """Index of the 32-bit word in the doorbell's buffer."""
        return self._offset

    # -- the waiter ------------------------------------------------------------------------

    def prepare(self) -> int:
        """The word now: read it, then poll for work once more, then :meth:`await_ring`."""
        return self._buffer.get_int32_volatile(self._offset)

    def await_ring(self, observed: int, timeout_ns: int) -> int:
        """Sleep until a ring after ``observed`` (the :meth:`prepare` before the last empty poll)
        or ``timeout_ns`` (< 0: no limit). :data:`RUNG` when a ring came before the sleep; else
        ``futex_wait``'s result: 0 woken, ``FUTEX_NOT_EXPECTED`` (the word changed as it went to
        sleep: a ring), ``FUTEX_TIMED_OUT``."""
        buffer = self._buffer
        offset = self._offset
        armed = observed | SLEEPER_FLAG
        if not buffer.compare_and_set_int32(offset, observed, armed):
            return RUNG
        return buffer.futex_wait_int32(offset, armed, timeout_ns)

    def set_flag(self, value: int) -> None:
        """The waiter only: set its flag word to ``value`` (a full fence; see module)."""
        self._buffer.get_and_set_int32(self._offset + FLAG_OFFSET, value)

    # -- the ringer ------------------------------------------------------------------------

    def flag(self) -> int:
        """The waiter's flag word (see module), read after publishing work (a full fence)."""
        return self._buffer.get_and_add_int32(self._offset + FLAG_OFFSET, 0)

    def ring(self) -> bool:
        """After publishing work for the waiter: step the sequence and wake any sleeper. Whether
        a sleeper was signalled (one native call when none was)."""
        buffer = self._buffer
        offset = self._offset
        if not buffer.get_and_add_int32(offset, RING_INCREMENT) & SLEEPER_FLAG:
            return False
        buffer.get_and_and_int32(offset, _CLEAR_SLEEPER)
        buffer.futex_wake_int32(offset, _WAKE_ALL)
        return True

    def __repr__(self) -> str:
        return (
            f"Doorbell(counter_id={self.counter_id}, offset={self._offset}, "
            f"word={self._buffer.get_int32_volatile(self._offset):#x})"
        )


class Ringable(Protocol):
    """What an agent rings once at the end of a duty cycle that gave it work (the broker's
    session agent, ``broker/session/_agent.py``): a :class:`Doorbell`, or anything else that ends
    a thread's wait (a media driver's network wake, ``MediaDriver.network_bell``)."""

    def ring(self) -> bool:
        """Wake whoever waits; whether a sleeper was signalled (False when it cannot tell)."""
        ...
