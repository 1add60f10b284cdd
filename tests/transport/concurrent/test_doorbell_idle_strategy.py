"""``DoorbellIdleStrategy``: an agent's parks on its doorbell, its spin windows and their
predictors, and a settling owner's parks right after work."""

from __future__ import annotations

import os
import threading
import time

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.concurrent import (
    BackoffIdleStrategy,
    Doorbell,
    DoorbellIdleStrategy,
    idle_strategy_with_doorbell,
)
from aeromq.transport.concurrent.doorbell_idle_strategy import SpinPredictor


def test_should_park_on_the_doorbell_after_one_poll_by_default() -> None:
    bell = Doorbell.allocate()
    idle = DoorbellIdleStrategy(bell, min_park_period_ns=1_000_000, max_park_period_ns=4_000_000)
    idle.idle(0)  # reads the word: the agent polls once more
    assert idle.state == DoorbellIdleStrategy.PARKING and idle.parked_ns == 0
    start = time.monotonic_ns()
    idle.idle(0)  # parks 1 ms
    idle.idle(0)  # parks 2 ms
    assert time.monotonic_ns() - start >= 3_000_000
    assert idle.park_period_ns == 4_000_000
    idle.idle(1)
    assert idle.state == DoorbellIdleStrategy.NOT_IDLE
    assert idle.park_period_ns == 1_000_000


def test_should_end_a_park_when_rung() -> None:
    bell = Doorbell.allocate()
    idle = DoorbellIdleStrategy(
        bell, min_park_period_ns=5_000_000_000, max_park_period_ns=5_000_000_000
    )
    idle.idle(0)
    ringer = threading.Timer(0.05, bell.ring)
    ringer.start()
    start = time.monotonic()
    idle.idle(0)
    assert time.monotonic() - start < 2.5
    assert idle.rings == 1
    assert idle.park_period_ns == 5_000_000_000
    ringer.join()


def test_should_spin_and_yield_before_parking_when_asked() -> None:
    idle = DoorbellIdleStrategy(Doorbell.allocate(), max_spins=2, max_yields=1)
    states = []
    for _ in range(4):
        idle.idle(0)
        states.append(idle.state)
    assert states == [idle.SPINNING, idle.SPINNING, idle.YIELDING, idle.PARKING]


def test_should_make_a_doorbell_strategy_from_its_name() -> None:
    bell = Doorbell.allocate()
    idle = idle_strategy_with_doorbell("doorbell:1,2,3000,4000000,8000000,500", bell)
    assert isinstance(idle, DoorbellIdleStrategy) and idle.doorbell is bell
    assert (idle.max_spins, idle.max_yields, idle.min_park_period_ns) == (1, 2, 3000)
    assert (idle.max_park_period_ns, idle.deep_park_period_ns) == (4_000_000, 8_000_000)
    assert isinstance(idle_strategy_with_doorbell("Doorbell", None), DoorbellIdleStrategy)
    assert isinstance(idle_strategy_with_doorbell("backoff", bell), BackoffIdleStrategy)
    for bad in ("doorbell:1,2", "doorbell:a,b,c,d", "doorbell:0,0,0,1"):
        with pytest.raises(ConfigurationError):
            idle_strategy_with_doorbell(bad, None)


def test_should_park_the_longest_while_all_work_rings_and_back_off_when_not() -> None:
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(), min_park_period_ns=1_000_000, max_park_period_ns=60_000_000
    )
    all_rung = [True]
    idle.all_rung = lambda: all_rung[0]
    idle.idle(0)  # arms
    start = time.monotonic_ns()
    idle.idle(0)
    assert time.monotonic_ns() - start >= 55_000_000  # the longest park at once
    assert idle.park_period_ns == 2_000_000  # while the backoff walked on beneath
    all_rung[0] = False
    idle.idle(0)
    # the backoff's own 2 ms park, read from what it parked (timed out) rather than the wall: a
    # loaded machine may wake a 2 ms sleeper late
    assert idle.parked_ns == 62_000_000


def test_should_park_at_once_after_work_when_it_neither_spins_nor_yields() -> None:
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(), min_park_period_ns=20_000_000, max_park_period_ns=20_000_000
    )
    idle.idle(1)  # reads the word: the next cycle is the poll after it
    start = time.monotonic_ns()
    idle.idle(0)
    assert time.monotonic_ns() - start >= 19_000_000
    spinning = DoorbellIdleStrategy(
        Doorbell.allocate(),
        max_spins=1,
        min_park_period_ns=20_000_000,
        max_park_period_ns=20_000_000,
    )
    spinning.idle(1)
    spinning.idle(0)  # a spin
    spinning.idle(0)  # reads the word, for one more poll
    assert spinning.state == spinning.PARKING
    assert spinning.parked_ns == 0  # no park ran to its end (not the wall: see above)


