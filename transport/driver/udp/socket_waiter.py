"""``SocketWaiter``: a network agent's park that a datagram ends at once.

The sender and the receiver read their endpoints' sockets without blocking, then idle. Parked
in ``time.sleep``, a datagram that arrives meanwhile waits for the park to end (up to the deep
park, 25 ms in an idle broker). Parked here instead, in ``poll`` on the sockets with the park
period as its timeout, the thread wakes as soon as one becomes readable: the same CPU when
idle (one wake-up per park either way), no added latency for what comes over the network.

Which sockets: the receiver registers each receive endpoint's socket (data, SETUP, RTTM) as it
takes the endpoint on, the sender each send endpoint's (status messages, NAKs, RTTM); both
unregister on their own thread before they release the endpoint to the conductor, which closes
the socket later, so the poll never holds a closed (or reused) descriptor. In
``SHARED_NETWORK`` and ``SHARED`` threading modes one waiter serves both agents. Work that comes
through shared memory (a publication's new data for the sender, the conductor's commands) does
not end the park; those keep the park's latency.

``poll`` counts its timeout in whole milliseconds (CPython rounds a fraction up), so parks
shorter than :data:`MIN_POLL_PARK_S` (the backoff's first ones, microseconds while traffic
pauses) stay in ``time.sleep``: rounding them up to 1 ms would slow a busy path, and a
datagram waits at most that short park anyway.

The readiness is level-triggered: when the agent left datagrams unread (it reads a bounded
number per cycle) it did work, so it does not park, and a park that finds a socket readable
returns at once.

A park that ran to its timeout with no socket readable leaves :attr:`SocketWaiter.quiet` set
until the next idle (:meth:`SocketWaiter.idle_strategy` clears it on every idle): the duty
cycle after it skips its socket reads. A read that finds nothing raises and catches
``BlockingIOError`` in Python, the dearest part of an idle cycle (about 30 of the shared driver
thread's 150 us per wake-up, measured). A datagram that arrives after the poll returned makes
the next park return at once, so it waits one duty cycle longer, not a park.
"""

from __future__ import annotations

import select
import socket
import time
from typing import Final

from aeromq.transport.concurrent.idle_strategy import IdleStrategy

__all__ = ["MIN_POLL_PARK_S", "SocketWaiter"]

MIN_POLL_PARK_S: Final = 0.001
"""Parks from this long wait in ``poll``; shorter ones sleep (see module)."""
_READABLE: Final = select.POLLIN | select.POLLPRI
_MS_PER_S: Final = 1000


class SocketWaiter:
    """Polls registered sockets for readability; :meth:`wait` is an idle strategy's park."""

    __slots__ = ("_fds", "_poll", "quiet")

    def __init__(self) -> None:
        self._poll = select.poll()
        self._fds: dict[int, int] = {}
        self.quiet = False
        """The last idle parked here until its timeout and no socket was readable (see module)."""

    @property
    def socket_count(self) -> int:
        """How many sockets are registered."""
        return len(self._fds)

    def register(self, sock: socket.socket) -> None:
        """Wake :meth:`wait` when ``sock`` becomes readable (a second registration counts)."""
        fd = sock.fileno()
        count = self._fds.get(fd, 0)
        if count == 0:
            self._poll.register(fd, _READABLE)
        self._fds[fd] = count + 1

    def unregister(self, sock: socket.socket) -> None:
        """Undo one :meth:`register`; call before the socket is closed."""
        fd = sock.fileno()
        count = self._fds.get(fd, 0)
        if count <= 1:
            self._fds.pop(fd, None)
            if count == 1:
                self._poll.unregister(fd)
        else:
            self._fds[fd] = count - 1

    def wait(self, timeout_s: float) -> None:
        """Block until a registered socket is readable or ``timeout_s`` has passed (whole
        milliseconds, rounded down); a park under :data:`MIN_POLL_PARK_S`, or one with no
        socket registered, sleeps."""
        if timeout_s < MIN_POLL_PARK_S or not self._fds:
            time.sleep(timeout_s)
        else:
            self.quiet = not self._poll.poll(int(timeout_s * _MS_PER_S))

    def idle_strategy(self, parking: IdleStrategy) -> IdleStrategy:
        """``parking`` (whose park must already be :meth:`wait`) clearing :attr:`quiet` first
        on every idle, so that only a park that just timed out leaves it set."""
        return _ClearingIdleStrategy(parking, self)

    def __repr__(self) -> str:
        return f"SocketWaiter(socket_count={len(self._fds)})"


class _ClearingIdleStrategy:
    """An idle strategy that clears its waiter's ``quiet`` before idling (see module)."""

    __slots__ = ("_parking", "_waiter")

    def __init__(self, parking: IdleStrategy, waiter: SocketWaiter) -> None:
        self._parking = parking
        self._waiter = waiter

    @property
    def alias(self) -> str:
        return self._parking.alias

    def idle(self, work_count: int = 0) -> None:
        self._waiter.quiet = False
        self._parking.idle(work_count)

    def reset(self) -> None:
        self._parking.reset()

    def __repr__(self) -> str:
        return f"{self._parking!r} in {self._waiter!r}"
