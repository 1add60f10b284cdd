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
pauses) wait in ``select`` instead, whose timeout counts in microseconds: rounding them up to
1 ms would slow a busy path. They were a ``time.sleep`` once, which no datagram ends: on a
loaded 2-core VM such a sleep of a few microseconds often lasted 0.2-1.7 ms (measured in a
broker group's replication, where every frame and ACK crossed two of them), and the driver
goes through ten of them after each piece of work before its parks reach 1 ms.

An in-process publisher can end the park too: :meth:`SocketWaiter.wake` (any thread) writes
to an ``eventfd`` the poll also waits on, so the sender sends a publication's new data at once
rather than after the park (an embedded driver's replication publisher rings it after its
offers: :meth:`~transport.driver.MediaDriver.wake_network`; a client's offer to a network
publication of a driver in its process: ``transport.concurrent.network_wakes``). A wake that
finds the thread busy costs one ``write``; the next park returns at once and drains it. Wakes
coalesce: until a park drains the eventfd, further wakes write nothing (a flag the park clears
after it read the eventfd: a wake that finds the flag still set wrote its work before the
park ended, and the duty cycle that follows sees it; cleared before the read, a wake between
the clear and the read would be drained with the flag left set, and no wake would write
again), so a publisher that wakes after every offer pays one ``write`` per duty cycle of the
thread, not one per offer. Another process's client
ends it the same way, through a wake socket the poll also waits on
(:meth:`SocketWaiter.add_wake_socket`, ``transport.concurrent.wake_socket``).

The readiness is level-triggered: when the agent left datagrams unread (it reads a bounded
number per cycle) it did work, so it does not park, and a park that finds a socket readable
returns at once.

A park that ended with no socket readable (its timeout, or a wake) leaves
:attr:`SocketWaiter.quiet` set (:attr:`SocketWaiter.ready` empty) until the next idle
(:meth:`SocketWaiter.idle_strategy` clears it on every idle): the duty cycle after it skips its
socket reads. A read that finds nothing raised and caught
``BlockingIOError`` in Python once, the dearest part of an idle cycle (about 30 of the shared
driver thread's 150 us per wake-up, measured); it returns None now
(``transport/driver/udp/_datagram.c``), still a system call and a Python call. A datagram that arrives after the poll returned makes
the next park return at once, so it waits one duty cycle longer, not a park.

A park that ended with some sockets readable names them in :attr:`SocketWaiter.ready` (their
descriptors; None: not known, read them all): the duty cycle after it reads those only. A
broker's driver reads three sockets or more (its ingress, and one send endpoint a UDP client's
answers go to), most of them empty on any one cycle, each empty read a system call.

After a cycle that worked no park follows: the next cycle runs at once and would read every
socket. With :attr:`SocketWaiter.look_after_work` (the one thread of a driver's sender and
receiver, ``SHARED`` and ``SHARED_NETWORK``: its cycles after work are most of its cycles) the idle
polls the sockets without waiting instead (one ``poll`` call) and sets :attr:`SocketWaiter.ready`
to the readable ones (:attr:`SocketWaiter.quiet` when there are none), so that cycle reads
only those, as after a park. A cycle that worked may be followed by a park after all (a
strategy that parks once its owner says the cycle settled,
``BackoffIdleStrategy.settled_after_work``): then the park sets :attr:`SocketWaiter.ready`,
and no look is taken.
"""

from __future__ import annotations

import os
import select
import socket
import time
import weakref
from collections.abc import Iterable
from typing import Final

from aeromq.transport.concurrent.idle_strategy import IdleStrategy
from aeromq.transport.concurrent.wake_socket import drain_wake_socket

__all__ = ["MIN_POLL_PARK_S", "SocketWaiter"]

MIN_POLL_PARK_S: Final = 0.001
"""Parks from this long wait in ``poll``; shorter ones sleep (see module)."""
_READABLE: Final = select.POLLIN | select.POLLPRI
_MS_PER_S: Final = 1000


class SocketWaiter:
    """Polls registered sockets for readability; :meth:`wait` is an idle strategy's park."""

    __slots__ = (
        "__weakref__",
        "_closed",
        "_eventfd",
        "_fds",
        "_poll",
        "_selected",
        "_wake_pending",
        "_wake_sockets",
        "look_after_work",
        "ready",
        "wakes",
    )

    def __init__(self) -> None:
        self._poll = select.poll()
        self._fds: dict[int, int] = {}
        self._eventfd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._closed = False
        weakref.finalize(self, os.close, self._eventfd)  # never reused while a waker holds us
        self._poll.register(self._eventfd, _READABLE)
        self._selected = [self._eventfd]
        """The descriptors a short park selects on: the eventfd and the sockets."""
        self._wake_sockets: dict[int, socket.socket] = {}
        """Wake sockets by descriptor (:meth:`add_wake_socket`): drained, not counted."""
        self.ready: set[int] | None = None
        """The registered sockets' descriptors the last park (or look after work) found
        readable; None: not known, read every socket (see module)."""
        self.wakes = 0
        """Parks a :meth:`wake` ended (or found pending)."""
        self._wake_pending = False  # written to the eventfd, not yet drained (see module)
        self.look_after_work = False
        """After a cycle that worked (no park follows), poll the sockets without waiting and
        set :attr:`ready` to the readable ones (see module): for a thread whose cycles after
        work are many (one that hosts agents)."""

    def close(self) -> None:
        """Stop waking: :meth:`wake` is a no-op from now on and parks are plain sleeps (the
        eventfd itself is released with the waiter, so a late wake never writes to a reused
        descriptor). Idempotent."""
        self._closed = True

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
            self._selected.append(fd)
        self._fds[fd] = count + 1

    def unregister(self, sock: socket.socket) -> None:
        """Undo one :meth:`register`; call before the socket is closed."""
        fd = sock.fileno()
        count = self._fds.get(fd, 0)
        if count <= 1:
            self._fds.pop(fd, None)
            if count == 1:
                self._poll.unregister(fd)
                self._selected.remove(fd)
        else:
            self._fds[fd] = count - 1

    def add_wake_socket(self, sock: socket.socket) -> None:
        """Wake :meth:`wait` when a datagram comes to ``sock`` (a driver's wake socket, which
        another process's client sends after a command: ``transport.concurrent.wake_socket``),
        as :meth:`wake` does: the park drains it and it does not count as a readable socket."""
        fd = sock.fileno()
        self._wake_sockets[fd] = sock
        self._poll.register(fd, _READABLE)
        self._selected.append(fd)

    def wake(self) -> None:
        """End the current or next park at once (any thread; see module)."""
        if not self._closed and not self._wake_pending:
            self._wake_pending = True
            try:  # noqa: SIM105  (contextlib.suppress: three Python calls a wake)
                os.eventfd_write(self._eventfd, 1)
            except OSError:  # the counter is full
                pass

    def wait(self, timeout_s: float) -> None:
        """Block until a registered socket is readable, :meth:`wake` is called, or
        ``timeout_s`` has passed (whole milliseconds, rounded down; a park under
        :data:`MIN_POLL_PARK_S` in microseconds, in ``select``)."""
        if self._closed:
            time.sleep(timeout_s)
            self.ready = None
            return
        eventfd = self._eventfd
        ready: Iterable[tuple[int, int]]  # (descriptor, events), as poll gives them
        if timeout_s < MIN_POLL_PARK_S:
            try:
                fds = select.select(self._selected, (), (), timeout_s)[0]
            except ValueError:  # a descriptor past select's FD_SETSIZE: sleep, as before
                time.sleep(timeout_s)
                self.ready = None
                return
            ready = zip(fds, fds, strict=True)  # the events unused: any int
        else:  # read in place: no list made of poll's pairs (a Python call a park)
            ready = self._poll.poll(int(timeout_s * _MS_PER_S))
        readable: set[int] = set()
        wake_sockets = self._wake_sockets
        for fd, _ in ready:
            if fd == eventfd:
                try:  # noqa: SIM105  (contextlib.suppress: three Python calls a park)
                    os.eventfd_read(eventfd)
                except OSError:  # drained by a racing wait: nothing to read
                    pass
                self._wake_pending = False  # after the read (see module)
            elif fd in wake_sockets:
                drain_wake_socket(wake_sockets[fd])
            else:
                readable.add(fd)
                continue
            self.wakes += 1
        self.ready = readable

    @property
    def quiet(self) -> bool:
        """The last park (or look after work) found no registered socket readable (see
        module): :attr:`ready` known and empty."""
        return self.ready is not None and not self.ready

    def look(self) -> None:
        """Set :attr:`ready` (so :attr:`quiet`) from a poll that does not wait (after a cycle
        that worked: see module); a pending wake is left for the park to drain."""
        if self._closed:
            self.ready = None
            return
        eventfd = self._eventfd
        wake_sockets = self._wake_sockets
        readable = {fd for fd, _ in self._poll.poll(0) if fd != eventfd and fd not in wake_sockets}
        self.ready = readable

    def idle_strategy(self, parking: IdleStrategy) -> IdleStrategy:
        """``parking`` (whose park must already be :meth:`wait`) clearing :attr:`ready` first
        on every idle, so that only the park (or a look after work) sets it."""
        return _ClearingIdleStrategy(parking, self)

    def __repr__(self) -> str:
        return f"SocketWaiter(socket_count={len(self._fds)})"


class _ClearingIdleStrategy:
    """An idle strategy that clears its waiter's ``ready`` before idling (see module)."""

    __slots__ = ("_parking", "_waiter")

    def __init__(self, parking: IdleStrategy, waiter: SocketWaiter) -> None:
        self._parking = parking
        self._waiter = waiter

    @property
    def alias(self) -> str:
        return self._parking.alias

    def idle(self, work_count: int = 0) -> None:
        waiter = self._waiter
        waiter.ready = None
        self._parking.idle(work_count)
        if work_count > 0 and waiter.ready is None and waiter.look_after_work:
            waiter.look()  # it did not park (a park sets ready): the next cycle runs at once

    def reset(self) -> None:
        self._parking.reset()

    def __repr__(self) -> str:
        return f"{self._parking!r} in {self._waiter!r}"
