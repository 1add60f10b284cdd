"""Who reads a rung session's answers (``client/_answer_readers.py``), against a broker's
session agent served in this process by ``tests/broker/data``'s fixtures over a real driver
(IPC: the agent rings the session's doorbell after each answer): the thread that waits reads,
and the session's poller thread keeps asleep, waking for its housekeeping, for a request
nobody waits for, and when the session closes."""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import Future
from typing import Any, cast

import pytest

from aeromq.client import _back_to_back
from aeromq.client._back_to_back import BACK_TO_BACK_SCORE_POLLS
from aeromq.client.session import DEFAULT_BACK_TO_BACK_SPIN_US, ClientSession, SessionConfig
from aeromq.common import PullAnswer
from aeromq.transport.client import Aeron, Subscription
from aeromq.transport.concurrent.doorbell import Doorbell
from tests.broker.data.conftest import pull_request, send_request
from tests.broker.data.test_sessions import Server
from tests.client._helpers import poller_wakeups

ROUNDS = 20
GAP_S = 0.01
HOUSEKEEPING_NS = 100_000_000
"""The poller's housekeeping period while callers read (the driver check)."""


def test_should_read_the_answer_on_the_waiting_thread_while_the_poller_sleeps(
    server: Server, client_aeron: Aeron
) -> None:
    with ClientSession.connect(client_aeron, SessionConfig()) as session:
        assert session.rung_by_broker
        session.request(send_request(b"warm"))
        before = poller_wakeups(session)
        started_ns = time.monotonic_ns()
        for i in range(ROUNDS):
            time.sleep(GAP_S)
            assert session.request(send_request(b"%d" % i)).status.code == 0
        woken = poller_wakeups(session) - before
        housekeeping = (time.monotonic_ns() - started_ns) // HOUSEKEEPING_NS + 1
    # asleep until its housekeeping (every 100 ms): a few wake-ups over 20 requests, where a
    # poller that read the answers (or polled for them) woke for each on top of its
    # housekeeping, or every millisecond (189 measured before). The housekeeping's share is
    # counted from the rounds' own time: a loaded machine stretches them past the 0.2 s planned
    assert woken <= housekeeping + ROUNDS // 2, (woken, housekeeping)


def test_should_keep_an_idle_session_to_about_ten_wakeups_a_second(
    server: Server, client_aeron: Aeron
) -> None:
    with ClientSession.connect(client_aeron, SessionConfig()) as session:
        session.request(send_request(b"warm"))
        before = poller_wakeups(session)
        started_ns = time.monotonic_ns()
        time.sleep(1.0)
        woken = poller_wakeups(session) - before
        idle_s = (time.monotonic_ns() - started_ns) / 1e9
    # the driver check every 100 ms, and a keepalive: about ten a second, where a polling
    # poller woke a thousand times (the bound follows the sleep, which a loaded machine stretches)
    assert woken <= 30 * idle_s, (woken, idle_s)


def test_should_read_an_answer_nobody_waits_for_at_once(
    server: Server, client_aeron: Aeron
) -> None:
    with ClientSession.connect(client_aeron, SessionConfig()) as session:
        latencies_ms = []
        for i in range(5):
            session.request(send_request(b"sync %d" % i))  # the poller keeps out of the way
            answered = threading.Event()
            started = time.monotonic_ns()
            future = session.request_async(send_request(b"async %d" % i))
            future.add_done_callback(lambda _, done=answered: done.set())
            assert answered.wait(5.0)
            latencies_ms.append((time.monotonic_ns() - started) / 1e6)
    # the request called the poller: read as it came, not at its next housekeeping (100 ms)
    assert statistics.median(latencies_ms) < 50, latencies_ms


def test_should_read_until_done_on_the_calling_thread(server: Server, client_aeron: Aeron) -> None:
    with ClientSession.connect(client_aeron, SessionConfig()) as session:
        session.request(send_request(b"one"))
        threads: list[int] = []
        future = session.request_async(pull_request())
        future.add_done_callback(lambda _: threads.append(threading.get_ident()))
        deadline_ns = time.monotonic_ns() + 5_000_000_000
        assert session.read_until(future.done, deadline_ns)
        assert isinstance(future.result(0), PullAnswer)
        assert threads == [threading.get_ident()]  # its callback ran on the reading thread


def test_should_stop_reading_when_another_thread_wakes_the_readers(
    server: Server, client_aeron: Aeron
) -> None:
    with ClientSession.connect(client_aeron, SessionConfig()) as session:
        session.request(send_request(b"one"))
        flag = threading.Event()

        def later() -> None:
            time.sleep(0.05)
            flag.set()
            session.wake_readers()

        waker = threading.Thread(target=later)
        waker.start()
        started = time.monotonic()
        assert session.read_until(flag.is_set, time.monotonic_ns() + 10_000_000_000)
        assert time.monotonic() - started < 5.0  # woken, not at the deadline
        waker.join()


def test_should_not_read_in_a_callback_of_the_same_session(
    server: Server, client_aeron: Aeron
) -> None:
    with ClientSession.connect(client_aeron, SessionConfig()) as session:
        nested: list[bool] = []

        def callback(_: Future[PullAnswer]) -> None:
            nested.append(session.read_until(lambda: True, time.monotonic_ns() + 1_000_000))

        future = session.request_async(pull_request())
        future.add_done_callback(callback)
        session.read_until(future.done, time.monotonic_ns() + 5_000_000_000)
        assert nested == [False]  # the reading thread holds the poll: no nested read


