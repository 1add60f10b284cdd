from __future__ import annotations

import threading
import time

from aeromq.consumer.scheduler import TaskScheduler


def test_should_run_actions_in_due_order() -> None:
    scheduler = TaskScheduler()
    scheduler.start()
    ran: list[str] = []
    done = threading.Event()
    try:
        scheduler.schedule(60, lambda: (ran.append("late"), done.set()))
        scheduler.schedule(0, lambda: ran.append("now"))
        scheduler.schedule(20, lambda: ran.append("soon"))
        assert done.wait(5)
        assert ran == ["now", "soon", "late"]
    finally:
        scheduler.shutdown()


def test_should_wait_at_least_the_delay() -> None:
    scheduler = TaskScheduler()
    scheduler.start()
    done = threading.Event()
    try:
        start = time.monotonic()
        scheduler.schedule(50, done.set)
        assert done.wait(5)
        assert time.monotonic() - start >= 0.045
    finally:
        scheduler.shutdown()


def test_should_count_a_failing_action_and_go_on() -> None:
    scheduler = TaskScheduler()
    scheduler.start()
    done = threading.Event()

    def fail() -> None:
        raise RuntimeError("boom")

    try:
        scheduler.schedule(0, fail)
        scheduler.schedule(5, done.set)
        assert done.wait(5)
        assert scheduler.errors == 1
    finally:
        scheduler.shutdown()


def test_should_drop_pending_actions_on_shutdown() -> None:
    scheduler = TaskScheduler()
    scheduler.start()
    ran = threading.Event()
    scheduler.schedule(10_000, ran.set)
    assert scheduler.pending() == 1
    scheduler.shutdown()
    assert scheduler.pending() == 0
    scheduler.schedule(0, ran.set)
    assert not ran.wait(0.05)
