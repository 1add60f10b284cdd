from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from aeromq.client import MessageExt, MessageQueue
from aeromq.client.scheduler import TaskScheduler
from aeromq.consumer.consume_request_cache import ConsumeRequest, ConsumeRequestCache
from aeromq.consumer.process_queue import ProcessQueue

Q0 = MessageQueue("T", "b", 0)
Q1 = MessageQueue("T", "b", 1)


def request(queue: MessageQueue, offset: int = 0) -> ConsumeRequest:
    return ConsumeRequest([MessageExt("T", b"x", queue_offset=offset)], queue, ProcessQueue())


def test_should_return_requests_oldest_first() -> None:
    cache = ConsumeRequestCache()
    first, second = request(Q0), request(Q1)
    cache.put(first)
    cache.put(second)
    assert len(cache) == 2
    assert cache.take(0) is first
    assert cache.take(0) is second
    assert cache.take(0) is None


def test_should_stop_calling_a_bound_method_listener_removed_as_a_new_object() -> None:
    class Waiter:
        def __init__(self) -> None:
            self.calls = 0

        def on_delivery(self) -> None:
            self.calls += 1

    waiter = Waiter()
    cache = ConsumeRequestCache()
    cache.add_listener(waiter.on_delivery)
    cache.put(request(Q0))
    cache.remove_listener(waiter.on_delivery)  # another bound method object, equal to the first
    cache.put(request(Q1))

    assert waiter.calls == 1


def test_should_put_a_split_batch_back_at_the_head() -> None:
    cache = ConsumeRequestCache()
    cache.put(request(Q0))
    rest = request(Q1)
    cache.put_back(rest)
    assert cache.take(0) is rest


def test_should_time_out_when_nothing_arrives() -> None:
    cache = ConsumeRequestCache()
    start = time.monotonic()
    assert cache.take(0.05) is None
    assert 0.04 <= time.monotonic() - start < 1.0


def test_should_wake_a_waiting_take_when_a_request_arrives() -> None:
    cache = ConsumeRequestCache()
    arriving = request(Q0)
    timer = threading.Timer(0.05, cache.put, (arriving,))
    timer.start()
    start = time.monotonic()
    assert cache.take(5.0) is arriving
    assert time.monotonic() - start < 2.0
    timer.join()


def test_should_remove_the_requests_of_one_queue() -> None:
    cache = ConsumeRequestCache()
    for queue in (Q0, Q1, Q0):
        cache.put(request(queue))
    assert cache.remove_queue(Q0) == 2
    taken = cache.take(0)
    assert taken is not None and taken.queue == Q1
    assert len(cache) == 0


def test_should_return_at_once_after_close() -> None:
    cache = ConsumeRequestCache()
    threading.Timer(0.05, cache.close).start()
    start = time.monotonic()
    assert cache.take(5.0) is None
    assert time.monotonic() - start < 2.0


class FakePump:
    """An answer pump: ``read_until`` runs ``answers`` (as reading a pull answer runs its
    callback, on the reading thread), then waits for ``done()`` or a wake until the deadline."""

    def __init__(self, answers: Callable[[], None] = lambda: None, can_read: bool = True) -> None:
        self.answers = answers
        self.can_read = can_read
        self.readers: list[int] = []
        self.reading = False  # in read_until, counted as a reader (while ``before`` runs)
        self.wakes = 0
        self._woken = threading.Event()

    def read_until(
        self,
        done: Callable[[], bool],
        deadline_ns: int,
        before: Callable[[], None] | None = None,
    ) -> bool:
        if not self.can_read:
            return False
        self.readers.append(threading.get_ident())
        self.reading = True
        try:
            if before is not None:
                before()
        finally:
            self.reading = False
        self.answers()
        while not done() and time.monotonic_ns() < deadline_ns:
            self._woken.wait(max(0.0, (deadline_ns - time.monotonic_ns()) / 1e9))
            self._woken.clear()
        return True

    def wake_readers(self) -> None:
        self.wakes += 1
        self._woken.set()


