"""LossDetector: the first gap up to the high-water mark, NAK after the delay, then retries."""

from __future__ import annotations

import random

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.udp.loss_detector import (
    TIMER_INACTIVE,
    LossDetector,
    OptimalMulticastDelayGenerator,
    StaticDelayGenerator,
)

TERM = 64 * 1024
MASK = TERM - 1
BITS = 16
INITIAL_TERM_ID = 3


def _term_with_frames(*offsets: int, frame_length: int = 64) -> AtomicBuffer:
    term = AtomicBuffer.allocate(TERM)
    for offset in offsets:
        term.put_int32(offset, frame_length)
    return term


def _detector(
    delay_ns: int = 100, retry_ns: int = 1_000
) -> tuple[LossDetector, list[tuple[int, int, int]]]:
    gaps: list[tuple[int, int, int]] = []
    detector = LossDetector(StaticDelayGenerator(delay_ns, retry_ns), lambda *gap: gaps.append(gap))
    return detector, gaps


def test_should_report_nothing_without_a_gap() -> None:
    detector, gaps = _detector()
    term = _term_with_frames(0, 64, 128)
    assert detector.scan(term, 0, 192, 0, MASK, BITS, INITIAL_TERM_ID) == (192, False)
    assert detector.scan(term, 192, 192, 10**9, MASK, BITS, INITIAL_TERM_ID) == (192, False)
    assert gaps == []


def test_should_nak_a_gap_after_the_delay_then_at_the_retry_interval() -> None:
    detector, gaps = _detector()
    term = _term_with_frames(0, 64, 256)  # 128..256 missing
    assert detector.scan(term, 0, 320, 0, MASK, BITS, INITIAL_TERM_ID) == (128, True)
    assert gaps == []
    detector.scan(term, 128, 320, 99, MASK, BITS, INITIAL_TERM_ID)
    assert gaps == []
    assert detector.scan(term, 128, 320, 100, MASK, BITS, INITIAL_TERM_ID) == (128, False)
    assert gaps == [(INITIAL_TERM_ID, 128, 128)]
    detector.scan(term, 128, 320, 600, MASK, BITS, INITIAL_TERM_ID)
    assert len(gaps) == 1
    detector.scan(term, 128, 320, 1_100, MASK, BITS, INITIAL_TERM_ID)
    assert gaps[-1] == (INITIAL_TERM_ID, 128, 128) and len(gaps) == 2


def test_should_stop_the_nak_timer_once_the_gap_fills() -> None:
    detector, gaps = _detector()
    term = _term_with_frames(0, 64, 256)  # 128..256 missing
    detector.scan(term, 0, 320, 0, MASK, BITS, INITIAL_TERM_ID)
    assert detector.expiry_ns != TIMER_INACTIVE
    term.put_int32(128, 128)  # the retransmission came
    assert detector.scan(term, 128, 320, 50, MASK, BITS, INITIAL_TERM_ID) == (320, False)
    assert detector.expiry_ns == TIMER_INACTIVE
    assert detector.scan(term, 320, 320, 60, MASK, BITS, INITIAL_TERM_ID) == (320, False)
    assert detector.expiry_ns == TIMER_INACTIVE and gaps == []


def test_should_move_on_to_the_next_gap_when_one_fills() -> None:
    detector, gaps = _detector(delay_ns=0)
    term = _term_with_frames(0, 256)
    detector.scan(term, 0, 320, 0, MASK, BITS, INITIAL_TERM_ID)
    assert gaps == [(INITIAL_TERM_ID, 64, 192)]
    term.put_int32(64, 192)  # the gap fills
    term.put_int32(320, 0)
    term.put_int32(384, 64)
    offset, found = detector.scan(term, 64, 448, 5, MASK, BITS, INITIAL_TERM_ID)
    assert (offset, found) == (320, True)
    assert gaps[-1] == (INITIAL_TERM_ID, 320, 64)


def test_should_scan_only_to_the_end_of_the_rebuild_term() -> None:
    detector, gaps = _detector(delay_ns=0)
    term = _term_with_frames(0)
    hwm_next_term = TERM + 64
    offset, found = detector.scan(term, 0, hwm_next_term, 0, MASK, BITS, INITIAL_TERM_ID)
    assert (offset, found) == (64, True)
    assert gaps == [(INITIAL_TERM_ID, 64, TERM - 64)]


def test_should_draw_multicast_delays_within_the_maximum_back_off() -> None:
    generator = OptimalMulticastDelayGenerator(10_000_000, 10, random.Random(5))
    delays = [generator.generate_delay_ns() for _ in range(2000)]
    assert all(0 <= delay <= 10_000_000 for delay in delays)
    assert len(set(delays)) > 1000
    assert 0 < generator.retry_delay_ns() <= 10_000_000
    assert not generator.should_feedback_immediately


def test_should_feed_back_immediately_when_asked() -> None:
    gaps: list[tuple[int, int, int]] = []
    detector = LossDetector(
        StaticDelayGenerator(10**9, 10**9, feedback_immediately=True),
        lambda *gap: gaps.append(gap),
    )
    detector.scan(_term_with_frames(64), 0, 128, 0, MASK, BITS, INITIAL_TERM_ID)
    assert gaps == [(INITIAL_TERM_ID, 0, 64)]
