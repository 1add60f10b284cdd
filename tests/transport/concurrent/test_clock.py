from __future__ import annotations

import time

from aeromq.transport.concurrent.clock import (
    CachedEpochClock,
    CachedNanoClock,
    EpochClock,
    NanoClock,
    SettableClock,
    SystemEpochClock,
    SystemNanoClock,
)


def test_should_read_the_system_wall_clock_in_milliseconds() -> None:
    clock: EpochClock = SystemEpochClock()
    before_ms = time.time_ns() // 1_000_000
    now_ms = clock.time_ms()
    after_ms = time.time_ns() // 1_000_000
    assert before_ms <= now_ms <= after_ms
    assert repr(clock) == "SystemEpochClock()"


def test_should_read_a_monotonic_clock_in_nanoseconds() -> None:
    clock: NanoClock = SystemNanoClock()
    readings = [clock.time_ns() for _ in range(1000)]
    assert readings == sorted(readings)
    assert abs(readings[-1] - time.monotonic_ns()) < 1_000_000_000
    assert repr(clock) == "SystemNanoClock()"


def test_should_return_the_cached_time_until_updated() -> None:
    epoch = CachedEpochClock()
    assert epoch.time_ms() == 0
    epoch.update(1_700_000_000_000)
    epoch.advance(5)
    assert epoch.time_ms() == 1_700_000_000_005
    assert repr(epoch) == "CachedEpochClock(time_ms=1700000000005)"

    nano = CachedNanoClock(10)
    nano.advance(15)
    assert nano.time_ns() == 25
    nano.update(7)
    assert nano.time_ns() == 7
    assert repr(nano) == "CachedNanoClock(time_ns=7)"


def test_should_set_and_advance_both_units_of_a_settable_clock() -> None:
    clock = SettableClock()
    epoch: EpochClock = clock
    nano: NanoClock = clock
    clock.set_time_ms(2)
    assert (epoch.time_ms(), nano.time_ns()) == (2, 2_000_000)
    clock.advance_ns(999_999)
    assert (clock.time_ms(), clock.time_ns()) == (2, 2_999_999)
    clock.advance_ns(1)
    assert clock.time_ms() == 3
    clock.advance_ms(10)
    assert clock.time_ns() == 13_000_000
    clock.set_time_ns(5)
    assert (clock.time_ms(), clock.time_ns()) == (0, 5)
    assert repr(clock) == "SettableClock(time_ns=5)"
