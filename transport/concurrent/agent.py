"""Agents and what runs them: Agrona's ``Agent``, ``AgentRunner``, ``AgentInvoker``,
``CompositeAgent``.

An agent is a duty cycle: ``do_work()`` does a bounded amount of work and returns how much
(0 when there was nothing to do). The driver's conductor, sender and receiver are agents.

- :class:`AgentRunner` runs one agent on its own daemon thread: ``on_start()``, then
  ``do_work()`` followed by ``idle_strategy.idle(work_count)`` until closed, then ``on_close()``,
  all on that thread. An exception from the agent goes to the error handler and bumps the error
  counter; the loop goes on. An agent ends its own loop by raising
  :class:`~transport.AgentTerminationError`.
- :class:`AgentInvoker` drives an agent from the caller's thread (``invoke()`` is one duty
  cycle), for an agent embedded in another loop, e.g. a client conductor invoked by the client.
- :class:`CompositeAgent` runs several agents as one, in order, on one thread.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Protocol

from aeromq.transport._errors import AgentTerminationError, ConfigurationError, TransportStateError
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy
from aeromq.transport.concurrent.idle_strategy import IdleStrategy
from aeromq.transport.util.thread_name import name_os_thread

__all__ = [
    "Agent",
    "AgentInvoker",
    "AgentRunner",
    "AgentTerminationError",
    "CompositeAgent",
    "ErrorHandler",
]

ErrorHandler = Callable[[Exception], object]
"""Receives every exception an agent raises (e.g. ``LoggingErrorHandler`` into cnc.dat)."""


class Agent(Protocol):
    """A duty-cycle worker. Subclass it to inherit no-op ``on_start`` / ``on_close``."""

    @property
    def role_name(self) -> str:
        """Names the agent and its thread, e.g. ``"driver-conductor"``."""
        ...

    def on_start(self) -> None:
        """Called once, on the agent's thread, before the first ``do_work``."""
        return None

    def do_work(self) -> int:
        """One duty cycle; returns the amount of work done (0 if none). May raise."""
        ...

    def on_close(self) -> None:
        """Called once, on the agent's thread when it had one, after the last ``do_work``."""
        return None


def _report(
    error_handler: ErrorHandler, error_counter: AtomicCounter | None, error: Exception, count: bool
) -> None:
    if count and error_counter is not None and not error_counter.is_closed:
        error_counter.increment()
    try:
        error_handler(error)
    except Exception as handler_error:  # the handler failing must not end the duty cycle
        sys.stderr.write(
            "error handler failed: "
            + "".join(traceback.format_exception(handler_error))
            + "while handling: "
            + "".join(traceback.format_exception(error))
        )