class _CountingCalls:
    """A stand-in for a session's subscription or doorbell that counts one thread's calls of
    one of its methods (the caller's polls, or its sleeps)."""

    def __init__(self, wrapped: Any, method: str, thread: int) -> None:
        self._wrapped = wrapped
        self._method = method
        self._thread = thread
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._wrapped, name)
        if name != self._method:
            return attribute

        def counted(*args: Any) -> Any:
            if threading.get_ident() == self._thread:
                self.calls += 1
            return attribute(*args)

        return counted


@pytest.mark.parametrize(
    ("back_to_back_spin_us", "gap_s"), [(0, 0.0), (DEFAULT_BACK_TO_BACK_SPIN_US, 0.002)]
)
def test_should_sleep_on_the_doorbell_at_once_while_waiting_for_an_answer(
    server: Server, client_aeron: Aeron, back_to_back_spin_us: int, gap_s: float
) -> None:
    # a caller sending back to back with its polls for the answer off, and a paced caller
    # (2 ms between its requests) on the defaults
    config = SessionConfig(back_to_back_spin_us=back_to_back_spin_us)
    with ClientSession.connect(client_aeron, config) as session:
        session.request(send_request(b"warm"))
        reader = session._reader
        counting = _CountingCalls(reader.subscription, "poll", threading.get_ident())
        reader.subscription = cast(Subscription, counting)  # a counting stand-in
        for i in range(ROUNDS):
            time.sleep(gap_s)
            assert session.request(send_request(b"%d" % i)).status.code == 0
    # no poll before the sleep (the doorbell's word is read before the request goes out, so
    # the answer's ring ends the first wait) and one after the ring, and a few a spurious
    # wake-up adds; with a poll before the sleep it was 1.6-2 a request, and a caller polling
    # through a 200 us spin window first polled 10-30 times a request
    assert counting.calls <= ROUNDS * 3 // 2, counting.calls


def test_should_poll_for_its_answer_rather_than_sleep_once_sending_back_to_back(
    server: Server, client_aeron: Aeron, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a window long enough for any answer, and any request within a second back to back (the
    # caller waits for the interpreter the agent's thread of this process holds, which counts
    # as a sleep of its own): what is held is that the caller polls rather than sleeps
    monkeypatch.setattr(_back_to_back, "voluntary_switches", lambda: 0)
    monkeypatch.setattr(_back_to_back, "RAN_WITHIN_NS", 1_000_000_000)
    config = SessionConfig(back_to_back_spin_us=200_000)
    rounds = BACK_TO_BACK_SCORE_POLLS + ROUNDS
    with ClientSession.connect(client_aeron, config) as session:
        session.request(send_request(b"warm"))
        reader = session._reader
        assert reader.doorbell is not None
        counting = _CountingCalls(reader.doorbell, "await_ring", threading.get_ident())
        reader.doorbell = cast(Doorbell, counting)  # a counting stand-in
        for i in range(rounds):
            assert session.request(send_request(b"%d" % i)).status.code == 0
    # one sleep a request until the score reaches its mark (the first request of the loop is back to back
    # with the warm one), then none but what a spurious end of a poll adds
    assert counting.calls <= BACK_TO_BACK_SCORE_POLLS + 3, counting.calls


def test_should_sleep_before_its_first_poll_after_a_read_that_read_every_answer(
    server: Server, client_aeron: Aeron
) -> None:
    with (
        ClientSession.connect(client_aeron, SessionConfig()) as session,
        ClientSession.connect(client_aeron, SessionConfig()) as producer,
    ):
        producer.request(send_request(b"warm"))
        pulls: list[Future[Any]] = []

        def pull_next(offset: int) -> None:
            # a caught-up pull, held until the producer's next send; each sent from its
            # predecessor's callback, on the reading thread (as a consumer's pull task does)
            pull = session.request_async(pull_request(offset=offset, suspend_timeout_ms=5_000))
            if offset <= ROUNDS:
                pull.add_done_callback(lambda _: pull_next(offset + 1))
            pulls.append(pull)

        pull_next(1)
        reader = session._reader
        counting = _CountingCalls(reader.subscription, "poll", threading.get_ident())
        reader.subscription = cast(Subscription, counting)  # a counting stand-in
        for i in range(ROUNDS):
            # the send comes once this thread is reading (a consumer's poll() waiting for its
            # next message)
            sender = threading.Timer(0.005, producer.request, (send_request(b"%d" % i),))
            sender.start()
            assert session.read_until(pulls[i].done, time.monotonic_ns() + 5_000_000_000)
            sender.join()
            answer = pulls[i].result(0)
            assert isinstance(answer, PullAnswer) and answer.next_begin_offset == i + 2
    # each read after the first sleeps on the word the one before it kept, and polls once, as
    # the answer's ring wakes it (a spurious wake-up adds one); with a poll before the sleep,
    # which finds nothing while the pull is held, two a read
    assert counting.calls <= ROUNDS * 3 // 2, counting.calls


def test_should_not_sleep_through_an_answer_that_came_between_two_reads(
    server: Server, client_aeron: Aeron
) -> None:
    with (
        ClientSession.connect(client_aeron, SessionConfig()) as session,
        ClientSession.connect(client_aeron, SessionConfig()) as producer,
    ):
        for queue_id in (0, 1):
            producer.request(send_request(b"warm", queue_id=queue_id))
        first, second = (
            session.request_async(pull_request(queue_id, offset=1, suspend_timeout_ms=5_000))
            for queue_id in (0, 1)
        )
        producer.request(send_request(b"first", queue_id=0))
        assert session.read_until(first.done, time.monotonic_ns() + 5_000_000_000)
        # the other queue's answer comes, and rings, while nobody reads: the word the first
        # read kept is older than that ring, so the next read does not sleep on it
        producer.request(send_request(b"second", queue_id=1))
        time.sleep(0.05)
        assert session.read_until(second.done, time.monotonic_ns() + 5_000_000_000)
        assert second.done(), "slept through an answer that had rung"
