"""The committed offset's waiters: answered once it passes their end, in any order of ends,
timed out as REPLICATION_TIMEOUT, or failed all at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from aeromq.broker.store import PutMessageResult, PutMessageStatus
from aeromq.broker.store._commit_watermark import CommitWatermark


@pytest.fixture
def watermark() -> Iterator[CommitWatermark]:
    commits = CommitWatermark(timeout_ms=200)
    commits.start()
    yield commits
    commits.stop()


def _result() -> PutMessageResult:
    return PutMessageResult(PutMessageStatus.PUT_OK, 0, 0, 1, 10)


def test_should_answer_puts_once_the_committed_offset_passes_their_end(
    watermark: CommitWatermark,
) -> None:
    answered: list[int] = []
    for end in (300, 100, 200):
        watermark.request(end, _result(), lambda r, end=end: answered.append(end))
    watermark.raise_to(150)
    assert watermark.settle() == 1 and answered == [100]
    watermark.raise_to(300)
    assert watermark.settle() == 2 and answered == [100, 200, 300]
    assert watermark.waiting == 0


def test_should_answer_at_once_a_put_already_committed(watermark: CommitWatermark) -> None:
    watermark.raise_to(500)
    got: list[PutMessageResult] = []
    watermark.request(400, _result(), got.append)
    assert [r.status for r in got] == [PutMessageStatus.PUT_OK]


def test_should_never_move_the_committed_offset_down(watermark: CommitWatermark) -> None:
    watermark.raise_to(500)
    watermark.raise_to(100)
    assert watermark.committed_offset == 500


def _timed_out(watermark: CommitWatermark) -> list[PutMessageResult]:
    """A put of end 100 made now, once timed out (after the fixture's 200 ms, within 3 s)."""
    got: list[PutMessageResult] = []
    done = threading.Event()
    began = time.monotonic()
    watermark.request(100, _result(), lambda r: (got.append(r), done.set()))
    assert done.wait(5)
    assert 0.15 <= time.monotonic() - began < 3
    assert got[0].status is PutMessageStatus.REPLICATION_TIMEOUT
    return got


def test_should_time_out_a_put_not_committed_in_time(watermark: CommitWatermark) -> None:
    got = _timed_out(watermark)
    watermark.raise_to(200)
    assert watermark.settle() == 0 and len(got) == 1  # never answered twice


def test_should_time_out_a_put_that_came_while_the_timer_slept_with_none_waiting(
    watermark: CommitWatermark,
) -> None:
    time.sleep(0.1)  # the timer sleeps its timeout (200 ms) with no put waiting, not woken
    assert len(_timed_out(watermark)) == 1


def test_should_fail_every_waiting_put_with_the_status_given(watermark: CommitWatermark) -> None:
    got: list[PutMessageResult] = []
    for end in (10, 20, 30):
        watermark.request(end, _result(), got.append)
    assert watermark.fail_all(PutMessageStatus.NOT_LEADER) == 3
    assert [r.status for r in got] == [PutMessageStatus.NOT_LEADER] * 3
    watermark.raise_to(100)
    assert watermark.settle() == 0


def test_should_block_a_waiting_put_until_committed(watermark: CommitWatermark) -> None:
    timer = threading.Timer(0.05, lambda: (watermark.raise_to(100), watermark.settle()))
    timer.start()
    result = watermark.wait(100, _result())
    timer.join()
    assert result.status is PutMessageStatus.PUT_OK


def test_should_keep_answering_after_a_callback_raises(watermark: CommitWatermark) -> None:
    got: list[int] = []

    def broken(_: PutMessageResult) -> None:
        raise RuntimeError("callback failed")

    watermark.request(10, _result(), broken)
    watermark.request(20, _result(), lambda r: got.append(20))
    watermark.raise_to(20)
    assert watermark.settle() == 2 and got == [20]
