from __future__ import annotations

import threading
import time

from aeromq.broker import StoreIOError
from aeromq.broker.store._group_commit import GroupCommitService


class FakeLog:
    """Counts flushes; ``end`` is what a flush makes durable; can block or fail."""

    def __init__(self) -> None:
        self.end = 0
        self.flushes = 0
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.fail = False

    def flush(self) -> int:
        self.entered.set()
        self.gate.wait(5)
        if self.fail:
            raise StoreIOError("flush failed", path="x")
        self.flushes += 1
        return self.end


def test_should_release_a_waiter_once_its_offset_is_flushed() -> None:
    log = FakeLog()
    service = GroupCommitService(log.flush, 0, timeout_ms=2000)
    service.start()
    try:
        log.end = 100
        assert service.wait_durable(100)
        assert service.flushed_offset == 100 and log.flushes == 1
        assert service.wait_durable(50)  # already durable: no flush
        assert log.flushes == 1
    finally:
        service.stop()


def test_should_cover_many_waiters_with_one_flush() -> None:
    log = FakeLog()
    service = GroupCommitService(log.flush, 0, timeout_ms=5000)
    service.start()
    log.gate.clear()
    log.end = 10
    results: list[bool] = []
    leader = threading.Thread(target=lambda: results.append(service.wait_durable(10)))
    leader.start()
    assert log.entered.wait(5)  # the first writer leads a flush; the disk is slow
    log.end = 80  # seven more writers append while the disk works
    followers = [
        threading.Thread(target=lambda n=n: results.append(service.wait_durable(20 + n * 10)))
        for n in range(7)
    ]
    for thread in followers:
        thread.start()
    time.sleep(0.05)
    log.gate.set()
    for thread in [leader, *followers]:
        thread.join(5)
    service.stop()
    assert results == [True] * 8
    assert log.flushes == 1  # the leader's flush covered everyone


def test_should_time_out_a_follower_when_the_disk_does_not_answer() -> None:
    log = FakeLog()
    log.gate.clear()
    service = GroupCommitService(log.flush, 0, timeout_ms=50)
    service.start()
    log.end = 10
    outcomes: list[bool] = []
    leader = threading.Thread(target=lambda: outcomes.append(service.wait_durable(10)))
    leader.start()
    assert log.entered.wait(5)
    began = time.monotonic()
    assert not service.wait_durable(10)  # a follower gives up after the timeout
    assert 0.04 < time.monotonic() - began < 2
    service.request(10, outcomes.append)
    deadline = time.monotonic() + 5
    while not outcomes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert outcomes == [False]  # the callback timed out too, on the service's thread
    log.gate.set()
    leader.join(5)
    assert outcomes == [False, True]  # the leader itself waits for its own flush
    service.stop()


def test_should_call_back_when_durable_and_fail_everyone_after_a_disk_error() -> None:
    log = FakeLog()
    service = GroupCommitService(log.flush, 0, timeout_ms=2000)
    service.start()
    log.end = 30
    done = threading.Event()
    outcomes: list[bool] = []

    def record(ok: bool) -> None:
        outcomes.append(ok)
        done.set()

    service.request(30, record)
    assert done.wait(5) and outcomes == [True]
    service.request(20, outcomes.append)  # already durable: called at once
    assert outcomes == [True, True]
    log.fail = True
    log.end = 60
    assert not service.wait_durable(60)
    assert isinstance(service.failure, StoreIOError)
    service.request(60, outcomes.append)
    assert outcomes[-1] is False
    service.stop()


def test_should_flush_what_was_asked_before_stopping() -> None:
    log = FakeLog()
    service = GroupCommitService(log.flush, 0, timeout_ms=2000)
    service.start()
    log.gate.clear()
    log.end = 40
    outcomes: list[bool] = []
    service.request(40, outcomes.append)
    stopper = threading.Thread(target=service.stop)
    stopper.start()
    log.gate.set()
    stopper.join(5)
    assert outcomes == [True]