def test_should_not_sleep_through_a_ring_that_came_during_the_last_poll() -> None:
    bell = Doorbell.allocate()
    idle = DoorbellIdleStrategy(
        bell, min_park_period_ns=5_000_000_000, max_park_period_ns=5_000_000_000
    )
    idle.idle(1)
    bell.ring()  # work published after the word was read, while the agent polled
    start = time.monotonic()
    idle.idle(0)
    assert time.monotonic() - start < 2.5
    assert idle.rings == 1


def test_should_poll_through_its_spin_window_while_gaps_are_short_and_not_after() -> None:
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(),
        min_park_period_ns=50_000_000,
        max_park_period_ns=50_000_000,
        spin_window_ns=20_000_000,
    )
    idle.idle(1)
    idle.idle(0)  # the gaps were short so far: poll
    assert idle.state == DoorbellIdleStrategy.POLLING
    idle.idle(1)  # work within the window: a short gap
    assert idle.spin_score == 3
    for _ in range(3):  # long gaps: the window passes, the agent parks (50 ms)
        idle.idle(0)
        while idle.state == DoorbellIdleStrategy.POLLING:
            idle.idle(0)
        idle.idle(0)
        idle.idle(1)
    assert idle.spin_score == 0
    idle.idle(0)  # parks at once now
    assert idle.state == DoorbellIdleStrategy.PARKING
    assert "spin_window_ns=20000000" in repr(idle)
    named = idle_strategy_with_doorbell(
        "doorbell:0,0,1000,1000000,25000000,1000000000,100000", None
    )
    assert isinstance(named, DoorbellIdleStrategy) and named.spin_window_ns == 100_000


def test_should_yield_the_cpu_at_each_poll_of_its_window_only_when_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    yields: list[int] = []
    monkeypatch.setattr(os, "sched_yield", lambda: yields.append(1))
    idle = DoorbellIdleStrategy(Doorbell.allocate(), spin_window_ns=10_000_000_000)
    idle.idle(1)
    idle.idle(0)  # into the window
    idle.idle(0)  # a poll within it
    assert idle.state == DoorbellIdleStrategy.POLLING and yields == []

    idle.yield_while_polling = True
    for _ in range(3):
        idle.idle(0)

    assert idle.state == DoorbellIdleStrategy.POLLING and len(yields) == 3
    assert "yield_while_polling=True" in repr(idle)


def test_should_park_the_deep_park_at_once_while_all_work_rings() -> None:
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(),
        min_park_period_ns=1_000_000,
        max_park_period_ns=2_000_000,
        deep_park_period_ns=60_000_000,
        deep_idle_after_ns=10_000_000_000,  # not deep by the clock for a long while
    )
    idle.all_rung = lambda: True
    idle.idle(0)  # arms
    start = time.monotonic_ns()
    idle.idle(0)
    assert time.monotonic_ns() - start >= 55_000_000  # the deep park, not a millisecond
    assert idle.park_period_ns == 2_000_000  # while the backoff walked on beneath


def test_should_predict_polls_while_waits_are_short_and_sleeps_once_they_are_long() -> None:
    spin = SpinPredictor(100_000)
    assert spin.should_poll()  # short waits assumed at first
    for _ in range(3):
        spin.observe(1_000_000)  # long waits
    assert spin.score == 0 and not spin.should_poll()
    spin.observe(10_000)  # one short wait: poll again
    assert spin.score == 1 and spin.should_poll()
    probe = SpinPredictor(100_000)
    for _ in range(3):
        probe.observe(1_000_000)
    asked = [probe.should_poll() for _ in range(128)]
    assert asked.count(True) == 2  # one wait in 64 polls anyway, to find short waits again
    often = SpinPredictor(100_000, probe_every=8)
    for _ in range(3):
        often.observe(1_000_000)
    assert [often.should_poll() for _ in range(16)].count(True) == 2  # one in 8
    assert not SpinPredictor(0).should_poll()  # no window: never
    with pytest.raises(ConfigurationError):
        SpinPredictor(-1)
    for bad in (0, 3, 100, 128):
        with pytest.raises(ConfigurationError, match="power of two up to 64"):
            SpinPredictor(100_000, probe_every=bad)


