"""A waiting caller's answer (``client/_sync_answer.py``): completed once, by any thread, and
waited for with a timeout, as a ``Future`` is."""

from __future__ import annotations

import threading
from concurrent.futures import InvalidStateError

import pytest

from aeromq.client._sync_answer import SyncAnswer


def test_should_give_its_value_once_completed() -> None:
    answer: SyncAnswer[str] = SyncAnswer()
    assert not answer.done()
    answer.set_result("stored")
    assert answer.done()
    assert answer.result() == answer.result(0) == "stored"


def test_should_raise_the_error_it_was_completed_with() -> None:
    answer: SyncAnswer[str] = SyncAnswer()
    answer.set_exception(ValueError("refused"))
    with pytest.raises(ValueError, match="refused"):
        answer.result(1.0)


def test_should_refuse_a_second_completion_keeping_the_first() -> None:
    answer: SyncAnswer[str] = SyncAnswer()
    answer.set_result("first")
    with pytest.raises(InvalidStateError):
        answer.set_result("second")
    with pytest.raises(InvalidStateError):
        answer.set_exception(ValueError("late"))
    assert answer.result() == "first"


def test_should_wait_for_another_thread_and_time_out_without_it() -> None:
    answer: SyncAnswer[int] = SyncAnswer()
    with pytest.raises(TimeoutError):
        answer.result(0.01)
    completer = threading.Timer(0.02, answer.set_result, args=(7,))
    completer.start()
    try:
        assert answer.result(10.0) == 7
    finally:
        completer.join(10.0)
