from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aeromq.transport import ConfigurationError, TransportStateError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.agent import (
    Agent,
    AgentInvoker,
    AgentRunner,
    AgentTerminationError,
    CompositeAgent,
)
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.idle_strategy import NoOpIdleStrategy, YieldingIdleStrategy

TIMEOUT_S = 10.0


def wait_for(condition: Callable[[], bool], timeout_s: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.001)


class RecordingAgent(Agent):
    """Counts its cycles and records on which thread each callback ran."""

    def __init__(
        self,
        name: str = "recorder",
        fail_every: int = 0,
        terminate_at: int = 0,
        work: int = 1,
    ) -> None:
        self.name = name
        self.fail_every = fail_every
        self.terminate_at = terminate_at
        self.work = work
        self.cycles = 0
        self.events: list[tuple[str, str]] = []

    @property
    def role_name(self) -> str:
        return self.name

    def on_start(self) -> None:
        self.events.append(("start", threading.current_thread().name))

    def do_work(self) -> int:
        self.cycles += 1
        if self.terminate_at and self.cycles >= self.terminate_at:
            raise AgentTerminationError("done", cycles=self.cycles)
        if self.fail_every and self.cycles % self.fail_every == 0:
            raise RuntimeError(f"{self.name} failed at {self.cycles}")
        return self.work

    def on_close(self) -> None:
        self.events.append(("close", threading.current_thread().name))


class Errors:
    def __init__(self) -> None:
        self.seen: list[Exception] = []

    def __call__(self, error: Exception) -> None:
        self.seen.append(error)


def new_counter() -> AtomicCounter:
    return AtomicCounter(AtomicBuffer.allocate(128), 0)


def test_should_run_the_duty_cycle_on_a_named_daemon_thread() -> None:
    agent = RecordingAgent("conductor")
    errors = Errors()
    runner = AgentRunner(YieldingIdleStrategy(), errors, None, agent)
    thread = runner.start()
    assert thread.daemon and thread.name == "conductor"
    assert runner.thread is thread
    wait_for(lambda: agent.cycles > 100)
    runner.close()
    assert not thread.is_alive()
    assert runner.is_closed and not runner.is_running
    assert agent.events == [("start", "conductor"), ("close", "conductor")]
    assert errors.seen == []
    assert "conductor" in repr(runner)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's thread names")
def test_should_name_its_thread_in_the_kernel_after_the_agents_role_cut_to_15_bytes() -> None:
    agent = RecordingAgent("replication-agent-member-2")
    runner = AgentRunner(YieldingIdleStrategy(), Errors(), None, agent)
    thread = runner.start()
    try:
        wait_for(lambda: agent.cycles > 0)
        comm = Path(f"/proc/self/task/{thread.native_id}/comm").read_text().strip()
        assert comm == "replication-age"
        assert Path("/proc/self/comm").read_text().strip() != comm  # the process keeps its own
    finally:
        runner.close()


def test_should_apply_the_idle_strategy_to_each_work_count() -> None:
    class Recording:
        alias = "recording"

        def __init__(self) -> None:
            self.work_counts: list[int] = []

        def idle(self, work_count: int = 0) -> None:
            self.work_counts.append(work_count)

        def reset(self) -> None:
            return None

    idle = Recording()
    runner = AgentRunner(idle, Errors(), None, RecordingAgent(work=3))
    runner.start()
    wait_for(lambda: len(idle.work_counts) >= 5)
    runner.close()
    assert set(idle.work_counts) == {3}


def test_should_report_errors_and_keep_running_a_failing_agent() -> None:
    agent = RecordingAgent(fail_every=3)
    errors = Errors()
    counter = new_counter()
    runner = AgentRunner(NoOpIdleStrategy(), errors, counter, agent)
    runner.start()
    wait_for(lambda: len(errors.seen) >= 10)
    runner.close()
    failures = len(errors.seen)
    assert agent.cycles >= 3 * failures
    assert counter.get() == failures
    assert all(isinstance(error, RuntimeError) for error in errors.seen)
    assert str(errors.seen[0]) == "recorder failed at 3"
    assert agent.events[-1][0] == "close"