class AgentRunner:
    """Runs ``agent`` on a daemon thread named after its role, in Python and in the kernel
    (``top -H``, ``/proc/PID/task/TID/comm``; see module)."""

    __slots__ = (
        "_agent",
        "_done",
        "_error_counter",
        "_error_handler",
        "_idle_strategy",
        "_lock",
        "_running",
        "_started",
        "_thread",
    )

    def __init__(
        self,
        idle_strategy: IdleStrategy,
        error_handler: ErrorHandler,
        error_counter: AtomicCounter | None,
        agent: Agent,
    ) -> None:
        self._idle_strategy = idle_strategy
        self._error_handler = error_handler
        self._error_counter = error_counter
        self._agent = agent
        self._running = True
        self._started = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def agent(self) -> Agent:
        """The agent this runner drives."""
        return self._agent

    @property
    def thread(self) -> threading.Thread | None:
        """The agent's thread once :meth:`start` made it, else None."""
        return self._thread

    @property
    def is_running(self) -> bool:
        """True from construction until ``close`` or the agent's own termination."""
        return self._running

    @property
    def is_closed(self) -> bool:
        """True once ``on_close`` has run."""
        return self._done.is_set()

    def start(self) -> threading.Thread:
        """Start the agent's thread; raises ``TransportStateError`` if started or closed before."""
        with self._lock:
            if self._started or not self._running:
                raise TransportStateError(
                    "agent runner already started or closed", role_name=self._agent.role_name
                )
            self._started = True
            thread = threading.Thread(target=self._run, name=self._agent.role_name, daemon=True)
            self._thread = thread
        thread.start()
        return thread

    def _run(self) -> None:
        """The duty-cycle loop (the thread's target); returns when the runner stops."""
        agent = self._agent
        idle = self._idle_strategy.idle
        do_work = agent.do_work
        handler = self._error_handler
        counter = self._error_counter
        name_os_thread(agent.role_name)
        try:
            try:
                agent.on_start()
            except Exception as error:
                _report(handler, counter, error, True)
                self._running = False
            while self._running:
                try:
                    idle(do_work())
                except AgentTerminationError as error:
                    self._running = False
                    _report(handler, counter, error, False)
                except Exception as error:
                    if self._running:
                        _report(handler, counter, error, True)
            try:
                agent.on_close()
            except Exception as error:
                _report(handler, counter, error, True)
        finally:
            self._done.set()

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the loop and wait up to ``timeout_s`` for ``on_close`` to have run.

        Idempotent. Never started: ``on_close`` runs here. Called from the agent's own thread:
        only signals. Raises ``TransportStateError`` if the thread is still in a duty cycle after
        ``timeout_s``; it still stops (and closes the agent) when that cycle returns.
        """
        with self._lock:
            self._running = False
            started = self._started
            self._started = True
        idle = self._idle_strategy
        if started and isinstance(idle, DoorbellIdleStrategy):
            idle.wake()  # parked until its next due time, perhaps seconds: stop now
        if not started:
            if not self._done.is_set():
                try:
                    self._agent.on_close()
                except Exception as error:
                    _report(self._error_handler, self._error_counter, error, True)
                finally:
                    self._done.set()
            return
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        thread.join(timeout_s)
        if thread.is_alive():
            raise TransportStateError(
                "agent thread did not stop in time",
                role_name=self._agent.role_name,
                timeout_s=timeout_s,
            )

    def __enter__(self) -> AgentRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AgentRunner(role_name={self._agent.role_name!r}, running={self._running})"


class AgentInvoker:
    """Drives ``agent`` from the caller's thread: ``start()``, then ``invoke()`` per cycle,
    then ``close()``. Errors go to the handler and counter as in :class:`AgentRunner`."""

    __slots__ = ("_agent", "_closed", "_error_counter", "_error_handler", "_running", "_started")

    def __init__(
        self, error_handler: ErrorHandler, error_counter: AtomicCounter | None, agent: Agent
    ) -> None:
        self._error_handler = error_handler
        self._error_counter = error_counter
        self._agent = agent
        self._started = False
        self._running = False
        self._closed = False

    @property
    def agent(self) -> Agent:
        """The agent this invoker drives."""
        return self._agent

    @property
    def is_started(self) -> bool:
        """True once :meth:`start` was called (even if ``on_start`` raised)."""
        return self._started

    @property
    def is_running(self) -> bool:
        """True between a successful ``on_start`` and :meth:`close` or termination."""
        return self._running

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` has run (``on_close`` called)."""
        return self._closed

    def start(self) -> None:
        """Call ``on_start`` once; if it raises, the error is reported and the invoker closes."""
        if self._started or self._closed:
            return
        self._started = True
        try:
            self._agent.on_start()
            self._running = True
        except Exception as error:
            _report(self._error_handler, self._error_counter, error, True)
            self.close()

    def invoke(self) -> int:
        """One duty cycle if running (started and not closed); returns its work count."""
        if not self._running:
            return 0
        try:
            return self._agent.do_work()
        except AgentTerminationError as error:
            self._running = False
            _report(self._error_handler, self._error_counter, error, False)
            self.close()
        except Exception as error:
            _report(self._error_handler, self._error_counter, error, True)
        return 0

    def close(self) -> None:
        """Call ``on_close`` once; idempotent."""
        if self._closed:
            return
        self._running = False
        self._closed = True
        try:
            self._agent.on_close()
        except Exception as error:
            _report(self._error_handler, self._error_counter, error, True)


class CompositeAgent(Agent):
    """Several agents as one: ``role_name`` ``[a,b,...]``, work counts summed.

    ``on_start`` / ``on_close`` call every agent even when one raises, then raise the first
    error (the others attached as notes). If one agent's ``do_work`` raises, the next cycle
    resumes with the agent after it, so a failing agent cannot starve the rest.
    """

    __slots__ = ("_agents", "_index", "_role_name")

    def __init__(self, agents: Sequence[Agent]) -> None:
        if not agents:
            raise ConfigurationError("composite agent needs at least one agent", count=0)
        self._agents = tuple(agents)
        self._index = 0
        self._role_name = "[" + ",".join(agent.role_name for agent in self._agents) + "]"

    @property
    def role_name(self) -> str:
        """The agents' role names, comma-separated in brackets: ``[a,b]``."""
        return self._role_name

    @property
    def agents(self) -> tuple[Agent, ...]:
        """The agents, in the order each duty cycle runs them."""
        return self._agents

    def on_start(self) -> None:
        _call_all([agent.on_start for agent in self._agents])

    def do_work(self) -> int:
        agents = self._agents
        index = self._index
        work_count = 0
        try:
            for agent in agents[index:] if index else agents:
                index += 1
                work_count += agent.do_work()
        except BaseException:
            self._index = index if index < len(agents) else 0  # the next cycle resumes after it
            raise
        self._index = 0
        return work_count

    def on_close(self) -> None:
        _call_all([agent.on_close for agent in self._agents])


def _call_all(calls: list[Callable[[], None]]) -> None:
    first: Exception | None = None
    for call in calls:
        try:
            call()
        except Exception as error:
            if first is None:
                first = error
            else:
                first.add_note(f"also raised: {error!r}")
    if first is not None:
        raise first
