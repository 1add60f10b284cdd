"""``MediaDriver``: starts the driver's agents over a fresh directory and stops them cleanly.

Aeron's ``MediaDriver.launch`` / ``launchEmbedded``. Launching:

0. removes the directories that dead embedded drivers left in ``/dev/shm``, whichever kind of
   driver starts (:mod:`~transport.driver.stale_dirs`);
1. prepares the directory (:func:`~transport.driver.aeron_dir.prepare_aeron_dir`): refuses a
   live driver with :class:`~transport.ActiveDriverError`, replaces a stopped one's files with a
   logged warning, takes the directory's lock (:mod:`~transport.driver.driver_lock`, held until
   the driver has closed: a crash lets go of it) and lays out ``publications/`` and ``images/``;
2. creates ``cnc.dat`` and sets the conductor up in it (system counters, heartbeat) under a
   temporary name, then renames it into place: a client that finds ``cnc.dat`` finds its version
   (written last) and a live heartbeat together;
3. runs the agents (the conductor, and the UDP sender and receiver it owns) as the threading
   mode says: each on its own daemon thread (``DEDICATED``), the sender and receiver together
   on one (``SHARED_NETWORK``), all three composed on one (``SHARED``), or none at all
   (``INVOKER``: the caller drives all three through :attr:`shared_agent_invoker`). A thread
   that runs the sender or the receiver parks in a
   :class:`~transport.driver.udp.socket_waiter.SocketWaiter` on their sockets (one per thread),
   so a datagram ends its park at once.

A driver embedded in a process that also publishes and subscribes (a broker's replication)
can wake its network thread and be woken by it, where over shared memory alone both sides would
find each other's work only at their next timed poll: :meth:`MediaDriver.wake_network` ends the
sender's park (an offer just made), :meth:`MediaDriver.send_network` sends the offered frames
on the caller's thread while the network thread parks and ends its park otherwise (this
process's clients call it after each offer to an exclusive network publication of this
driver, found by its directory: :mod:`~transport.concurrent.network_wakes`; the network thread
holds the right to run the sender through each duty cycle, :mod:`~transport.driver.network_turn`),
and the receiver rings :attr:`MediaDriver.data_doorbell`
after each duty cycle that received data (an in-process subscriber sleeps on it);
:attr:`MediaDriver.network_bell` is the wake in a doorbell's shape, for an agent's end-of-cycle
rings. When every publisher wakes it so, ``MediaDriverContext.park_when_settled`` lets the network thread
park its longest at once while its sender and receiver owe nothing soon (``owes_soon``: a resend,
a NAK timer, a status message due or about to be): it wakes for datagrams, wakes and timers, not
for the short parks of a backoff. It parks so right after a cycle that worked, not after the
empty cycle that would follow it, when each agent of the thread says that cycle left nothing
that ends no park (their ``left_work``: the conductor's commands past its drain limit, a
publication limit moved, an image request queued; the sender's frames it may send now; the
network agents' queued commands; a hosted agent's own say) and ``owes_soon`` holds for none:
a datagram or a wake that came during the cycle leaves its socket readable or the ``eventfd``
written, and the park returns at once (``BackoffIdleStrategy.settled_after_work``). Over UDP
at 100 msgs/s that halved the duty cycles of a client's driver thread (4 a message to 2) and
took the broker's from 6 to 3.3.
:meth:`MediaDriver.in_process` finds the running driver of a directory in this process.

**Hosted agents** (:meth:`MediaDriver.host_agent`, Aeron's way of running a client's agent with
the driver's, as a ``CompositeAgent`` on one ``AgentRunner``): in ``SHARED`` and
``SHARED_NETWORK`` modes the thread that runs the sender and the receiver runs, in each duty
cycle, the receiver, then the agents hosted on it (a
:class:`~transport.concurrent.dynamic_composite_agent.DynamicCompositeAgent`, added and removed
while it runs), then the sender, then the status messages their reads made due (``Receiver.after_reads``),
then their ``after_send`` (the sender again while it sends, first, when one says its
``after_send_due``): what the receiver took is theirs in the same cycle, what they offer goes out
in it, and so does the word to its sender that they read it. They end the thread's park with
:meth:`wake_network`, say through their ``settled`` whether it may park its longest, and while
any is hosted a park until due lasts at most :data:`HOSTED_PARK_NS` (their clocks' duties). A
broker group's replication agent runs so (``broker.replication.agent``).

An idle driver (``MediaDriverContext.park_until_due``, ``SHARED`` mode: a broker's) parks until
its conductor's next timer while it streams nothing: other processes' clients end that park
with a datagram to its wake socket after each command (:mod:`~transport.concurrent.wake_socket`),
and it rings the doorbells of its in-process clients' conductors after each cycle that told the
clients something (:meth:`MediaDriver.add_notice_bell`), so they too sleep until they have work.

``close()`` (idempotent; also the context manager's exit) stops the agents with a bounded join
(the network agents before the conductor, which then closes the sockets),
unmaps cnc.dat, deletes the directory if ``dir_delete_on_shutdown`` and lets go of its lock. A TERMINATE_DRIVER that
the context's validator accepts stops the agent by itself; :meth:`wait_for_termination` lets a
process wait for that, and ``close()`` then finishes the job.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import socket
import tempfile
import threading
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import ClassVar, Final

from aeromq.transport._errors import TransportStateError
from aeromq.transport.cnc import CNC_FILE, CncFile
from aeromq.transport.concurrent.agent import (
    Agent,
    AgentInvoker,
    AgentRunner,
    CompositeAgent,
    ErrorHandler,
)
from aeromq.transport.concurrent.doorbell import HAS_FUTEX, Doorbell, Ringable
from aeromq.transport.concurrent.dynamic_composite_agent import DynamicCompositeAgent, HostedAgent
from aeromq.transport.concurrent.idle_strategy import (
    BackoffIdleStrategy,
    IdleStrategy,
    SleepingIdleStrategy,
)
from aeromq.transport.concurrent.network_wakes import (
    register_network_wake,
    unregister_network_wake,
)
from aeromq.transport.concurrent.wake_socket import WAKE_SOCKET_FILE, bind_wake_socket
from aeromq.transport.driver.aeron_dir import prepare_aeron_dir
from aeromq.transport.driver.conductor import DriverConductor
from aeromq.transport.driver.context import MediaDriverContext, ThreadingMode
from aeromq.transport.driver.network_turn import NetworkTurn
from aeromq.transport.driver.stale_dirs import EMBEDDED_DIR_PREFIX, remove_stale_driver_dirs
from aeromq.transport.driver.udp.receiver import Receiver
from aeromq.transport.driver.udp.sender import Sender
from aeromq.transport.driver.udp.socket_waiter import SocketWaiter

__all__ = ["HOSTED_PARK_NS", "MediaDriver", "NetworkBell", "embedded_dir_root"]

_LOG = logging.getLogger(__name__)
_INIT_DIR = ".cnc-init"
HOSTED_PARK_NS: Final = 50_000_000
"""The longest park of a thread that hosts agents, while the driver streams nothing: their
clocks' duties run at most this late (a replication agent's fence check, its FETCH retry)."""


class MediaDriver:
    """A running media driver. Build it with :meth:`launch` or :meth:`launch_embedded`."""

    _running: ClassVar[weakref.WeakValueDictionary[str, MediaDriver]] = (
        weakref.WeakValueDictionary()
    )

    def __init__(self) -> None:
        raise TypeError("use MediaDriver.launch(context) or MediaDriver.launch_embedded()")

    @classmethod
    def in_process(cls, aeron_dir: str) -> MediaDriver | None:
        """The driver running in ``aeron_dir`` in this process, if one is (see module)."""
        driver = cls._running.get(os.path.realpath(aeron_dir))
        return None if driver is None or driver.is_closed else driver

    @classmethod
    def launch(cls, context: MediaDriverContext | None = None) -> MediaDriver:
        """Start a driver in ``context.aeron_dir`` (default: the environment's context); the
        directories that dead embedded drivers left are removed first."""
        base = context if context is not None else MediaDriverContext.from_env()
        _remove_stale_dirs(base)
        driver = cls.__new__(cls)
        driver._start(base)
        return driver

    @classmethod
    def launch_embedded(cls, context: MediaDriverContext | None = None) -> MediaDriver:
        """Start a driver in a fresh unique directory (under /dev/shm), deleted on close; the
        directories that dead embedded drivers left there are removed first
        (:mod:`~transport.driver.stale_dirs`)."""
        base = context if context is not None else MediaDriverContext.from_env()
        _remove_stale_dirs(base)
        aeron_dir = tempfile.mkdtemp(prefix=EMBEDDED_DIR_PREFIX, dir=embedded_dir_root())
        try:
            driver = cls.__new__(cls)
            driver._start(
                dataclasses.replace(base, aeron_dir=aeron_dir, dir_delete_on_shutdown=True)
            )
            return driver
        except BaseException:
            shutil.rmtree(aeron_dir, ignore_errors=True)
            raise

    def _start(self, context: MediaDriverContext) -> None:
        self._lock = threading.Lock()
        self._closed = False
        self._terminated = threading.Event()
        self._runners: list[AgentRunner] = []
        self._invoker: AgentInvoker | None = None
        self._hosted: DynamicCompositeAgent | None = None
        self._waiters: list[SocketWaiter] = []
        self._sender_waiter: SocketWaiter | None = None
        self._turn: NetworkTurn | None = None
        self._wake_socket: socket.socket | None = None
        self.data_doorbell: Doorbell | None = Doorbell.allocate() if HAS_FUTEX else None
        """Rung by the receiver after each duty cycle that received data (see module)."""
        user_hook = context.termination_hook

        def on_termination() -> None:
            self._terminated.set()
            if user_hook is not None:
                user_hook()

        self.context = context
        self._conductor_context = dataclasses.replace(context, termination_hook=on_termination)
        self._dir_lock = prepare_aeron_dir(
            context.aeron_dir,
            delete_on_start=context.dir_delete_on_start,
            driver_timeout_ms=context.driver_timeout_ms,
            now_ms=context.epoch_clock.time_ms(),
            file_mode=context.file_mode,
        )
        try:
            self._cnc = self._create_cnc()
            try:
                self.conductor = DriverConductor(self._conductor_context, self._cnc)
                self._publish_cnc()
            except BaseException:
                self._cnc.close()
                raise
            self._start_agent()
        except BaseException:
            if context.dir_delete_on_shutdown:
                shutil.rmtree(context.aeron_dir, ignore_errors=True)
            self._dir_lock.release()
            raise
        MediaDriver._running[os.path.realpath(context.aeron_dir)] = self
        _LOG.info("media driver started: aeron_dir=%s pid=%s", context.aeron_dir, os.getpid())

    def _create_cnc(self) -> CncFile:
        context = self.context
        return CncFile.create(
            os.path.join(context.aeron_dir, _INIT_DIR),
            to_driver_buffer_length=context.to_driver_buffer_length,
            to_clients_buffer_length=context.to_clients_buffer_length,
            counters_values_buffer_length=context.counters_values_buffer_length,
            error_log_buffer_length=context.error_buffer_length,
            client_liveness_timeout_ns=context.client_liveness_timeout_ns,
            start_timestamp_ms=context.epoch_clock.time_ms(),
            pid=os.getpid(),
            file_page_size=context.file_page_size,
            file_mode=context.file_mode,
        )

    def _publish_cnc(self) -> None:
        init_dir = os.path.join(self.context.aeron_dir, _INIT_DIR)
        os.rename(os.path.join(init_dir, CNC_FILE), self.context.cnc_file_path())
        os.rmdir(init_dir)

    def _start_agent(self) -> None:
        conductor = self.conductor
        context = self.context
        sender = conductor.udp.sender
        receiver = conductor.udp.receiver
        receiver.data_doorbell = self.data_doorbell
        mode = context.threading_mode
        if mode is ThreadingMode.INVOKER:
            self._invoker = AgentInvoker(
                conductor.record_error,
                conductor.errors_counter,
                CompositeAgent([conductor, sender, receiver]),
            )
            self._invoker.start()
            return
        # Network runners first in the list: close() stops them before the conductor.
        settles = context.park_when_settled
        if mode is ThreadingMode.DEDICATED:
            sender.waiter, receiver.waiter = SocketWaiter(), SocketWaiter()
            turn = self._turn = NetworkTurn(sender, sender.waiter.wake, conductor.record_error)
            self._add_runner(
                _parked_in(
                    context.new_sender_idle_strategy(), sender.waiter, *_settling(settles, sender)
                ),
                turn.agent(sender),
            )
            self._add_runner(
                _parked_in(
                    context.new_receiver_idle_strategy(),
                    receiver.waiter,
                    *_settling(settles, receiver),
                ),
                receiver,
            )
            self._add_runner(context.new_conductor_idle_strategy(), conductor)
        else:
            sender.waiter = receiver.waiter = SocketWaiter()
            sender.waiter.look_after_work = True  # one poll, not a read of every socket
            turn = self._turn = NetworkTurn(sender, sender.waiter.wake, conductor.record_error)
            shared = mode is ThreadingMode.SHARED
            hosted = self._hosted = DynamicCompositeAgent("hosted", sender.waiter.wake)
            idle = context.new_conductor_idle_strategy() if shared else None
            if isinstance(idle, BackoffIdleStrategy) and context.park_until_due:
                self._wake_socket = bind_wake_socket(context.aeron_dir, context.file_mode)
                if self._wake_socket is not None:
                    sender.waiter.add_wake_socket(self._wake_socket)
                    idle.idle_for = self._idle_for_ns
            # received, taken, sent (with the status messages the hosted agents' reads made
            # due), then what they do once it is sent: one cycle
            followed = hosted.followed(sender, receiver.after_reads)
            network: list[Agent] = [receiver, hosted, followed]
            self._add_runner(
                _parked_in(
                    idle if idle is not None else context.new_shared_network_idle_strategy(),
                    sender.waiter,
                    *_settling(
                        settles,
                        sender,
                        receiver,
                        hosted=hosted,
                        conductor=conductor if shared else None,
                    ),
                ),
                turn.agent(CompositeAgent([conductor, *network] if shared else network)),
            )
            if not shared:
                self._add_runner(context.new_conductor_idle_strategy(), conductor)
        self._sender_waiter = sender.waiter
        if self._turn is not None:  # this process's clients send (or wake it) after UDP offers
            register_network_wake(context.aeron_dir, self._turn.send_or_wake)
        self._waiters = [sender.waiter] if sender.waiter is not None else []
        if receiver.waiter is not None and receiver.waiter is not sender.waiter:
            self._waiters.append(receiver.waiter)
        for runner in self._runners:
            runner.start()

    def _add_runner(self, idle_strategy: IdleStrategy, agent: Agent) -> None:
        conductor = self.conductor
        self._runners.append(
            AgentRunner(idle_strategy, conductor.record_error, conductor.errors_counter, agent)
        )

    # ----------------------------------------------------------------------------------------

    @property
    def aeron_dir(self) -> str:
        """The directory of the driver's cnc.dat and log files."""
        return self.context.aeron_dir

    @property
    def shared_agent_invoker(self) -> AgentInvoker:
        """The invoker in ``INVOKER`` mode: ``invoke()`` runs a duty cycle of every agent."""
        if self._invoker is None:
            raise TransportStateError(
                "no agent invoker: the threading mode is not INVOKER",
                threading_mode=self.context.threading_mode.value,
            )
        return self._invoker

    def host_agent(
        self, agent: Agent, error_handler: ErrorHandler, settled: Callable[[], bool] | None = None
    ) -> HostedAgent | None:
        """Run ``agent`` on the thread of the driver's sender and receiver, between the
        receiver's and the sender's work in each duty cycle (see module), until its handle's
        ``close()``; None when no thread runs both (``DEDICATED``, ``INVOKER``). ``settled``
        says whether the agent may wait until woken (:meth:`wake_network`, a datagram) rather
        than the backoff's short parks. From any thread."""
        hosted = self._hosted
        if hosted is None:
            return None
        return hosted.add(agent, error_handler, settled)

    @property
    def hosts_agents(self) -> bool:
        """Whether :meth:`host_agent` would host an agent (one thread runs the network)."""
        return self._hosted is not None

    def _idle_for_ns(self) -> int:
        """The conductor's ``idle_for_ns``, no longer than :data:`HOSTED_PARK_NS` while the
        thread hosts agents (their clocks' duties: see module)."""
        idle_for_ns = self.conductor.idle_for_ns()
        hosted = self._hosted
        if hosted is not None and hosted.hosts_any:
            return min(idle_for_ns, HOSTED_PARK_NS)
        return idle_for_ns

    def add_notice_bell(self, bell: Ringable) -> None:
        """Ring ``bell`` after each duty cycle that told the clients something (a client's
        conductor in this process that sleeps on it until then; see module). Before the first
        client connects: the conductor's thread reads the list."""
        self.conductor.notice_bells.append(bell)

    def wake_network(self) -> None:
        """End the park of the thread that runs the sender (an in-process publisher has just
        offered data; see module). From any thread; a no-op in ``INVOKER`` mode."""
        waiter = self._sender_waiter
        if waiter is not None:
            waiter.wake()

    def send_network(self) -> None:
        """After an offer to a network publication of this driver: send its frames on this
        thread if the network thread is parked, else end its park
        (:meth:`~transport.driver.network_turn.NetworkTurn.send_or_wake`). From any thread;
        :meth:`wake_network` when the driver has no such thread (``INVOKER``)."""
        turn = self._turn
        if turn is not None:
            turn.send_or_wake()
        else:
            self.wake_network()

    @property
    def network_bell(self) -> NetworkBell:
        """:meth:`wake_network` as a ring (the broker's session agent rings it once per duty cycle): for a
        publisher in this process that offers from an agent's cycle (see module)."""
        return NetworkBell(self)

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._closed

    @property
    def is_terminated(self) -> bool:
        """True once a TERMINATE_DRIVER command was accepted."""
        return self._terminated.is_set()

    def wait_for_termination(self, timeout_s: float | None = None) -> bool:
        """Wait for an accepted TERMINATE_DRIVER; True if it came within ``timeout_s``."""
        return self._terminated.wait(timeout_s)

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the agents (bounded joins), unmap cnc.dat, delete the dir if configured."""
        with self._lock:
            if self._closed:
                return
            if self._turn is not None:
                unregister_network_wake(self.context.aeron_dir, self._turn.send_or_wake)
                self._turn.close()
            for waiter in self._waiters:
                waiter.wake()  # a thread parked until its next timer stops now
            for runner in self._runners:
                runner.close(timeout_s)
            if self._invoker is not None:
                self._invoker.close()
            self._closed = True
            for waiter in self._waiters:
                waiter.close()
            if self._wake_socket is not None:
                self._wake_socket.close()
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.context.aeron_dir, WAKE_SOCKET_FILE))
            self._cnc.close()
            if self.context.dir_delete_on_shutdown:
                shutil.rmtree(self.context.aeron_dir, ignore_errors=True)
            self._dir_lock.release()
        _LOG.info("media driver closed: aeron_dir=%s", self.context.aeron_dir)

    def __enter__(self) -> MediaDriver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "running"
        return f"MediaDriver(aeron_dir={self.context.aeron_dir!r}, {state})"


class NetworkBell:
    """Ends the park of ``driver``'s network thread when rung (:meth:`MediaDriver.wake_network`),
    in the shape of a doorbell (``transport.concurrent.doorbell.Ringable``)."""

    __slots__ = ("_driver",)

    def __init__(self, driver: MediaDriver) -> None:
        self._driver = driver

    def ring(self) -> bool:
        """Send what was offered, or wake the network thread (:meth:`MediaDriver.send_network`);
        False: whether it slept is not known."""
        self._driver.send_network()
        return False


def embedded_dir_root() -> str:
    """Where embedded drivers make their directories: /dev/shm, else the temp directory."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


def _remove_stale_dirs(context: MediaDriverContext) -> None:
    remove_stale_driver_dirs(
        embedded_dir_root(),
        driver_timeout_ms=context.driver_timeout_ms,
        now_ms=context.epoch_clock.time_ms(),
    )


def _parked_in(
    idle_strategy: IdleStrategy,
    waiter: SocketWaiter,
    settled: Callable[[], bool] | None,
    settled_after_work: Callable[[], bool] | None,
) -> IdleStrategy:
    """``idle_strategy``, parking in ``waiter`` if it parks at all, and, a backoff, parking its
    longest at once while ``settled`` says so, and right after a cycle that worked when
    ``settled_after_work`` says so (see module)."""
    if isinstance(idle_strategy, BackoffIdleStrategy | SleepingIdleStrategy):
        idle_strategy.park_with(waiter.wait)
        if isinstance(idle_strategy, BackoffIdleStrategy):
            idle_strategy.settled = settled
            idle_strategy.settled_after_work = settled_after_work
        return waiter.idle_strategy(idle_strategy)
    return idle_strategy


def _settling(
    settles: bool,
    *agents: Sender | Receiver,
    hosted: DynamicCompositeAgent | None = None,
    conductor: DriverConductor | None = None,
) -> tuple[Callable[[], bool] | None, Callable[[], bool] | None]:
    """The ``settled`` and ``settled_after_work`` of a network thread that runs ``agents`` (and
    ``hosted``, and ``conductor`` in ``SHARED`` mode), or none when it does not settle (see
    module)."""
    if not settles:
        return None, None
    settled = _settled(*agents, hosted=hosted)
    left = [agent.left_work for agent in agents]
    if conductor is not None:
        left.insert(0, conductor.left_work)
    if hosted is not None:  # first: while it hosts an agent that cannot say, the rest is moot
        left.insert(0, hosted.left_work)
    left_checks = tuple(left)

    def settled_after_work() -> bool:
        for left_work in left_checks:
            if left_work():
                return False
        return settled()

    return settled, settled_after_work


def _settled(
    *agents: Sender | Receiver, hosted: DynamicCompositeAgent | None = None
) -> Callable[[], bool]:
    """Whether none of ``agents`` owes anything soon (their ``owes_soon``) and every hosted
    agent may wait until woken."""
    checks = tuple(agent.owes_soon for agent in agents)
    hosted_settled = None if hosted is None else hosted.settled

    def settled() -> bool:
        for owes in checks:
            if owes():
                return False
        return hosted_settled is None or hosted_settled()

    return settled
