from __future__ import annotations

import threading
import time

import pytest

from aeromq.broker.store._arrival import ArrivalNotifier
from aeromq.broker.store._scheduler import Duty, Scheduler


def test_should_run_duties_when_due_and_count_failures(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    def fail() -> None:
        raise RuntimeError("disk on fire")

    fast = Duty("fast", 10, lambda: ran.append("fast"))
    broken = Duty("broken", 10, fail)
    slow = Duty("slow", 1000, lambda: ran.append("slow"))
    scheduler = Scheduler("test", [fast, broken, slow])
    assert scheduler.run_due(0.0) == 3
    assert scheduler.run_due(0.005) == 0
    assert scheduler.run_due(0.011) == 2
    assert ran == ["fast", "slow", "fast"]
    assert (broken.runs, broken.errors) == (2, 2)
    assert "duty=broken" in caplog.text


def test_should_run_on_its_thread_until_stopped() -> None:
    beat = threading.Event()
    scheduler = Scheduler("test", [Duty("beat", 5, beat.set)])
    scheduler.start()
    try:
        assert beat.wait(5)
    finally:
        scheduler.stop()


def test_should_notify_listeners_and_only_the_queues_waiters() -> None:
    notifier = ArrivalNotifier()
    assert not notifier.active
    heard: list[tuple[str, int, int]] = []

    def listener(topic: str, queue_id: int, max_offset: int) -> None:
        heard.append((topic, queue_id, max_offset))

    notifier.add_listener(listener)
    assert notifier.active
    notifier.notify("T", 1, 5)
    notifier.remove_listener(listener)
    assert not notifier.active
    notifier.notify("T", 1, 6)
    assert heard == [("T", 1, 5)]

    state = {"ready": False}
    results: list[bool] = []
    waiter = threading.Thread(
        target=lambda: results.append(notifier.wait("T", 2, lambda: state["ready"], 5.0))
    )
    waiter.start()
    deadline = time.monotonic() + 5
    while not notifier.active and time.monotonic() < deadline:
        time.sleep(0.001)
    notifier.notify("T", 3, 1)  # another queue
    state["ready"] = True
    notifier.notify("T", 2, 1)
    waiter.join(5)
    assert results == [True]
    assert not notifier.active
    assert not notifier.wait("T", 2, lambda: False, 0.01)


def test_should_call_a_topic_listener_for_that_topics_arrivals_alone() -> None:
    notifier = ArrivalNotifier()
    heard: list[tuple[str, int, int]] = []
    everything: list[str] = []

    def timer_listener(topic: str, queue_id: int, max_offset: int) -> None:
        heard.append((topic, queue_id, max_offset))

    notifier.add_listener(timer_listener, "TIMER")
    notifier.add_listener(lambda topic, _q, _m: everything.append(topic))
    assert notifier.active
    notifier.notify("orders", 0, 1)
    notifier.notify("TIMER", 0, 7)

    assert heard == [("TIMER", 0, 7)]
    assert everything == ["orders", "TIMER"]
    notifier.remove_listener(timer_listener)
    notifier.notify("TIMER", 0, 8)
    assert heard == [("TIMER", 0, 7)]


def test_should_be_inactive_once_its_last_topic_listener_is_removed() -> None:
    notifier = ArrivalNotifier()

    def listener(topic: str, queue_id: int, max_offset: int) -> None:
        raise AssertionError("removed listeners are not called")

    notifier.add_listener(listener, "A")
    notifier.add_listener(listener, "B")
    notifier.remove_listener(listener)

    assert not notifier.active
    notifier.notify("A", 0, 1)


def test_should_remove_a_bound_method_given_again_as_a_new_object() -> None:
    class Service:
        def on_arrival(self, topic: str, queue_id: int, max_offset: int) -> None:
            raise AssertionError("removed listeners are not called")

    service = Service()
    notifier = ArrivalNotifier()
    notifier.add_listener(service.on_arrival)
    notifier.add_listener(service.on_arrival, "TIMER")
    notifier.remove_listener(service.on_arrival)  # another bound method object, equal

    assert not notifier.active
    notifier.notify("TIMER", 0, 1)
