"""When a caller polls for its answer before it sleeps (``client/_back_to_back.py``): only once
its requests have come back to back for a streak, and only while the answers come within the
window."""

from __future__ import annotations

import pytest

from aeromq.client import IllegalArgumentError, SessionConfig
from aeromq.client._back_to_back import (
    BACK_TO_BACK_GAP_NS,
    BACK_TO_BACK_STREAK,
    BackToBackSpin,
)
from aeromq.producer import ProducerConfig

WINDOW_NS = 100_000


def _back_to_back(spin: BackToBackSpin, requests: int, start_ns: int) -> list[bool]:
    """``requests`` requests, the first 10 us after ``start_ns``, each 10 us after the answer
    before it, answered 40 us later (within the window): whether each polled."""
    asked = []
    now_ns = start_ns
    for _ in range(requests):
        now_ns += 10_000
        asked.append(spin.should_poll(now_ns))
        now_ns += 40_000
        if asked[-1]:
            spin.predictor.observe(40_000)
        spin.answered(now_ns)
    return asked


def test_should_poll_once_a_streak_of_requests_came_back_to_back() -> None:
    spin = BackToBackSpin(WINDOW_NS)
    spin.answered(0)
    asked = _back_to_back(spin, BACK_TO_BACK_STREAK + 4, start_ns=0)
    assert asked == [False] * (BACK_TO_BACK_STREAK - 1) + [True] * 5


def test_should_not_poll_for_a_paced_caller() -> None:
    spin = BackToBackSpin(WINDOW_NS)
    now_ns = 0
    asked = []
    for _ in range(100):
        now_ns += 200_000  # a producer paced at 5,000 a second: it slept between its sends
        asked.append(spin.should_poll(now_ns))
        spin.answered(now_ns + 100_000)
        now_ns += 100_000
    assert not any(asked)


def test_should_start_the_streak_again_after_one_request_that_was_not_back_to_back() -> None:
    spin = BackToBackSpin(WINDOW_NS)
    spin.answered(0)
    assert _back_to_back(spin, BACK_TO_BACK_STREAK, start_ns=0)[-1]
    late_ns = 10_000_000
    spin.answered(late_ns - BACK_TO_BACK_GAP_NS)
    assert not spin.should_poll(late_ns)  # the gap was the limit: not back to back
    spin.answered(late_ns)
    asked = _back_to_back(spin, BACK_TO_BACK_STREAK, start_ns=late_ns)
    assert asked == [False] * (BACK_TO_BACK_STREAK - 1) + [True]


def test_should_stop_polling_while_the_answers_come_later_than_the_window() -> None:
    spin = BackToBackSpin(WINDOW_NS)
    spin.answered(0)
    _back_to_back(spin, BACK_TO_BACK_STREAK, start_ns=0)
    now_ns = BACK_TO_BACK_STREAK * 50_000  # the last answer's time
    asked = []
    for _ in range(60):
        now_ns += 10_000
        asked.append(spin.should_poll(now_ns))
        if asked[-1]:
            spin.predictor.observe(WINDOW_NS)  # polled through the window: no answer
        now_ns += 500_000
        spin.answered(now_ns)
    # a few polls while the score falls, then none but the predictor's rare probe
    assert sum(asked[:4]) >= 3
    assert sum(asked[4:]) <= 1, asked


def test_should_never_poll_with_a_window_of_zero() -> None:
    spin = BackToBackSpin(0)
    spin.answered(0)
    assert not any(_back_to_back(spin, 100, start_ns=0))


def test_should_refuse_a_negative_or_non_int_spin_window() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(IllegalArgumentError, match="back_to_back_spin_us"):
            SessionConfig(back_to_back_spin_us=bad)  # type: ignore[arg-type]
        with pytest.raises(IllegalArgumentError, match="back_to_back_spin_us"):
            ProducerConfig(back_to_back_spin_us=bad)  # type: ignore[arg-type]
    assert SessionConfig(back_to_back_spin_us=0).back_to_back_spin_us == 0