def test_should_skip_the_loop_but_close_when_on_start_fails() -> None:
    class FailsToStart(RecordingAgent):
        def on_start(self) -> None:
            raise OSError("cannot bind")

    agent = FailsToStart()
    errors = Errors()
    counter = new_counter()
    runner = AgentRunner(NoOpIdleStrategy(), errors, counter, agent)
    runner.start()
    wait_for(lambda: runner.is_closed)
    assert agent.cycles == 0
    assert [str(error) for error in errors.seen] == ["cannot bind"]
    assert counter.get() == 1
    assert agent.events == [("close", "recorder")]
    runner.close()


def test_should_end_the_loop_when_the_agent_terminates_itself() -> None:
    agent = RecordingAgent(terminate_at=5)
    errors = Errors()
    counter = new_counter()
    runner = AgentRunner(NoOpIdleStrategy(), errors, counter, agent)
    runner.start()
    wait_for(lambda: runner.is_closed)
    assert agent.cycles == 5
    assert not runner.is_running
    assert len(errors.seen) == 1
    assert isinstance(errors.seen[0], AgentTerminationError)
    assert counter.get() == 0  # a termination is not an error
    assert agent.events[-1] == ("close", "recorder")
    runner.close()
    assert agent.events.count(("close", "recorder")) == 1


def test_should_close_an_agent_that_never_started_on_the_callers_thread() -> None:
    agent = RecordingAgent()
    runner = AgentRunner(NoOpIdleStrategy(), Errors(), None, agent)
    runner.close()
    runner.close()
    assert agent.events == [("close", threading.current_thread().name)]
    assert runner.is_closed
    with pytest.raises(TransportStateError, match="role_name='recorder'"):
        runner.start()


def test_should_refuse_to_start_twice() -> None:
    runner = AgentRunner(YieldingIdleStrategy(), Errors(), None, RecordingAgent())
    with runner:
        runner.start()
        with pytest.raises(TransportStateError, match="already started"):
            runner.start()
    assert runner.is_closed


def test_should_raise_when_the_thread_does_not_stop_in_time_then_close_later() -> None:
    release = threading.Event()
    entered = threading.Event()

    class Stuck(RecordingAgent):
        def do_work(self) -> int:
            entered.set()
            release.wait(TIMEOUT_S)
            return 0

    agent = Stuck("stuck")
    runner = AgentRunner(NoOpIdleStrategy(), Errors(), None, agent)
    thread = runner.start()
    assert entered.wait(TIMEOUT_S)
    with pytest.raises(TransportStateError, match=r"timeout_s=0\.05") as info:
        runner.close(timeout_s=0.05)
    assert info.value.role_name == "stuck"
    assert not runner.is_closed
    release.set()
    thread.join(TIMEOUT_S)
    assert runner.is_closed
    assert agent.events[-1] == ("close", "stuck")
    runner.close()


def test_should_only_signal_when_closed_from_its_own_thread() -> None:
    holder: list[AgentRunner] = []

    class ClosesItself(RecordingAgent):
        def do_work(self) -> int:
            holder[0].close()
            return super().do_work()

    agent = ClosesItself()
    runner = AgentRunner(NoOpIdleStrategy(), Errors(), None, agent)
    holder.append(runner)
    runner.start()
    wait_for(lambda: runner.is_closed)
    assert agent.cycles == 1


def test_should_survive_an_error_handler_that_raises(capsys: pytest.CaptureFixture[str]) -> None:
    def bad_handler(error: Exception) -> None:
        raise ValueError("handler broke")

    agent = RecordingAgent(fail_every=2)
    counter = new_counter()
    runner = AgentRunner(NoOpIdleStrategy(), bad_handler, counter, agent)
    runner.start()
    wait_for(lambda: counter.get() >= 3)
    runner.close()
    err = capsys.readouterr().err
    assert "error handler failed" in err
    assert "ValueError: handler broke" in err
    assert "RuntimeError: recorder failed at 2" in err


def test_should_not_count_into_a_closed_error_counter() -> None:
    counter = new_counter()
    counter.close()
    errors = Errors()
    runner = AgentRunner(NoOpIdleStrategy(), errors, counter, RecordingAgent(fail_every=1))
    runner.start()
    wait_for(lambda: len(errors.seen) >= 3)
    runner.close()
    assert counter.get() == 0


