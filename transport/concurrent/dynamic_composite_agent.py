"""``DynamicCompositeAgent``: agents added to and removed from a running thread's duty cycle.

Agrona's ``DynamicCompositeAgent``. A thread that runs it (one of a :class:`CompositeAgent`'s
agents, e.g. the media driver's network thread) runs each hosted agent's ``do_work`` in its own
duty cycle, in the order they were added. :meth:`DynamicCompositeAgent.add` and
:meth:`~HostedAgent.close` are asked from any thread and take effect at the start of the
running thread's next cycle: ``on_start`` and ``on_close`` run there, on the thread that runs
``do_work``, as under an ``AgentRunner``. ``wake`` (given at construction) ends the running
thread's park, so an addition or removal does not wait for it.

Each hosted agent has its own error handler: its exceptions do not count as the host's errors,
and one that raises ``AgentTerminationError`` is removed (its ``on_close`` runs) while the
host goes on. ``settled()`` says whether every hosted agent may wait until woken (the host's
idle strategy parks its longest only then; an agent without ``settled`` always may).

A hosted agent with an ``after_send()`` method (returning its work) has it called later in the
same duty cycle, after the agent the host was ``followed`` by: on the media driver's thread,
after the sender sent what the hosted agents offered (a broker group's leader fsyncs there, its
frames already on their way). When one also has ``after_send_due()`` and it says True, the
followed agent's cycle runs again while it did work (up to :data:`DRAIN_CYCLES` more times)
before ``after_send``: the sender sends at most two datagrams a publication a cycle (Aeron's
``max_messages_per_send``), so a frame of four went half before the leader's fsync and half
after it, the followers receiving the rest an fsync later (0.4-0.6 ms of a group's commit
round, traced: ``docs/replication.md``, "The commit round, hop by hop").

A hosted agent with a ``left_work()`` method says through it whether its last duty cycle left
work that rings no one (frames past its fragment limit, a high watermark to move after an
fsync): :meth:`DynamicCompositeAgent.left_work` asks each after a cycle that worked, and the
host's thread parks right after that cycle only when none did. An agent without the method may
have left any: while one is hosted, the host runs one more cycle after each that worked (and
parks after it only when it found nothing), as before the method.

Caller: ``MediaDriver.host_agent`` (a broker group's replication agent on its embedded driver's
thread, ``broker.replication``). Affects: nothing but the hosted agents.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final

from aeromq.transport._errors import AgentTerminationError, TransportStateError
from aeromq.transport.concurrent.agent import Agent, ErrorHandler, _report

__all__ = ["DRAIN_CYCLES", "DynamicCompositeAgent", "HostedAgent"]

DRAIN_CYCLES: Final = 16
"""The most extra cycles of the followed agent before a due ``after_send`` (see module)."""


class HostedAgent:
    """One agent in a :class:`DynamicCompositeAgent` (see module): its handle to leave."""

    __slots__ = (
        "_closed",
        "_host",
        "after",
        "after_due",
        "agent",
        "error_handler",
        "left_work",
        "settled",
        "started",
    )

    def __init__(
        self,
        host: DynamicCompositeAgent,
        agent: Agent,
        error_handler: ErrorHandler,
        settled: Callable[[], bool] | None,
    ) -> None:
        self._host = host
        self.agent = agent
        self.error_handler = error_handler
        self.settled = settled
        self.after: Callable[[], int] | None = getattr(agent, "after_send", None)
        """The agent's ``after_send``, if it has one (see module)."""
        self.after_due: Callable[[], bool] | None = getattr(agent, "after_send_due", None)
        """The agent's ``after_send_due``, if it has one (see module)."""
        self.left_work: Callable[[], bool] | None = getattr(agent, "left_work", None)
        """The agent's ``left_work``, if it has one (see module)."""
        self.started = False
        self._closed = threading.Event()

    @property
    def is_closed(self) -> bool:
        """True once the agent's ``on_close`` has run (or it never started and was removed)."""
        return self._closed.is_set()

    def close(self, timeout_s: float = 5.0) -> None:
        """Leave the host and wait up to ``timeout_s`` for ``on_close`` to have run on its
        thread. Idempotent. From the host's own thread, or once the host stopped running
        (:meth:`DynamicCompositeAgent.on_close`), it runs here. Raises
        ``TransportStateError`` when the host's thread did not get to it in time."""
        self._host.remove(self)
        if self._closed.wait(timeout_s):
            return
        raise TransportStateError(
            "hosted agent did not close in time",
            role_name=self.agent.role_name,
            timeout_s=timeout_s,
        )

    def _close_here(self) -> None:
        if self._closed.is_set():
            return
        try:
            if self.started:
                self.agent.on_close()
        except Exception as error:
            _report(self.error_handler, None, error, True)
        finally:
            self._closed.set()