def test_should_probe_half_as_often_after_each_probe_that_found_a_long_wait() -> None:
    spin = SpinPredictor(100_000, probe_every=8)
    for _ in range(3):
        spin.observe(1_000_000)  # long waits: the score at 0

    def waits_to_next_probe() -> int:
        for waits in range(1, 200):
            if spin.should_poll():
                return waits
        raise AssertionError("no probe in 200 waits")

    gaps = []
    for _ in range(6):  # each probe finds a long wait
        gaps.append(waits_to_next_probe())
        spin.observe(1_000_000)
    # every 8th wait, then every 16th, 32nd, and at most every 64th (the counter's phase
    # makes the first of each period come sooner)
    assert gaps[0] <= 8 and gaps[-2:] == [64, 64], gaps
    assert sorted(gaps) == gaps
    spin.observe(10_000)  # a probe found a short wait: polls again, probes back to every 8th
    assert spin.score == 1 and spin.should_poll()
    spin.observe(1_000_000)  # that poll's wait was long: the score at 0 again, not a probe's
    assert spin.score == 0 and waits_to_next_probe() <= 8


def test_should_grow_an_adaptive_window_to_a_wait_it_missed_within_its_most() -> None:
    spin = SpinPredictor(200_000, max_window_ns=500_000)
    assert (spin.window_ns, spin.base_window_ns, spin.max_window_ns) == (200_000, 200_000, 500_000)
    spin.observe(390_000)  # missed, within the most: doubled
    assert spin.window_ns == 400_000
    spin.observe(250_000)  # now caught
    assert spin.window_ns == 400_000 and spin.score == 3
    spin.observe(450_000)  # missed again: doubled, to the most and no further
    assert spin.window_ns == 500_000
    spin.observe(499_999)
    assert spin.window_ns == 500_000
    in_one_call = SpinPredictor(200_000, max_window_ns=500_000)
    in_one_call.observe_then_ask(390_000)  # (the settled cycle's way: the same)
    assert in_one_call.window_ns == 400_000


def test_should_shrink_an_adaptive_window_after_waits_beyond_its_most_to_the_one_made() -> None:
    spin = SpinPredictor(200_000, max_window_ns=500_000)
    spin.observe(450_000)
    spin.observe(450_000)
    assert spin.window_ns == 500_000
    spin.observe(2_000_000)  # not this kind of gap: halved
    assert spin.window_ns == 250_000
    spin.observe(2_000_000)
    assert spin.window_ns == 200_000  # no less than made
    spin.observe(2_000_000)
    assert spin.window_ns == 200_000


def test_should_keep_a_window_without_a_most_as_made() -> None:
    for spin in (SpinPredictor(200_000), SpinPredictor(200_000, max_window_ns=200_000)):
        spin.observe(300_000)
        spin.observe(5_000_000)
        assert spin.window_ns == 200_000 == spin.max_window_ns
    for bad in ((200_000, 100_000), (0, 100_000)):
        with pytest.raises(ConfigurationError, match="a most no less than it"):
            SpinPredictor(bad[0], max_window_ns=bad[1])


def test_should_find_a_producer_again_whose_gaps_outgrew_the_long_window() -> None:
    """The trap the adaptive window ends: a waiter whose gaps (its peer's wake-up and code)
    come just past the window polls in vain and gives up; probes find the same gaps, so a
    fixed window never polls again, where an adaptive one grows to them and polls again."""
    fixed = SpinPredictor(200_000)
    adaptive = SpinPredictor(200_000, max_window_ns=500_000)
    polled = {id(fixed): 0, id(adaptive): 0}
    for _ in range(400):
        for spin in (fixed, adaptive):
            if spin.observe_then_ask(-1):
                polled[id(spin)] += 1
                spin.observe(250_000)  # the peer's next send: polled for, found in the window
            else:
                spin.observe(390_000)  # slept: its wake-up counted in the gap
    assert fixed.score == 0 and polled[id(fixed)] < 20  # its probes only
    assert adaptive.window_ns == 400_000 and adaptive.score == 3
    assert polled[id(adaptive)] > 380


def test_should_start_the_backoff_over_when_woken_to_the_shortest_between_parks() -> None:
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(),
        min_park_period_ns=1_000_000,
        max_park_period_ns=1_000_000,
        deep_park_period_ns=8_000_000,
        deep_idle_after_ns=0,
    )
    idle.idle(0)  # arms
    for _ in range(10):  # 1, 2, 4 ms parks (15 ms at most in all)
        if idle.park_period_ns == 8_000_000:
            break
        idle.idle(0)
    assert idle.park_period_ns == 8_000_000
    idle.wake_to_shortest()  # between two parks, as from another thread
    idle.idle(0)  # its park: from the shortest period, ended at once by the ring
    assert idle.park_period_ns == 1_000_000 and idle.parked_ns == 0


