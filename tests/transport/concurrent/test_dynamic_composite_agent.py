"""``DynamicCompositeAgent``: agents added to and removed from a running thread's duty cycle,
started and closed on that thread, with errors of their own."""

from __future__ import annotations

import threading

import pytest

from aeromq.transport import AgentTerminationError, TransportStateError
from aeromq.transport.concurrent import (
    AgentRunner,
    BackoffIdleStrategy,
    DynamicCompositeAgent,
)
from aeromq.transport.concurrent.dynamic_composite_agent import DRAIN_CYCLES


class _Recorder:
    """An agent that records what ran it, on which thread; it raises what it is told to."""

    def __init__(self, name: str, raises: Exception | None = None) -> None:
        self.name = name
        self.raises = raises
        self.events: list[str] = []
        self.threads: set[int] = set()
        self.settled = True

    @property
    def role_name(self) -> str:
        return self.name

    def on_start(self) -> None:
        self.threads.add(threading.get_ident())
        self.events.append("start")

    def do_work(self) -> int:
        self.threads.add(threading.get_ident())
        self.events.append("work")
        if self.raises is not None:
            raise self.raises
        return 1

    def on_close(self) -> None:
        self.threads.add(threading.get_ident())
        self.events.append("close")


def test_should_start_an_agent_on_the_next_cycle_and_close_it_at_once_on_the_hosts_thread() -> None:
    wakes: list[int] = []
    host = DynamicCompositeAgent("hosted", lambda: wakes.append(1))
    agent = _Recorder("a")
    errors: list[Exception] = []

    hosted = host.add(agent, errors.append)
    assert agent.events == [] and wakes == [1]  # nothing runs off the host's thread
    assert host.do_work() == 2  # the addition, then the agent's work
    assert agent.events == ["start", "work"]
    assert host.agents == (agent,)

    host.remove(hosted)  # on the thread that runs the host: at once
    assert agent.events == ["start", "work", "close"]
    assert host.do_work() == 0
    assert hosted.is_closed and host.agents == () and errors == []


def test_should_report_an_agents_errors_to_its_own_handler_and_remove_it_when_it_terminates() -> (
    None
):
    host = DynamicCompositeAgent("hosted", lambda: None)
    failing = _Recorder("failing", raises=ValueError("boom"))
    ending = _Recorder("ending", raises=AgentTerminationError("done"))
    healthy = _Recorder("healthy")
    errors: dict[str, list[Exception]] = {"failing": [], "ending": [], "healthy": []}
    for agent in (failing, ending, healthy):
        host.add(agent, errors[agent.name].append)

    host.do_work()
    host.do_work()

    assert [type(error) for error in errors["failing"]] == [ValueError, ValueError]
    assert [type(error) for error in errors["ending"]] == [AgentTerminationError]
    assert ending.events == ["start", "work", "close"]  # removed at once, on this thread
    assert healthy.events == ["start", "work", "work"]
    assert host.agents == (failing, healthy)


def test_should_be_settled_only_while_every_agent_that_says_so_is() -> None:
    host = DynamicCompositeAgent("hosted", lambda: None)
    quiet, busy = _Recorder("quiet"), _Recorder("busy")
    host.add(quiet, lambda error: None)
    host.add(busy, lambda error: None, lambda: busy.settled)
    host.do_work()

    assert host.settled()
    busy.settled = False
    assert not host.settled()


def test_should_close_a_hosted_agent_on_the_running_thread_and_close_here_once_it_stopped() -> None:
    host = DynamicCompositeAgent("hosted", lambda: None)
    runner = AgentRunner(BackoffIdleStrategy(0, 0, 1_000, 100_000), lambda error: None, None, host)
    first, second = _Recorder("first"), _Recorder("second")
    runner.start()
    try:
        hosted_first = host.add(first, lambda error: None)
        hosted_second = host.add(second, lambda error: None)
        hosted_first.close(timeout_s=5.0)  # waits for on_close on the runner's thread
        assert first.events[0] == "start" and first.events[-1] == "close"
        assert first.threads == {runner.thread.ident if runner.thread else 0}
    finally:
        runner.close()
    assert hosted_second.is_closed  # the host's close closed it, on its thread
    assert second.threads == {runner.thread.ident if runner.thread else 0}

    with pytest.raises(TransportStateError):
        host.add(_Recorder("late"), lambda error: None)


class _AfterSender(_Recorder):
    """A hosted agent with an ``after_send``, which records it too."""

    def after_send(self) -> int:
        self.events.append("after")
        return 1


def test_should_run_each_hosted_agents_after_send_once_the_agent_it_follows_has_worked() -> None:
    host = DynamicCompositeAgent("hosted", lambda: None)
    sender = _Recorder("sender")
    followed = host.followed(sender)
    plain, after = _Recorder("plain"), _AfterSender("after-sender")
    host.add(plain, lambda error: None)
    host.add(after, lambda error: None)

    host.do_work()
    assert followed.role_name == "sender"
    assert followed.do_work() == 2  # the sender's work, then one after_send
    assert sender.events == ["work"]
    assert after.events == ["start", "work", "after"]
    assert plain.events == ["start", "work"]


class _Draining(_Recorder):
    """A followed agent with ``pending`` cycles of work left: each works until none is."""

    def __init__(self, name: str, pending: int) -> None:
        super().__init__(name)
        self.pending = pending

    def do_work(self) -> int:
        self.events.append("work")
        if self.pending <= 0:
            return 0
        self.pending -= 1
        return 1


class _DueAfterSender(_AfterSender):
    """A hosted agent whose ``after_send`` is due (it asks the followed agent to drain)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.due = True

    def after_send_due(self) -> bool:
        return self.due


def test_should_run_the_followed_agent_again_while_it_works_before_a_due_after_send() -> None:
    host = DynamicCompositeAgent("hosted", lambda: None)
    sender = _Draining("sender", pending=3)
    followed = host.followed(sender)
    after = _DueAfterSender("after-sender")
    host.add(after, lambda error: None)
    host.do_work()

    assert followed.do_work() == 3 + 1  # three cycles of work, the one that found none, after
    assert sender.events == ["work"] * 4
    assert after.events[-1] == "after"

    after.due = False
    sender.pending = 3
    followed.do_work()  # not due: one cycle only
    assert sender.events == ["work"] * 5


def test_should_bound_the_followed_agents_extra_cycles() -> None:
    host = DynamicCompositeAgent("hosted", lambda: None)
    sender = _Draining("sender", pending=10 * DRAIN_CYCLES)
    followed = host.followed(sender)
    host.add(_DueAfterSender("after-sender"), lambda error: None)
    host.do_work()

    followed.do_work()
    assert len(sender.events) == 1 + DRAIN_CYCLES


class _Leaving(_Recorder):
    """A recorder that says whether its last cycle left work (``left_work``)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.left = False

    def left_work(self) -> bool:
        return self.left


def test_should_say_a_cycle_left_work_unless_every_hosted_agent_says_it_left_none() -> None:
    host = DynamicCompositeAgent("hosted", lambda: None)
    assert not host.left_work()  # nothing hosted
    leaving = _Leaving("a")
    host.add(leaving, lambda error: None)
    assert host.left_work()  # an addition the thread has yet to take
    host.do_work()
    assert not host.left_work()
    leaving.left = True
    assert host.left_work()
    leaving.left = False
    host.add(_Recorder("b"), lambda error: None)
    host.do_work()
    assert host.left_work()  # an agent that cannot say: it may have left any
