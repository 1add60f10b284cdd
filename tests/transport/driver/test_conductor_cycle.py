"""The conductor's duty cycle skips what is not due: the wall clock is read, and the to-driver
buffer's consumer heartbeat stamped, once a millisecond of the monotonic clock at most, and
still every millisecond while cycles come (``DriverConductor``'s module, step 3).

The driver runs in ``INVOKER`` mode on a settable clock."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.transport.concurrent.clock import SettableClock
from aeromq.transport.driver import MediaDriver, ThreadingMode
from tests.transport.driver.support import small_context

MS = 1_000_000
START_MS = 1_700_000_000_000


class _CountingClock(SettableClock):
    """A settable clock that counts its wall clock reads."""

    __slots__ = ("reads",)

    def __init__(self, time_ns: int) -> None:
        super().__init__(time_ns)
        self.reads = 0

    def time_ms(self) -> int:
        self.reads += 1
        return super().time_ms()


@pytest.fixture
def clock() -> _CountingClock:
    return _CountingClock(START_MS * MS)


@pytest.fixture
def invoked(shm_dir: Path, clock: _CountingClock) -> Iterator[MediaDriver]:
    context = dataclasses.replace(
        small_context(shm_dir / "aeron", timer_interval_ns=3_600_000 * MS),
        threading_mode=ThreadingMode.INVOKER,
        epoch_clock=clock,
        nano_clock=clock,
    )
    with MediaDriver.launch(context) as driver:
        driver.conductor.do_work()  # the first cycle runs the timer (its deadline: now)
        yield driver


def test_should_stamp_the_heartbeat_each_millisecond_but_read_the_wall_clock_no_more_often(
    invoked: MediaDriver, clock: _CountingClock
) -> None:
    conductor = invoked.conductor
    stamped = conductor.to_driver.consumer_heartbeat_time
    reads = clock.reads
    for _ in range(5):  # cycles within the same millisecond: no read, no stamp
        clock.advance_ns(100_000)
        conductor.do_work()
    assert (clock.reads, conductor.to_driver.consumer_heartbeat_time) == (reads, stamped)
    for step in range(1, 4):  # a millisecond later each time: a read and a new stamp
        clock.advance_ms(1)
        conductor.do_work()
        assert clock.reads == reads + step
        assert conductor.to_driver.consumer_heartbeat_time == clock.time_ns() // MS


def test_should_stamp_at_once_after_a_long_gap(invoked: MediaDriver, clock: _CountingClock) -> None:
    conductor = invoked.conductor
    clock.advance_ms(250)
    conductor.do_work()
    assert conductor.to_driver.consumer_heartbeat_time == clock.time_ms()
