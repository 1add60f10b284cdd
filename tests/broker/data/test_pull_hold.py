"""The long-poll hold service: woken once, by an arrival beyond the offset, a deadline or a stop."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator

import pytest

from aeromq.broker.processor.pull_hold import PullHoldService

from .conftest import wait_for


class Ends(dict[tuple[str, int], int]):
    def __call__(self, topic: str, queue_id: int) -> int:
        return self.get((topic, queue_id), 0)


class Wakes:
    def __init__(self) -> None:
        self.calls: list[tuple[str, bool, str]] = []
        self.event = threading.Event()

    def callback(self, name: str) -> Callable[[bool], None]:
        def on_wake(arrived: bool) -> None:
            self.calls.append((name, arrived, threading.current_thread().name))
            self.event.set()

        return on_wake


@pytest.fixture
def ends() -> Ends:
    return Ends()


@pytest.fixture
def service(ends: Ends) -> Iterator[PullHoldService]:
    hold = PullHoldService(ends, max_suspend_ms=2_000)
    hold.start()
    yield hold
    hold.shutdown()


def test_should_wake_a_hold_once_on_the_writers_thread_when_its_queue_moves_beyond_its_offset(
    service: PullHoldService, ends: Ends
) -> None:
    wakes = Wakes()
    service.hold("t", 1, 5, 1_000, wakes.callback("a"))
    assert service.held_count == 1
    ends[("t", 1)] = 6
    writer = threading.Thread(target=service.on_arrival, args=("t", 1, 6), name="writer")
    writer.start()
    writer.join(5)
    assert [(name, arrived) for name, arrived, _ in wakes.calls] == [("a", True)]
    service.on_arrival("t", 1, 7)
    time.sleep(0.02)
    assert wakes.calls == [("a", True, "writer")]
    assert service.held_count == 0 and service.woken_by_arrival == 1


def test_should_leave_the_wakes_of_a_deferring_threads_arrivals_to_it_and_no_other_threads(
    service: PullHoldService, ends: Ends
) -> None:
    wakes = Wakes()
    service.hold("t", 1, 0, 1_000, wakes.callback("here"))
    service.hold("t", 2, 0, 1_000, wakes.callback("there"))
    deferred: list[Callable[[bool], None]] = []
    service.defer_wakes(deferred)
    try:
        ends[("t", 1)] = ends[("t", 2)] = 1
        service.on_arrival("t", 1, 1)  # this thread's: released, not woken
        assert service.held_count == 1 and len(deferred) == 1 and wakes.calls == []
        writer = threading.Thread(target=service.on_arrival, args=("t", 2, 1), name="writer")
        writer.start()  # another thread's: woken there, as ever
        writer.join(5)
        assert wakes.calls == [("there", True, "writer")]
    finally:
        service.defer_wakes(None)
    service.wake_deferred(deferred)
    assert wakes.calls[-1] == ("here", True, threading.current_thread().name)
    assert deferred == [] and service.woken_by_arrival == 2
    service.hold("t", 1, 1, 1_000, wakes.callback("after"))
    ends[("t", 1)] = 2
    service.on_arrival("t", 1, 2)  # no longer deferring: woken at once
    assert wakes.calls[-1][:2] == ("after", True)


def test_should_wake_the_service_thread_only_for_a_hold_due_sooner_than_those_it_waits_for(
    ends: Ends,
) -> None:
    hold = PullHoldService(ends, max_suspend_ms=5_000)
    notified: list[int] = []
    original = hold._cond.notify
    hold._cond.notify = lambda n=1: (notified.append(n), original(n))[1]  # type: ignore[method-assign]
    hold.start()
    try:
        wakes = Wakes()
        hold.hold("t", 0, 0, 2_000, wakes.callback("first"))  # the thread waited for nothing
        hold.hold("t", 1, 0, 3_000, wakes.callback("later"))  # due after the first: no wake
        assert len(notified) == 1
        hold.hold("t", 2, 0, 50, wakes.callback("sooner"))  # due before: the thread must know
        assert len(notified) == 2
        assert wakes.event.wait(2.0)
        assert [(n, a, t) for n, a, t in wakes.calls] == [("sooner", False, "pull-hold")]
    finally:
        hold.shutdown()


def test_should_keep_holds_of_other_queues_and_of_offsets_not_reached(
    service: PullHoldService,
) -> None:
    wakes = Wakes()
    service.hold("t", 1, 5, 1_000, wakes.callback("at-5"))
    service.hold("t", 2, 0, 1_000, wakes.callback("other-queue"))
    service.hold("u", 1, 0, 1_000, wakes.callback("other-topic"))
    service.on_arrival("t", 1, 5)  # the end is 5: nothing beyond offset 5 yet
    time.sleep(0.02)
    assert wakes.calls == [] and service.held_count == 3


def test_should_answer_at_the_deadline_with_no_arrival(service: PullHoldService) -> None:
    wakes = Wakes()
    began = time.monotonic()
    service.hold("t", 0, 0, 60, wakes.callback("a"))
    assert wakes.event.wait(2.0)
    elapsed_ms = (time.monotonic() - began) * 1000
    assert [(n, a) for n, a, _ in wakes.calls] == [("a", False)]
    assert 50 <= elapsed_ms < 1_000
    assert service.woken_by_timeout == 1


def test_should_cap_a_hold_at_the_max_suspend(ends: Ends) -> None:
    hold = PullHoldService(ends, max_suspend_ms=30)
    hold.start()
    try:
        wakes = Wakes()
        began = time.monotonic()
        hold.hold("t", 0, 0, 60_000, wakes.callback("a"))
        assert wakes.event.wait(2.0)
        assert time.monotonic() - began < 1.0
    finally:
        hold.shutdown()


def test_should_wake_at_once_a_hold_whose_queue_moved_before_it_registered(
    service: PullHoldService, ends: Ends
) -> None:
    ends[("t", 0)] = 3  # an arrival between the pull's read and hold(): no notify will come
    wakes = Wakes()
    service.hold("t", 0, 2, 1_000, wakes.callback("late"))
    assert wakes.event.wait(1.0)
    assert [(n, a) for n, a, _ in wakes.calls] == [("late", True)]


def test_should_release_every_hold_at_shutdown_and_answer_later_ones_at_once(
    ends: Ends,
) -> None:
    hold = PullHoldService(ends)
    hold.start()
    wakes = Wakes()
    hold.hold("t", 0, 0, 10_000, wakes.callback("a"))
    hold.hold("t", 1, 0, 10_000, wakes.callback("b"))
    hold.shutdown()
    assert sorted((n, a) for n, a, _ in wakes.calls) == [("a", False), ("b", False)]
    hold.hold("t", 2, 0, 10_000, wakes.callback("after"))
    assert ("after", False) in [(n, a) for n, a, _ in wakes.calls]


def test_should_keep_serving_after_a_wake_callback_raises(
    service: PullHoldService, ends: Ends
) -> None:
    def boom(arrived: bool) -> None:
        raise RuntimeError("callback bug")

    wakes = Wakes()
    service.hold("t", 0, 0, 1_000, boom)
    service.hold("t", 0, 0, 1_000, wakes.callback("next"))
    service.on_arrival("t", 0, 1)
    assert wakes.event.wait(1.0)
    wakes.event.clear()
    service.hold("t", 1, 0, 40, wakes.callback("timeout"))
    assert wakes.event.wait(1.0)


class _Answer:
    """Stands for what a held pull's callback holds (its request, session and answer)."""

    def __init__(self, wakes: Wakes) -> None:
        self.wakes = wakes

    def __call__(self, arrived: bool) -> None:
        self.wakes.calls.append(("answer", arrived, threading.current_thread().name))


