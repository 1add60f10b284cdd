"""When a caller polls for its answer before it sleeps (``client/_back_to_back.py``): only while
its thread makes its requests back to back (running, not sleeping, between an answer and the
next request: a score one request that was not halves), and only while the answers come within
the window."""

from __future__ import annotations

import threading
import time

import pytest

from aeromq.client import IllegalArgumentError, SessionConfig
from aeromq.client._back_to_back import (
    BACK_TO_BACK_PROBE_EVERY,
    BACK_TO_BACK_SCORE_MAX,
    BACK_TO_BACK_SCORE_POLLS,
    RAN_WITHIN_NS,
    BackToBackSpin,
    voluntary_switches,
)
from aeromq.producer import ProducerConfig

WINDOW_NS = 100_000
ANSWER_NS = 40_000


class _Caller:
    """A calling thread, made up: its monotonic clock and its voluntary context switches."""

    def __init__(self, window_ns: int = WINDOW_NS) -> None:
        self.now_ns = 1_000_000_000
        self.switches = 0
        self.spin = BackToBackSpin(window_ns, switches=lambda: self.switches)
        self.spin.answered(self.now_ns)

    def request(
        self,
        ran_ns: int,
        slept_ns: int = 0,
        answer_ns: int = ANSWER_NS,
        preempted_ns: int = 0,
    ) -> bool:
        """After running ``ran_ns``, sleeping ``slept_ns`` (a voluntary switch) and being
        preempted for ``preempted_ns`` (an involuntary one) since the last answer, a request,
        answered ``answer_ns`` later: whether it polled."""
        self.now_ns += ran_ns + slept_ns + preempted_ns
        if slept_ns:
            self.switches += 1
        polled = self.spin.should_poll(self.now_ns)
        self.now_ns += answer_ns
        if polled:
            self.spin.predictor.observe(answer_ns)
        self.spin.answered(self.now_ns)
        return polled

    def in_a_loop(self, requests: int) -> list[bool]:
        """``requests`` requests, each 30 us of the thread's own code after the answer before."""
        return [self.request(ran_ns=30_000) for _ in range(requests)]


def test_should_poll_once_a_few_requests_in_a_row_came_back_to_back() -> None:
    asked = _Caller().in_a_loop(BACK_TO_BACK_SCORE_POLLS + 4)
    assert asked == [False] * (BACK_TO_BACK_SCORE_POLLS - 1) + [True] * 5


def test_should_poll_for_a_caller_whose_own_code_between_requests_is_slow() -> None:
    caller = _Caller()
    # 300 us of its own code between two sends (a busy machine, a heavier message): it ran
    asked = [caller.request(ran_ns=300_000) for _ in range(BACK_TO_BACK_SCORE_POLLS + 2)]
    assert asked[-3:] == [True] * 3


def test_should_not_poll_for_a_paced_caller_however_short_its_sleeps() -> None:
    caller = _Caller()
    # a producer paced at 5,000 a second: 25 us of its own code, then a sleep until it is due
    for slept_ns in (55_000, 20_000, 30_000):
        assert not any(caller.request(ran_ns=25_000, slept_ns=slept_ns) for _ in range(100))


def test_should_keep_polling_through_one_request_that_was_not_back_to_back() -> None:
    caller = _Caller()
    assert caller.in_a_loop(BACK_TO_BACK_SCORE_MAX)[-1]
    assert not caller.request(ran_ns=30_000, slept_ns=2_000_000)  # a pause of the application
    # the score halved, still at the mark: polling again at once
    assert caller.in_a_loop(1) == [True]
    # two pauses in a row: below the mark, and back after a few requests in a loop
    assert not caller.request(ran_ns=30_000, slept_ns=2_000_000)
    assert not caller.request(ran_ns=30_000, slept_ns=2_000_000)
    asked = caller.in_a_loop(BACK_TO_BACK_SCORE_POLLS)
    assert asked[0] is False and asked[-1] is True