def test_should_read_the_answers_through_the_pump_on_the_waiting_thread() -> None:
    cache = ConsumeRequestCache()
    arriving = request(Q0)
    pump = FakePump(lambda: cache.put(arriving))  # the answer's callback, on the taker's thread
    cache.pump_with(lambda: pump)
    assert cache.take(5.0) is arriving
    assert pump.readers == [threading.get_ident()]
    assert pump.wakes == 0  # a put on the reading thread itself rings nobody


def test_should_wake_the_pumping_thread_when_another_thread_puts() -> None:
    cache = ConsumeRequestCache()
    pump = FakePump()
    cache.pump_with(lambda: pump)
    arriving = request(Q0)
    timer = threading.Timer(0.05, cache.put, (arriving,))
    timer.start()
    start = time.monotonic()
    assert cache.take(5.0) is arriving
    assert time.monotonic() - start < 2.0
    assert pump.wakes >= 1
    timer.join()
    threading.Timer(0.05, cache.close).start()
    start = time.monotonic()
    assert cache.take(5.0) is None  # close wakes it too
    assert time.monotonic() - start < 2.0


def test_should_wait_on_the_condition_when_the_pump_cannot_read() -> None:
    cache = ConsumeRequestCache()
    pumps = [FakePump(can_read=False), None]
    cache.pump_with(lambda: pumps[0])
    arriving = request(Q0)
    timer = threading.Timer(0.05, cache.put, (arriving,))
    timer.start()
    assert cache.take(5.0) is arriving
    timer.join()
    cache.pump_with(lambda: pumps[1])  # no session to read now
    assert cache.take(0.05) is None


# -- deferred actions (a caught-up queue's next pull, consumer/pull_task.py) --------------------


def deferring_pump(
    cache: ConsumeRequestCache, arriving: ConsumeRequest, log: list[str]
) -> FakePump:
    """A pump whose answer caches ``arriving`` and defers an action, as a caught-up queue's
    answer does on a ``poll()``'s thread; the action logs whether the pump was reading."""
    pump = FakePump()

    def action() -> None:
        log.append("as reader" if pump.reading else "plain")

    def answer() -> None:
        cache.put(arriving)
        log.append("deferred" if cache.defer(action) else "refused")

    pump.answers = answer
    return pump


def test_should_run_a_deferred_action_as_the_pumps_reader_before_the_next_wait() -> None:
    cache = ConsumeRequestCache()
    log: list[str] = []
    arriving = request(Q0)
    pump = deferring_pump(cache, arriving, log)
    cache.pump_with(lambda: pump)
    assert cache.take(5.0) is arriving
    assert log == ["deferred"]  # not run before the take returned
    pump.answers = lambda: None
    assert cache.take(0.05) is None  # waits: the action first, as the pump's reader
    assert log == ["deferred", "as reader"]
    assert cache.take(0.05) is None
    assert log == ["deferred", "as reader"]  # once


def test_should_run_deferred_actions_at_once_when_the_next_take_does_not_wait() -> None:
    for timeout_s in (5.0, 0.0):
        cache = ConsumeRequestCache()
        log: list[str] = []
        pump = deferring_pump(cache, request(Q0), log)
        cache.pump_with(lambda pump=pump: pump)  # type: ignore[misc]
        cache.take(5.0)
        waiting = request(Q1)
        if timeout_s:
            cache.put(waiting)  # cached: the take returns it without a wait
        assert cache.take(timeout_s) is (waiting if timeout_s else None)
        assert log == ["deferred", "plain"], timeout_s


def test_should_leave_deferred_actions_to_a_take_marked_first() -> None:
    cache = ConsumeRequestCache()
    log: list[str] = []
    pump = deferring_pump(cache, request(Q0), log)
    cache.pump_with(lambda: pump)
    cache.take(5.0)
    also = request(Q1)
    cache.put(also)
    assert cache.take(0.0, first=False) is also  # a poll's later take gathers, runs nothing
    assert log == ["deferred"]