def test_should_drive_an_agent_from_the_callers_thread() -> None:
    agent = RecordingAgent(fail_every=2, work=4)
    errors = Errors()
    counter = new_counter()
    invoker = AgentInvoker(errors, counter, agent)
    assert invoker.invoke() == 0  # not started
    assert agent.cycles == 0
    invoker.start()
    invoker.start()
    assert invoker.is_started and invoker.is_running
    assert [invoker.invoke() for _ in range(4)] == [4, 0, 4, 0]
    assert counter.get() == 2
    assert len(errors.seen) == 2
    invoker.close()
    invoker.close()
    assert invoker.is_closed and not invoker.is_running
    assert invoker.invoke() == 0
    me = threading.current_thread().name
    assert agent.events == [("start", me), ("close", me)]
    assert invoker.agent is agent


def test_should_close_the_invoker_when_the_agent_terminates_or_fails_to_start() -> None:
    agent = RecordingAgent(terminate_at=2)
    errors = Errors()
    invoker = AgentInvoker(errors, None, agent)
    invoker.start()
    assert invoker.invoke() == 1
    assert invoker.invoke() == 0
    assert invoker.is_closed
    assert isinstance(errors.seen[0], AgentTerminationError)
    assert agent.events[-1][0] == "close"

    class FailsToStart(RecordingAgent):
        def on_start(self) -> None:
            raise OSError("no")

    failing = FailsToStart()
    invoker = AgentInvoker(errors, None, failing)
    invoker.start()
    assert invoker.is_closed
    assert invoker.invoke() == 0
    assert failing.cycles == 0
    assert failing.events == [("close", threading.current_thread().name)]


def test_should_report_errors_from_on_close() -> None:
    class FailsToClose(RecordingAgent):
        def on_close(self) -> None:
            raise OSError("close failed")

    errors = Errors()
    runner = AgentRunner(NoOpIdleStrategy(), errors, None, FailsToClose())
    runner.start()
    runner.close()
    invoker = AgentInvoker(errors, None, FailsToClose())
    invoker.start()
    invoker.close()
    never_started = AgentRunner(NoOpIdleStrategy(), errors, None, FailsToClose())
    never_started.close()
    assert [str(error) for error in errors.seen] == ["close failed"] * 3


def test_should_run_a_composite_as_one_agent() -> None:
    first, second = RecordingAgent("a", work=1), RecordingAgent("b", work=2)
    composite = CompositeAgent([first, second])
    assert composite.role_name == "[a,b]"
    assert composite.agents == (first, second)
    composite.on_start()
    assert composite.do_work() == 3
    composite.on_close()
    assert [event for event, _ in first.events] == ["start", "close"]
    assert [event for event, _ in second.events] == ["start", "close"]


def test_should_resume_a_composite_after_the_agent_that_failed() -> None:
    first = RecordingAgent("a", fail_every=2)
    second = RecordingAgent("b")
    composite = CompositeAgent([first, second])
    assert composite.do_work() == 2
    with pytest.raises(RuntimeError, match="a failed at 2"):
        composite.do_work()
    assert (first.cycles, second.cycles) == (2, 1)
    assert composite.do_work() == 1  # b only: resumes after a
    assert (first.cycles, second.cycles) == (2, 2)
    assert composite.do_work() == 2
    assert (first.cycles, second.cycles) == (3, 3)


def test_should_start_and_close_every_agent_of_a_composite_then_raise_the_first_error() -> None:
    class Fails(RecordingAgent):
        def on_start(self) -> None:
            raise OSError(f"{self.name} start")

        def on_close(self) -> None:
            raise OSError(f"{self.name} close")

    a, b, c = Fails("a"), RecordingAgent("b"), Fails("c")
    composite = CompositeAgent([a, b, c])
    with pytest.raises(OSError, match="a start") as info:
        composite.on_start()
    assert info.value.__notes__ == ["also raised: OSError('c start')"]
    assert b.events[0][0] == "start"
    with pytest.raises(OSError, match="a close"):
        composite.on_close()
    assert b.events[-1][0] == "close"


def test_should_run_a_composite_on_a_runner() -> None:
    first, second = RecordingAgent("a"), RecordingAgent("b", fail_every=5)
    errors = Errors()
    runner = AgentRunner(NoOpIdleStrategy(), errors, None, CompositeAgent([first, second]))
    thread = runner.start()
    assert thread.name == "[a,b]"
    wait_for(lambda: len(errors.seen) >= 3)
    runner.close()
    assert abs(first.cycles - second.cycles) <= 1
    assert first.events == [("start", "[a,b]"), ("close", "[a,b]")]


def test_should_reject_an_empty_composite() -> None:
    with pytest.raises(ConfigurationError, match="count=0"):
        CompositeAgent([])
