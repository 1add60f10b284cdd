"""``event_driven_context``: a driver embedded in a process of this package's clients, woken by
its work rather than a clock.

A client process's own media driver (a producer's or a consumer's over UDP,
``client.broker_sessions``) ran on Aeron's defaults: three threads (``DEDICATED``), each after
every piece of work spinning 10 duty cycles, yielding 5, then parking from 1 us doubling to
1 ms. In Python each of those is a whole duty cycle (reading every socket, about 20-50 us), and
every thread holds the GIL the waiting caller needs: 23 wake-ups of each thread a message at
100 msgs/s, 1.5 ms of the client's CPU a message, 2.3 ms at 325 msgs/s, which is what kept a
one-at-a-time producer under 340 sends a second over UDP (``docs/history/latency-log.md``).

Every source of such a driver's work ends its park when it comes, so it need not poll:

- datagrams (its sockets are in the park's poll, ``udp/socket_waiter.py``);
- its clients' offers to network publications (a client of this process sends the frames
  itself while the thread parks, or wakes it while it runs a cycle:
  ``transport.client.waking_publications``, ``transport.driver.network_turn``);
- its clients' commands (they send a datagram to its wake socket after each command that waits
  for an answer: ``park_until_due``, ``transport.concurrent.wake_socket``).

So it runs ``SHARED`` (one thread, one wake-up serves the conductor, sender and receiver),
parks its longest at once while the network owes nothing soon (``park_when_settled``), and then
until its conductor's next timer while it streams nothing (``park_until_due``); its backoff,
for the times something is owed (a resend, a NAK, a status message about to fall due), skips
the spins and yields and parks from 100 us doubling to 1 ms, then on to 25 ms after 10 ms of
quiet. Each ``AERON_*_IDLE_STRATEGY`` variable that is set wins over that backoff, and
``AERON_THREADING_MODE`` over ``SHARED``.

What such a driver does not wake for: another process's client (its offers end no park; its
commands do, through the wake socket) and a client's ``try_claim`` or a concurrent
publication's offers, found at the park's end (up to 25 ms, or the next timer, once settled).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Final

from aeromq.transport.driver.context import MediaDriverContext, ThreadingMode

__all__ = ["DEEP_BACKOFF", "deep_idle_unless_set", "event_driven_context"]

_MIN_PARK_NS: Final = 100_000
_MAX_PARK_NS: Final = 1_000_000
_DEEP_PARK_NS: Final = 25_000_000
_DEEP_AFTER_NS: Final = 10_000_000
DEEP_BACKOFF: Final = f"backoff:0,0,{_MIN_PARK_NS},{_MAX_PARK_NS},{_DEEP_PARK_NS},{_DEEP_AFTER_NS}"
"""No spins or yields, parks from 100 us (the NAK delay) doubling to 1 ms, then 25 ms once
parked for 10 ms in a row: the idle of a driver whose work ends its parks (see module)."""


def event_driven_context(base: MediaDriverContext) -> MediaDriverContext:
    """``base`` (usually ``MediaDriverContext.from_env(...)``) made to wake on its work (see
    module), but for what the environment names."""
    mode = base.threading_mode if os.environ.get("AERON_THREADING_MODE") else ThreadingMode.SHARED
    return dataclasses.replace(
        deep_idle_unless_set(base),
        threading_mode=mode,
        park_when_settled=True,
        park_until_due=True,
    )


def deep_idle_unless_set(base: MediaDriverContext) -> MediaDriverContext:
    """``base`` with :data:`DEEP_BACKOFF` as the idle strategy of each of its agents whose
    ``AERON_*_IDLE_STRATEGY`` variable is not set (a set one keeps ``base``'s, read from it).
    Callers: :func:`event_driven_context`, the broker's embedded driver."""
    udp = base.udp
    return dataclasses.replace(
        base,
        conductor_idle_strategy=_unless_set(
            "AERON_CONDUCTOR_IDLE_STRATEGY", base.conductor_idle_strategy
        ),
        shared_idle_strategy=_unless_set("AERON_SHARED_IDLE_STRATEGY", base.shared_idle_strategy),
        udp=dataclasses.replace(
            udp,
            sender_idle_strategy=_unless_set(
                "AERON_SENDER_IDLE_STRATEGY", udp.sender_idle_strategy
            ),
            receiver_idle_strategy=_unless_set(
                "AERON_RECEIVER_IDLE_STRATEGY", udp.receiver_idle_strategy
            ),
            shared_network_idle_strategy=_unless_set(
                "AERON_SHARED_NETWORK_IDLE_STRATEGY", udp.shared_network_idle_strategy
            ),
        ),
    )


def _unless_set(variable: str, from_env: str) -> str:
    """:data:`DEEP_BACKOFF`, unless ``variable`` names a strategy (then ``from_env``)."""
    return from_env if os.environ.get(variable) else DEEP_BACKOFF
