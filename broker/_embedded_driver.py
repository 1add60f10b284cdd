"""How the broker's transport idles: its embedded media driver's context, and its Aeron client's
conductor.

An idle broker's CPU is wake-ups: on a 2-core VM one wake-up of a parked Python thread costs
40-150 us of CPU (the timer, the GIL, cold caches), whatever the thread then finds to do. So the
broker keeps the transport's threads few and their parks long once quiet:

- **Threading mode** (``driver_threading_mode``, default ``SHARED``): the embedded driver runs
  its conductor, sender and receiver as one agent on one thread, so one wake-up serves all
  three. Python agents share one GIL anyway, so three threads add no parallelism: busy, the
  shared thread costs no more CPU per message than three (see the broker operations page).
- **Parks until woken** (``MediaDriverContext.park_when_settled``; ``AEROMQ_DRIVER_PARK_WHEN_SETTLED=0``
  in the broker's environment turns it off but in a broker group's member). It was off for a
  single broker until an idle driver parked until due (an idle broker spent 1.8-2.8% of a core
  with it, then); now both settings idle at 0.2% of a core, and over UDP the settled park halves
  the driver's CPU a message at 100 msgs/s (about 10 wake-ups a message fewer) and cuts a fifth
  at 1,000 msgs/s (``bench/results/2026-11-29d/udpcpu.md``). Every source of the
  driver's network work in a broker ends its park: a datagram (its sockets are in the park's
  poll), an offer of a publisher in this process (the replication agent's ring
  ``MediaDriver.wake_network``; the session agent's answers to UDP clients, once per duty cycle,
  are sent by the agent itself while the driver's thread parks, ``MediaDriver.send_network``,
  and wake it only while it runs a cycle: ``transport/driver/network_turn.py``). So
  while its sender and receiver owe nothing soon (no resend a NAK asked for, no NAK timer, no
  status message due or about to fall due as a subscriber reads what came: their
  ``owes_soon``), an empty cycle parks the deep park (25 ms) at once: a driver under light
  traffic wakes for its datagrams, its wakes and its timers only. It used to walk the backoff
  below after every piece of work: parks of 1 us, 2 us, ... 1 ms, each a wake-up of a Python
  duty cycle of all three agents (about 100 us of CPU): 16 of them a send one at a time on a
  group's leader, 15 on each follower (``docs/history/replication-log.md``). What waits for
  the park: another kind of client's commands to the conductor (this package's clients wake it,
  below) and another process's publications over UDP through this driver (a broker has none).
- **Deep idle** (Agrona's backoff, then :class:`~transport.concurrent.BackoffIdleStrategy`'s
  deep park), while something is owed: no spins or yields, park 100 us (the NAK delay) doubling
  to 1 ms, and once parked for 10 ms in a row, on doubling to 25 ms
  (``transport.driver.DEEP_BACKOFF``, :func:`~transport.driver.deep_idle_unless_set`). Every duty the driver
  keeps on a clock has a deadline far longer than that: the driver's heartbeat to its clients
  (stamped every cycle; clients allow 10 s), the conductor's timer (every 1 s: client liveness,
  10 s; linger and unblock timeouts, 5-15 s), the sender's heartbeats and SETUPs (every 100 ms
  when idle; receivers drop an image after 10 s), the receiver's status messages (every 200 ms;
  a sender drops a receiver after 5 s): each runs at most 25 ms late. The thread goes deep
  after 10 ms of quiet, not a second: work every second or so (a slow client) would otherwise
  hold it at 1 ms parks. Keepalives (the conductor's timer, heartbeats and status messages that
  move nothing) are not work, so connected idle clients do not hold it either. Agrona's 10
  spins and 5 yields are left out: in Python each is a whole duty cycle of the three agents
  (reading every socket, about 100 us), 15 of them after every piece of work, and a park of a
  few microseconds ends as soon as a datagram or an in-process wake comes (the socket waiter);
  a group member's driver spent most of its CPU on them (about 70,000 duty cycles in a profiled
  run of ``bench cluster``, 11,000-15,000 of them yields).
- **Waking on the network**: the sender's and receiver's thread parks in a poll on their sockets
  (:class:`~transport.driver.udp.socket_waiter.SocketWaiter`), so a request over UDP ends the
  park at once.
- **Parks until due** (``MediaDriverContext.park_until_due``): while the driver streams nothing
  (no publication, no image: no client connected), its thread parks until its conductor's next
  timer (every 1 s) once its backoff reaches the deep park, not every 25 ms. A client of this
  package ends that park after each command with a datagram to the driver's wake socket
  (:mod:`~transport.concurrent.wake_socket`), so a connecting client waits for no park; another
  kind of client would wait up to the timer.
- **Replication on the driver's thread**: a group member's replication agent is hosted on this
  driver's network thread (``MediaDriver.host_agent``: receiver, replication agent, sender in
  one duty cycle, ``broker.replication.agent``), so frames received are appended, and frames
  offered are sent, in the cycle that took or made them; whatever rings the agent (a put waiting
  for the commit, the controller, a handshake's answer) ends the driver's park
  (``MediaDriver.wake_network``). The session agent's answers to UDP clients are sent by the
  agent while the thread parks (``MediaDriver.network_bell``, ``MediaDriver.send_network``).
- **The client conductor** (the broker's Aeron client) sleeps on a doorbell that the driver
  rings after each duty cycle that told its clients something
  (``MediaDriver.add_notice_bell``): a new client's image reaches the session agent at once. It
  wakes by itself every 500 ms for its duties: a keepalive every 500 ms (the driver drops a
  client after 10 s) and its own inter-service check (10 s). Without the broker's own driver (a
  standalone one, or no futexes) it sleeps 16 ms (Aeron's idle sleep), then doubles up to 64 ms.

Each ``AERON_*_IDLE_STRATEGY`` variable that is set wins over the deep default of its agent.
``AERON_THREADING_MODE`` does not apply to the embedded driver: ``driver_threading_mode`` (its
option and ``AEROMQ_BROKER_DRIVER_THREADING_MODE``) decides.

**Test only**: ``AEROMQ_TEST_UDP_LOSS=RATE[:SEED]`` gives the driver a
:class:`~transport.testing.loss_generator.LossGenerator` dropping that share of the DATA, status
message and NAK datagrams it receives (the fault suite's lossy replication link: its brokers
take no UDP but replication). Never set it in production.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Final

from aeromq.transport.concurrent.doorbell import HAS_FUTEX, Doorbell
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy, IdleStrategy
from aeromq.transport.driver import (
    MediaDriver,
    MediaDriverContext,
    ThreadingMode,
    deep_idle_unless_set,
)
from aeromq.transport.testing.loss_generator import LossGenerator

__all__ = [
    "DRIVER_THREADING_MODES",
    "PARK_WHEN_SETTLED_ENV",
    "client_conductor_idle_strategy",
    "embedded_driver_context",
]

DRIVER_THREADING_MODES: Final = (
    ThreadingMode.SHARED.value,
    ThreadingMode.SHARED_NETWORK.value,
    ThreadingMode.DEDICATED.value,
)
"""The threading modes an embedded driver may run in (``INVOKER`` has no one to invoke it)."""

PARK_WHEN_SETTLED_ENV: Final = "AEROMQ_DRIVER_PARK_WHEN_SETTLED"
"""``0``: a single broker's embedded driver walks its backoff after every piece of work rather
than park until woken while its network owes nothing soon (the default; see module)."""
_NS_PER_MS: Final = 1_000_000
_CLIENT_PARK_NS: Final = 16 * _NS_PER_MS
_CLIENT_DEEP_PARK_NS: Final = 64 * _NS_PER_MS
_CLIENT_KEEPALIVE_PARK_NS: Final = 500 * _NS_PER_MS
"""The broker's client conductor's park on its doorbell: its keepalive's interval (Aeron's
500 ms; the driver drops a client after 10 s)."""


def embedded_driver_context(
    file_mode: int, threading_mode: str, *, park_when_settled: bool = False
) -> MediaDriverContext:
    """The embedded driver's context: Aeron's environment, sparse logs, the store's file mode,
    ``threading_mode`` (one of :data:`DRIVER_THREADING_MODES`, any case), and deep-idle agents
    unless the environment names their idle strategies (see module); settled parks unless
    :data:`PARK_WHEN_SETTLED_ENV` is ``0`` and ``park_when_settled`` (a broker group's member)
    is false."""
    context = MediaDriverContext.from_env(
        term_buffer_sparse_file=True,
        file_mode=file_mode,
        threading_mode=ThreadingMode(threading_mode.strip().upper()),
        park_when_settled=park_when_settled or os.environ.get(PARK_WHEN_SETTLED_ENV) != "0",
        park_until_due=True,
    )
    context = deep_idle_unless_set(context)
    return dataclasses.replace(
        context,
        udp=dataclasses.replace(
            context.udp, loss_generator=_test_loss_generator() or context.udp.loss_generator
        ),
    )


def client_conductor_idle_strategy(driver: MediaDriver | None = None) -> IdleStrategy:
    """The broker's Aeron client conductor (see module): with the broker's embedded ``driver``
    (and futexes), asleep on a doorbell the driver rings when it tells its clients something,
    waking at least every :data:`_CLIENT_KEEPALIVE_PARK_NS` for its keepalive; else Aeron's 16 ms
    sleep, then on doubling to 64 ms while idle (no spins or yields: its work is never urgent)."""
    if driver is not None and HAS_FUTEX:
        bell = Doorbell.allocate()
        idle = DoorbellIdleStrategy(
            bell,
            min_park_period_ns=_CLIENT_KEEPALIVE_PARK_NS,
            max_park_period_ns=_CLIENT_KEEPALIVE_PARK_NS,
        )
        driver.add_notice_bell(bell)
        return idle
    return BackoffIdleStrategy(
        max_spins=0,
        max_yields=0,
        min_park_period_ns=_CLIENT_PARK_NS,
        max_park_period_ns=_CLIENT_PARK_NS,
        deep_park_period_ns=_CLIENT_DEEP_PARK_NS,
        deep_idle_after_ns=0,
    )


TEST_UDP_LOSS_ENV: Final = "AEROMQ_TEST_UDP_LOSS"


def _test_loss_generator() -> LossGenerator | None:
    """The test-only loss generator ``AEROMQ_TEST_UDP_LOSS`` asks for (see module), or None."""
    value = os.environ.get(TEST_UDP_LOSS_ENV)
    if not value:
        return None
    rate, _, seed = value.partition(":")
    loss = float(rate)
    return LossGenerator(
        data_loss_rate=loss, sm_loss_rate=loss, nak_loss_rate=loss, seed=int(seed or os.getpid())
    )