def test_should_keep_polling_through_a_preemption_between_two_requests() -> None:
    caller = _Caller()
    assert caller.in_a_loop(BACK_TO_BACK_SCORE_MAX)[-1]
    # another process's thread took the core for 200 us of a 230 us gap: the loop did not
    # sleep, and its next request polls (the thread's CPU time, the rule before, said it had)
    assert caller.request(ran_ns=30_000, preempted_ns=200_000)
    assert caller.spin.score == BACK_TO_BACK_SCORE_MAX


def test_should_never_poll_where_the_switches_are_not_counted() -> None:
    spin = BackToBackSpin(WINDOW_NS, switches=lambda: -1)
    asked = []
    for i in range(BACK_TO_BACK_SCORE_MAX * 2):
        asked.append(spin.should_poll(1_000_000_000 + i * 50_000))
        spin.answered(1_000_000_000 + i * 50_000 + ANSWER_NS)
    assert not any(asked)


def test_should_count_the_voluntary_switches_of_the_calling_thread() -> None:
    before = voluntary_switches()
    assert before >= 0  # (Linux)
    for _ in range(5):
        time.sleep(0.001)  # each sleep blocks the thread
    assert voluntary_switches() >= before + 5
    # another thread's are its own: its sleeps, counted where it reads them
    seen: list[int] = []

    def sleeper() -> None:
        first = voluntary_switches()
        for _ in range(20):
            time.sleep(0.001)
        seen.append(voluntary_switches() - first)

    other = threading.Thread(target=sleeper)
    mine = voluntary_switches()
    other.start()
    other.join()  # (this thread blocks once or twice meanwhile, not twenty times)
    assert seen[0] >= 20
    assert voluntary_switches() - mine < 10


def test_should_not_count_a_request_long_after_the_answer_before_it() -> None:
    caller = _Caller()
    caller.in_a_loop(BACK_TO_BACK_SCORE_MAX)
    # running all along, but past the limit: a caller computing between its sends
    assert not caller.request(ran_ns=RAN_WITHIN_NS)


def test_should_not_count_a_request_of_another_thread() -> None:
    caller = _Caller()
    caller.in_a_loop(BACK_TO_BACK_SCORE_MAX)
    asked: list[bool] = []
    other = threading.Thread(target=lambda: asked.append(caller.request(ran_ns=30_000)))
    other.start()
    other.join()
    assert asked == [False]  # its switches are not the ones read at the answer


def test_should_stop_polling_while_the_answers_come_later_than_the_window() -> None:
    caller = _Caller()
    caller.in_a_loop(BACK_TO_BACK_SCORE_MAX)
    asked = [caller.request(ran_ns=10_000, answer_ns=5 * WINDOW_NS) for _ in range(60)]
    # a few polls while the predictor's score falls, then none but its probe, one in eight
    assert sum(asked[:4]) >= 3
    assert sum(asked[4:]) <= 56 // BACK_TO_BACK_PROBE_EVERY + 1, asked


def test_should_poll_again_within_a_few_requests_once_the_answers_are_quick_again() -> None:
    # a stall of the broker's: answers late for a while, then quick again; the next probe
    # finds it, and the caller polls from there on
    caller = _Caller()
    caller.in_a_loop(BACK_TO_BACK_SCORE_MAX)
    for _ in range(10):
        caller.request(ran_ns=10_000, answer_ns=5 * WINDOW_NS)
    asked = [caller.request(ran_ns=10_000) for _ in range(BACK_TO_BACK_PROBE_EVERY + 4)]
    first = asked.index(True)
    assert first < BACK_TO_BACK_PROBE_EVERY and all(asked[first:]), asked


def test_should_never_poll_with_a_window_of_zero() -> None:
    assert not any(_Caller(window_ns=0).in_a_loop(100))


def test_should_refuse_a_negative_or_non_int_spin_window() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(IllegalArgumentError, match="back_to_back_spin_us"):
            SessionConfig(back_to_back_spin_us=bad)  # type: ignore[arg-type]
        with pytest.raises(IllegalArgumentError, match="back_to_back_spin_us"):
            ProducerConfig(back_to_back_spin_us=bad)  # type: ignore[arg-type]
    assert SessionConfig(back_to_back_spin_us=0).back_to_back_spin_us == 0