def test_should_start_the_backoff_over_when_woken_to_the_shortest_in_a_park() -> None:
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(),
        min_park_period_ns=1_000_000,
        max_park_period_ns=1_000_000,
        deep_park_period_ns=5_000_000_000,
        deep_idle_after_ns=0,
    )
    idle.idle(0)  # arms
    idle.park_period_ns = 5_000_000_000  # as after a long idle time
    waker = threading.Timer(0.05, idle.wake_to_shortest)
    waker.start()
    idle.idle(0)  # the 5 s park, ended by the wake
    waker.join()
    assert idle.park_period_ns == 1_000_000 and idle.parked_ns == 0
    assert idle.rings == 0  # a restart, not counted as a ring of work


class _Owner:
    """A :class:`~transport.concurrent.doorbell.Settling` owner whose answers the test sets."""

    def __init__(self, settled: bool, long_spin: bool = False) -> None:
        self.settled = settled
        self.long_spin = long_spin


def test_should_park_right_after_a_cycle_that_settled() -> None:
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(), min_park_period_ns=20_000_000, max_park_period_ns=20_000_000
    )
    owner = _Owner(True)
    idle.settling = owner
    idle.idle(1)  # the first cycle came before any read of the word: it reads it, no park
    assert idle.state == DoorbellIdleStrategy.NOT_IDLE and idle.parked_ns == 0
    idle.idle(1)  # came after the read and settled: parks at once, no empty cycle first
    assert idle.state == DoorbellIdleStrategy.PARKING
    assert idle.parked_ns == 20_000_000  # a park ran to its end (nobody rang)
    owner.settled = False
    idle.idle(1)  # did not settle: reads the word for one more (empty) cycle, as before
    assert idle.state == DoorbellIdleStrategy.NOT_IDLE and idle.parked_ns == 0
    idle.idle(0)  # that empty cycle: now it parks
    assert idle.parked_ns == 20_000_000


def test_should_not_sleep_after_a_settled_cycle_through_a_ring_that_came_during_it() -> None:
    bell = Doorbell.allocate()
    idle = DoorbellIdleStrategy(
        bell, min_park_period_ns=5_000_000_000, max_park_period_ns=5_000_000_000
    )
    idle.settling = _Owner(True)
    idle.idle(1)  # reads the word
    bell.ring()  # work published after the read, while the next cycle ran
    idle.idle(1)  # settled: its park, on the word read before the cycle, ends at once
    assert idle.rings == 1 and idle.parked_ns == 0


def test_should_poll_through_its_spin_window_after_a_settled_cycle_while_gaps_are_short() -> None:
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(),
        min_park_period_ns=50_000_000,
        max_park_period_ns=50_000_000,
        spin_window_ns=200_000_000,  # "short" with room for a loaded machine's stalls
    )
    idle.settling = _Owner(True)
    idle.idle(1)
    idle.idle(1)  # settled, and the predictor still guesses short gaps: poll first
    assert idle.state == DoorbellIdleStrategy.POLLING and idle.parked_ns == 0
    idle.idle(1)  # work within the window: a short gap, counted from the settled cycle
    assert idle.spin_score == 3
    for _ in range(3):  # long gaps (the window passes, a 50 ms park): the score falls
        while idle.state == DoorbellIdleStrategy.POLLING:
            idle.idle(0)
        idle.idle(0)
        idle.idle(1)
    assert idle.spin_score == 0
    assert idle.state == DoorbellIdleStrategy.PARKING  # parks right after the settled cycle


def test_should_observe_then_ask_in_one_call_as_in_two() -> None:
    one, two = SpinPredictor(100_000), SpinPredictor(100_000)
    waits = [-1, 1_000_000, 1_000_000, 1_000_000, 10_000, -1] + [1_000_000] * 140
    for waited_ns in waits:
        if waited_ns >= 0:
            two.observe(waited_ns)
        assert one.observe_then_ask(waited_ns) == two.should_poll()
        assert one.score == two.score
    assert not SpinPredictor(0).observe_then_ask(10)  # no window: never


