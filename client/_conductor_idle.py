"""How the Aeron client conductor of a producer's or consumer's sessions waits.

The conductor thread of a client's ``Aeron`` (``transport/client/client_conductor.py``) reads
the driver's news (a session's response image available or gone, answers to asynchronous
commands), stamps the client's keepalive every 500 ms and checks the driver's heartbeat. Aeron
sleeps 16 ms between its duty cycles: 62 wake-ups and some 6 ms of CPU a second in every client
process (``python -m bench threads``: 5-6 us a message at 1,000 msgs/s), though in a running
client nothing comes but the keepalive. A request does not need it: a session's requests and
answers go through its own publication, subscription and doorbell.

Here it parks 16 ms, then after a second of parking with nothing to do, on doubling to
:data:`CONDUCTOR_DEEP_PARK_NS` (four wake-ups a second). What it would be late for is a new
session's response image: the session's CONNECT is answered on it. So
:func:`expect_news` (``BrokerSessions``, before each session connects) wakes it and starts its
backoff over from 16 ms: the image is seen as soon as before. An image that goes away (a broker
gone) is seen up to :data:`CONDUCTOR_DEEP_PARK_NS` later, against the session timeout's
seconds; the keepalive stays far inside the driver's 10 s client timeout.

Off Linux (no futexes, so no doorbell to wake it by) the conductor keeps Aeron's 16 ms sleep.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport.concurrent.doorbell import HAS_FUTEX, Doorbell
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy
from aeromq.transport.concurrent.idle_strategy import IdleStrategy, SleepingIdleStrategy

__all__ = [
    "CONDUCTOR_DEEP_IDLE_AFTER_NS",
    "CONDUCTOR_DEEP_PARK_NS",
    "CONDUCTOR_PARK_NS",
    "conductor_idle_strategy",
    "expect_news",
]

_NS_PER_MS: Final = 1_000_000
CONDUCTOR_PARK_NS: Final = 16 * _NS_PER_MS
"""Aeron's idle sleep of a client conductor: its park while news may come."""
CONDUCTOR_DEEP_PARK_NS: Final = 250 * _NS_PER_MS
"""Its longest park, once idle: half the keepalive's interval (500 ms)."""
CONDUCTOR_DEEP_IDLE_AFTER_NS: Final = 1_000 * _NS_PER_MS
"""How long it parks :data:`CONDUCTOR_PARK_NS` with nothing to do before it backs off."""


def conductor_idle_strategy() -> IdleStrategy:
    """The idle strategy for a client's ``AeronContext`` (see module): a fresh one per client."""
    if not HAS_FUTEX:
        return SleepingIdleStrategy(CONDUCTOR_PARK_NS)
    return DoorbellIdleStrategy(
        Doorbell.allocate(),
        max_spins=0,
        max_yields=0,
        min_park_period_ns=CONDUCTOR_PARK_NS,
        max_park_period_ns=CONDUCTOR_PARK_NS,
        deep_park_period_ns=CONDUCTOR_DEEP_PARK_NS,
        deep_idle_after_ns=CONDUCTOR_DEEP_IDLE_AFTER_NS,
    )


def expect_news(idle: IdleStrategy) -> None:
    """Before a session connects (any thread): wake the conductor waiting with ``idle`` and
    start its backoff over, so it sees the session's response image within 16 ms."""
    if isinstance(idle, DoorbellIdleStrategy):
        idle.wake_to_shortest()