class DynamicCompositeAgent:
    """The agents hosted on one thread, added and removed while it runs (see module)."""

    __slots__ = (
        "_agents",
        "_changed",
        "_closed",
        "_lock",
        "_pending",
        "_role_name",
        "_thread_id",
        "_wake",
    )

    def __init__(self, role_name: str, wake: Callable[[], object]) -> None:
        self._role_name = role_name
        self._wake = wake
        self._lock = threading.Lock()
        self._agents: tuple[HostedAgent, ...] = ()
        self._pending: list[tuple[bool, HostedAgent]] = []
        """(add, agent) requests the running thread has yet to take."""
        self._changed = False
        self._closed = False
        self._thread_id = 0
        """The running thread (0: none took an agent yet)."""

    @property
    def role_name(self) -> str:
        """The host's name (the hosted agents' names are their own)."""
        return self._role_name

    @property
    def agents(self) -> tuple[Agent, ...]:
        """The agents running now, in their order."""
        return tuple(hosted.agent for hosted in self._agents)

    @property
    def hosts_any(self) -> bool:
        """Whether an agent runs now (no tuple made: the host's thread asks before each
        park)."""
        return bool(self._agents)

    def add(
        self,
        agent: Agent,
        error_handler: ErrorHandler,
        settled: Callable[[], bool] | None = None,
    ) -> HostedAgent:
        """Host ``agent`` from the running thread's next cycle (any thread). Raises
        ``TransportStateError`` once the host has closed."""
        hosted = HostedAgent(self, agent, error_handler, settled)
        with self._lock:
            if self._closed:
                raise TransportStateError(
                    "host closed: cannot add an agent",
                    host=self._role_name,
                    role_name=agent.role_name,
                )
            self._pending.append((True, hosted))
            self._changed = True
        self._wake()
        return hosted

    def remove(self, hosted: HostedAgent) -> None:
        """Stop running ``hosted`` from the running thread's next cycle, or at once when called
        on that thread or after the host closed (any thread; idempotent)."""
        here = threading.get_ident() == self._thread_id
        with self._lock:
            closed = self._closed
            if not closed and not here:
                self._pending.append((False, hosted))
                self._changed = True
        if closed or here:
            self._agents = tuple(agent for agent in self._agents if agent is not hosted)
            hosted._close_here()
        else:
            self._wake()

    def settled(self) -> bool:
        """Whether every hosted agent may wait until woken (see module). From the host's thread."""
        for hosted in self._agents:
            settled = hosted.settled
            if settled is not None and not settled():
                return False
        return True

    def left_work(self) -> bool:
        """After a duty cycle that worked: whether a hosted agent may have left work that rings
        no one (see module), or an addition or removal came in since the cycle began (it rang
        too). From the host's thread."""
        if self._changed:
            return True
        for hosted in self._agents:
            left_work = hosted.left_work
            if left_work is None or left_work():
                return True
        return False

    def on_start(self) -> None:
        """Nothing: each agent starts when the running thread takes it."""
        return None

    def followed(self, agent: Agent, then: Callable[[], int] | None = None) -> Agent:
        """``agent`` (named as it is), then ``then`` if given (the media driver's status
        messages its hosted agents' reads made due), then in the same duty cycle each hosted
        agent's ``after_send`` (see module): the thread runs it in place of ``agent``."""
        return _Followed(agent, self, then)

    def after_due(self) -> bool:
        """Whether a hosted agent's ``after_send`` waits for the followed agent to have done
        all it can (see module). From the host's thread."""
        for hosted in self._agents:
            due = hosted.after_due
            if due is not None and due():
                return True
        return False

    def after_work(self) -> int:
        """Each hosted agent's ``after_send``, if it has one; the work they did."""
        work = 0
        for hosted in self._agents:
            after = hosted.after
            if after is not None:
                try:
                    work += after()
                except Exception as error:
                    _report(hosted.error_handler, None, error, True)
        return work

    def do_work(self) -> int:
        """The pending additions and removals, then one duty cycle of every hosted agent."""
        work = 0
        if self._changed:
            work += self._apply()
        for hosted in self._agents:
            try:
                work += hosted.agent.do_work()
            except AgentTerminationError as error:
                _report(hosted.error_handler, None, error, False)
                self.remove(hosted)  # on this thread: at once
            except Exception as error:
                _report(hosted.error_handler, None, error, True)
        return work

    def _apply(self) -> int:
        self._thread_id = threading.get_ident()
        with self._lock:
            pending, self._pending = self._pending, []
            self._changed = False
        agents = list(self._agents)
        for add, hosted in pending:
            if add:
                if hosted.is_closed:
                    continue
                agents.append(hosted)
                self._agents = tuple(agents)
                hosted.started = True
                try:
                    hosted.agent.on_start()
                except Exception as error:
                    _report(hosted.error_handler, None, error, True)
            elif hosted in agents:
                agents.remove(hosted)
                self._agents = tuple(agents)
                hosted._close_here()
            else:
                hosted._close_here()  # removed before the thread took its addition
        return len(pending)

    def on_close(self) -> None:
        """Close every hosted agent, on this thread; those added later close where removed."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, []
        agents, self._agents = self._agents, ()
        for hosted in agents:
            hosted._close_here()
        for _add, hosted in pending:
            hosted._close_here()

    def __repr__(self) -> str:
        return f"DynamicCompositeAgent(role_name={self._role_name!r}, agents={len(self._agents)})"


class _Followed:
    """An agent followed in each duty cycle by its host's hosted agents' ``after_send``, and
    named as that agent (:meth:`DynamicCompositeAgent.followed`)."""

    __slots__ = ("_agent", "_host", "_then")

    def __init__(
        self, agent: Agent, host: DynamicCompositeAgent, then: Callable[[], int] | None
    ) -> None:
        self._agent = agent
        self._host = host
        self._then = then

    @property
    def role_name(self) -> str:
        """The agent's name."""
        return self._agent.role_name

    def on_start(self) -> None:
        """The agent's ``on_start``."""
        self._agent.on_start()

    def do_work(self) -> int:
        """The agent's cycle (again while it works, when an ``after_send`` is due: see
        module), then ``then``, then the hosted agents' ``after_send``."""
        agent = self._agent
        host = self._host
        work = agent.do_work()
        if work > 0 and host.after_due():
            for _ in range(DRAIN_CYCLES):
                more = agent.do_work()
                if more <= 0:
                    break
                work += more
        then = self._then
        if then is not None:
            work += then()
        return work + host.after_work()

    def on_close(self) -> None:
        """The agent's ``on_close``."""
        self._agent.on_close()