def test_should_poll_through_the_long_window_after_the_cycles_its_owner_marks() -> None:
    """Two windows, each with a predictor of its own: the gaps after unmarked cycles are long
    (a 1 ns window), so after those it parks at once; after a marked cycle (a broker agent's
    send) it polls through the long window, whose gaps have been short."""
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(),
        min_park_period_ns=1_000_000,
        max_park_period_ns=1_000_000,
        spin_window_ns=1,
        long_spin_window_ns=200_000_000,  # "short" with room for a loaded machine's stalls
    )
    assert idle.long_spin_window_ns == 200_000_000
    assert "long_spin_window_ns=200000000" in repr(idle)
    owner = _Owner(True)
    idle.settling = owner
    idle.idle(1)  # reads the word
    for _ in range(4):  # gaps longer than 1 ns: the spin window's predictor gives up
        idle.idle(1)
        while idle.state == DoorbellIdleStrategy.POLLING:
            idle.idle(0)
        if idle.state != DoorbellIdleStrategy.PARKING:
            idle.idle(0)
    assert idle.spin_score == 0
    owner.long_spin = True
    idle.idle(1)  # a marked cycle: the long window's predictor still guesses short gaps
    assert idle.state == DoorbellIdleStrategy.POLLING
    idle.idle(1)  # work within it (a short gap, counted by the long window's predictor)
    assert idle.state == DoorbellIdleStrategy.POLLING
    owner.long_spin = False
    idle.idle(1)  # unmarked again: the spin window's predictor says park, at once
    assert idle.state == DoorbellIdleStrategy.PARKING and idle.parked_ns == 1_000_000
    assert idle.spin_score == 0


def test_should_grow_the_long_window_to_a_gap_it_missed_and_shrink_it_after_a_longer_one() -> None:
    idle = DoorbellIdleStrategy(
        Doorbell.allocate(),
        min_park_period_ns=1_000_000,
        max_park_period_ns=1_000_000,
        spin_window_ns=1,
        long_spin_window_ns=5_000_000,
        long_spin_max_window_ns=250_000_000,  # (room for a loaded machine's stalls)
    )
    owner = _Owner(True, long_spin=True)  # every cycle a marked one (a one-at-a-time send)
    idle.settling = owner
    idle.idle(1)  # reads the word

    def gap(seconds: float) -> None:
        idle.idle(1)  # a marked cycle that settled: the gap after it starts
        time.sleep(seconds)  # the next send comes this much later
        while idle.state == DoorbellIdleStrategy.POLLING:
            idle.idle(0)
        if idle.state != DoorbellIdleStrategy.NOT_IDLE:
            idle.idle(0)  # (parks once, 1 ms, unrung)

    gap(0.01)  # past the 5 ms window, within the most: doubled
    assert idle.long_spin_window_ns == 5_000_000  # (counted when the work comes)
    gap(0.01)
    assert idle.long_spin_window_ns >= 10_000_000
    grown = idle.long_spin_window_ns  # 10 ms
    gap(0.4)  # counts the gap before (10+ ms: doubled again), then one past the most
    idle.idle(1)  # which halves it
    assert idle.long_spin_window_ns == grown
    assert idle.long_spin_max_window_ns == 250_000_000


def test_should_take_a_long_spin_window_as_an_eighth_parameter() -> None:
    named = idle_strategy_with_doorbell(
        "doorbell:0,0,1000,1000000,25000000,1000000000,100000,200000", None
    )
    assert isinstance(named, DoorbellIdleStrategy)
    assert (named.spin_window_ns, named.long_spin_window_ns) == (100_000, 200_000)
    assert named.long_spin_max_window_ns == 200_000  # (stays as made)
    with pytest.raises(ConfigurationError, match="different number of parameters"):
        idle_strategy_with_doorbell("doorbell:0,0,1000,1000000,25000000,1000000000,1,2,3,4", None)


def test_should_take_the_long_spin_windows_most_as_a_ninth_parameter() -> None:
    named = idle_strategy_with_doorbell(
        "doorbell:0,0,1000,1000000,25000000,1000000000,100000,200000,500000", None
    )
    assert isinstance(named, DoorbellIdleStrategy)
    assert (named.long_spin_window_ns, named.long_spin_max_window_ns) == (200_000, 500_000)
    assert "long_spin_max_window_ns=500000" in repr(named)
    with pytest.raises(ConfigurationError, match="needs a long spin window"):
        idle_strategy_with_doorbell("doorbell:0,0,1000,1000000,25000000,1000000000,1,0,5", None)
    with pytest.raises(ConfigurationError, match="a most no less than it"):
        idle_strategy_with_doorbell("doorbell:0,0,1000,1000000,25000000,1000000000,1,5,4", None)
