"""``NetworkTurn``: a publisher of this process sends its own frames while the network thread parks.

A media driver's sender runs on its network thread, which parks in a poll on its sockets
between duty cycles (``udp/socket_waiter.py``). A client of the same process that offers to a
network publication used to end that park (an ``eventfd`` write) and go to sleep; the network
thread then woke, ran a whole duty cycle (conductor, receiver, hosted agents, sender) and sent
the frame. On a 2-core virtual machine that hand-off is a thread wake-up a message each way:
the ``eventfd`` write itself often cost the publisher its core (40-100 us, profiled) while the
woken thread took it, and the network thread's cycle then ran for one frame.

The turn is the right to run the sender. The network thread holds it through each duty cycle
(:meth:`NetworkTurn.agent` wraps the agent it runs) and lets go of it before it parks. After an
offer, a publisher of this process takes it if it is free (:meth:`NetworkTurn.send_or_wake`,
never blocking), sends what every publication may send now on its own thread
(``Sender.send_now``: data within the window, a due SETUP or heartbeat; no commands, no socket
reads), and lets go; only when the turn was taken (the network thread is in a cycle, which
then sends the frame itself: the wake makes it run one more cycle if it was about to park) or
the send left frames it may still send does it wake the network thread as before. The network
thread still wakes for what comes over the network (status messages, NAKs, the answers), which
ends its park by itself.

Why it is safe: everything the sender touches (its publications, their positions and timers,
the send endpoints) is the network thread's; with the turn held, no other thread runs any of
it, so a publisher that holds the turn is, for that while, the network thread. A Python
``threading.Lock`` is both the mutual exclusion and the memory fence. The network thread's own
offers (a hosted agent's) find the turn taken by their own thread and wake, as before: the
lock is not re-entrant and the attempt does not block. Once the driver closes
(:meth:`NetworkTurn.close`, before its threads stop) the turn sends nothing more, and the
network thread's ``on_close`` (which unmaps the publications' logs) takes the turn first, so a
send under way ends before it.

What it costs: the network thread takes and releases an uncontended lock a duty cycle; the
publisher runs the sender's send step (a few Python calls a publication) in place of an
``eventfd`` write. An error of the send step (a socket's) is the driver's to record, as in its
own cycle, and the network thread is woken to go on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from aeromq.transport.concurrent.agent import Agent
from aeromq.transport.driver.udp.sender import Sender

__all__ = ["NetworkTurn"]


class NetworkTurn:
    """The right to run ``sender`` (see module); ``wake`` ends the network thread's park and
    ``record_error`` takes what the send step raises."""

    __slots__ = ("_closed", "_lock", "_record_error", "_sender", "_wake")

    def __init__(
        self,
        sender: Sender,
        wake: Callable[[], None],
        record_error: Callable[[BaseException], None],
    ) -> None:
        self._sender = sender
        self._wake = wake
        self._record_error = record_error
        self._lock = threading.Lock()
        self._closed = False

    def agent(self, agent: Agent) -> Agent:
        """``agent`` (the one that runs the sender on the network thread) holding the turn
        through each of its duty cycles."""
        return _TurnHolder(agent, self._lock)

    def send_or_wake(self) -> None:
        """After an offer to a network publication of this driver (any thread of this process):
        send it now on this thread if the turn is free, else wake the network thread (see
        module). Never blocks, never raises."""
        lock = self._lock
        if not lock.acquire(False):
            self._wake()  # in a cycle: it sends the frame (or one more cycle will)
            return
        try:
            if self._closed:
                return
            sender = self._sender
            sender.send_now()
            if not sender.left_work():
                return
        except Exception as error:
            self._record_error(error)
        finally:
            lock.release()
        self._wake()

    def close(self) -> None:
        """The driver closes, before its threads stop: no publisher sends from now on. This
        call does not wait (any thread may make it); a publisher sending now finishes before
        the logs go, since the network thread's ``on_close``, which unmaps them, takes the
        turn first."""
        self._closed = True


class _TurnHolder:
    """An agent that holds a lock through each duty cycle (:meth:`NetworkTurn.agent`)."""

    __slots__ = ("_agent", "_do_work", "_lock")

    def __init__(self, agent: Agent, lock: threading.Lock) -> None:
        self._agent = agent
        self._do_work = agent.do_work
        self._lock = lock

    @property
    def role_name(self) -> str:
        return self._agent.role_name

    def on_start(self) -> None:
        self._agent.on_start()

    def do_work(self) -> int:
        with self._lock:
            return self._do_work()

    def on_close(self) -> None:
        with self._lock:
            self._agent.on_close()