def test_should_let_go_of_a_woken_holds_callback_before_its_deadline(
    service: PullHoldService, ends: Ends
) -> None:
    wakes = Wakes()
    answer = _Answer(wakes)
    alive = weakref.ref(answer)
    service.hold("t", 1, 5, 2_000, answer)
    del answer
    ends[("t", 1)] = 6
    service.on_arrival("t", 1, 6)
    wait_for(lambda: wakes.calls, what="the wake")
    wait_for(lambda: alive() is None, what="the callback let go", timeout_s=1.0)


def test_should_keep_the_deadline_heap_to_the_live_holds_under_many_woken_ones(
    service: PullHoldService, ends: Ends
) -> None:
    wakes = Wakes()
    service.hold("t", 3, 0, 2_000, wakes.callback("live"))  # ahead of the woken in the heap
    for offset in range(3_000):
        service.hold("t", 1, offset, 2_000, wakes.callback("a"))
        ends[("t", 1)] = offset + 1
        service.on_arrival("t", 1, offset + 1)
    # no deadline has passed: the woken holds' entries went as later holds came, not at their
    # deadlines (a caught-up consumer's one a message, kept 20 s, fed the garbage collector)
    assert len(wakes.calls) == 3_000
    assert len(service._deadlines) <= 256
    service.hold("t", 2, 0, 50, wakes.callback("timeout"))  # the expiry runs past them
    wait_for(lambda: ("timeout", False) in [c[:2] for c in wakes.calls], what="the timeout")
    assert all(arrived for name, arrived, _ in wakes.calls if name == "a")