def test_should_refuse_to_defer_off_the_thread_reading_in_take() -> None:
    cache = ConsumeRequestCache()
    assert not cache.defer(lambda: None)  # nobody reads in take: the caller runs it
    log: list[str] = []
    pump = deferring_pump(cache, request(Q0), log)
    cache.pump_with(lambda: pump)
    cache.take(5.0)
    cache.close()
    assert not cache.defer(lambda: None)
    assert cache.take(0.0) is None
    assert log == ["deferred"]  # close dropped it: nothing runs after shutdown


def test_should_run_the_other_deferred_actions_when_one_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = ConsumeRequestCache()
    ran: list[int] = []

    def failing() -> None:
        raise RuntimeError("boom")

    def answer() -> None:
        cache.put(request(Q0))
        cache.defer(failing)
        cache.defer(lambda: ran.append(1))

    pump = FakePump(answer)
    cache.pump_with(lambda: pump)
    cache.take(5.0)
    cache.take(0.0)
    assert ran == [1]
    assert "deferred consume action failed" in caplog.text


# -- the deferral's bound (defer_at_most: deferred_pull_max_delay_ms) ----------------------------


def test_should_run_a_deferred_action_from_the_scheduler_when_no_take_comes_within_the_bound() -> (
    None
):
    scheduler = TaskScheduler("test-deferral-bound")
    scheduler.start()
    try:
        cache = ConsumeRequestCache()
        cache.defer_at_most(50, scheduler.schedule)
        ran: list[tuple[str, float]] = []
        done = threading.Event()

        def action() -> None:
            ran.append((threading.current_thread().name, time.monotonic()))
            done.set()

        def answer() -> None:
            cache.put(request(Q0))
            assert cache.defer(action)

        pump = FakePump(answer)
        cache.pump_with(lambda: pump)
        deferred_at = time.monotonic()
        assert cache.take(5.0) is not None
        assert done.wait(5.0), "the bound never ran the deferred action"
        [(thread, at)] = ran
        assert thread == "test-deferral-bound"
        assert at - deferred_at >= 0.05  # not before the bound
        pump.answers = lambda: None
        assert cache.take(0.0) is None  # nothing left for the next take: it ran once
        time.sleep(0.1)
        assert len(ran) == 1
    finally:
        scheduler.shutdown()


Scheduled = list[tuple[int, Callable[[], None]]]


def deferred_under_a_minute_bound() -> tuple[ConsumeRequestCache, FakePump, list[str], Scheduled]:
    """A cache bounded at 60 s whose sweeps are only recorded (``(delay_ms, sweep)``), after a
    take whose answer deferred an action (logged as it runs, see :func:`deferring_pump`)."""
    scheduled: Scheduled = []
    cache = ConsumeRequestCache()
    cache.defer_at_most(60_000, lambda delay_ms, sweep: scheduled.append((delay_ms, sweep)))
    log: list[str] = []
    pump = deferring_pump(cache, request(Q0), log)
    cache.pump_with(lambda: pump)
    cache.take(5.0)
    return cache, pump, log, scheduled


def test_should_not_run_a_deferred_action_again_when_a_take_ran_it_within_the_bound() -> None:
    cache, pump, log, scheduled = deferred_under_a_minute_bound()
    assert [delay for delay, _ in scheduled] == [60_000]  # one sweep armed
    pump.answers = lambda: None
    cache.take(0.0)  # the next take runs it
    assert log == ["deferred", "plain"]
    scheduled.pop()[1]()  # the sweep finds nothing, arms nothing
    assert log == ["deferred", "plain"]
    assert scheduled == []


def test_should_arm_the_next_sweep_for_an_action_not_due_yet() -> None:
    _, _, log, scheduled = deferred_under_a_minute_bound()
    scheduled.pop()[1]()  # early (a sweep armed for an older action): not due, armed again
    assert log == ["deferred"]
    [(delay_ms, _)] = scheduled
    assert 59_000 < delay_ms <= 60_000


def test_should_refuse_a_deferral_bound_under_one_millisecond() -> None:
    with pytest.raises(ValueError, match="at least 1 ms, not 0"):
        ConsumeRequestCache().defer_at_most(0, lambda delay_ms, action: None)
