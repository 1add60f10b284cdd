from __future__ import annotations

import ctypes
import sys
import threading
import time

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.concurrent import idle_strategy as module
from aeromq.transport.concurrent.idle_strategy import (
    BackoffIdleStrategy,
    BusySpinIdleStrategy,
    IdleStrategy,
    NoOpIdleStrategy,
    SleepingIdleStrategy,
    YieldingIdleStrategy,
    idle_strategy_from_name,
    tighten_timer_slack,
)


class Calls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.log: list[str] = []
        monkeypatch.setattr(module.os, "sched_yield", lambda: self.log.append("yield"))
        monkeypatch.setattr(
            module.time, "sleep", lambda s: self.log.append(f"park {round(s * 1e9)}")
        )


def test_should_walk_the_backoff_states_spin_yield_then_park_doubling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = Calls(monkeypatch)
    strategy = BackoffIdleStrategy(
        max_spins=3, max_yields=2, min_park_period_ns=1_000, max_park_period_ns=4_000
    )
    states = []
    for _ in range(3):  # NOT_IDLE -> SPINNING, then spins 2 and 3
        strategy.idle()
        states.append(strategy.state)
    assert states == [BackoffIdleStrategy.SPINNING] * 3
    assert calls.log == []
    strategy.idle()  # spins 4 > 3
    assert strategy.state == BackoffIdleStrategy.YIELDING
    strategy.idle()
    strategy.idle()
    assert calls.log == ["yield", "yield"]
    strategy.idle()  # yields 3 > 2
    assert strategy.state == BackoffIdleStrategy.PARKING
    assert calls.log == ["yield", "yield"]
    for _ in range(4):
        strategy.idle()
    assert calls.log[2:] == ["park 1000", "park 2000", "park 4000", "park 4000"]


def test_should_reset_the_backoff_on_work(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(monkeypatch)
    strategy = BackoffIdleStrategy(0, 0, 1_000, 8_000)
    for _ in range(5):  # spin once, to yielding, to parking, park twice
        strategy.idle(0)
    assert strategy.state == BackoffIdleStrategy.PARKING
    assert strategy.park_period_ns == 4_000
    strategy.idle(5)
    assert (strategy.state, strategy.spins, strategy.yields, strategy.park_period_ns) == (
        BackoffIdleStrategy.NOT_IDLE,
        0,
        0,
        1_000,
    )
    strategy.idle(0)
    assert strategy.state == BackoffIdleStrategy.SPINNING
    strategy.reset()
    assert strategy.state == BackoffIdleStrategy.NOT_IDLE
    assert calls.log == ["park 1000", "park 2000"]


def test_should_use_agronas_backoff_defaults() -> None:
    strategy = BackoffIdleStrategy()
    assert (
        strategy.max_spins,
        strategy.max_yields,
        strategy.min_park_period_ns,
        strategy.max_park_period_ns,
    ) == (10, 5, 1_000, 1_000_000)
    assert repr(strategy) == (
        "BackoffIdleStrategy(max_spins=10, max_yields=5, min_park_period_ns=1000, "
        "max_park_period_ns=1000000, deep_park_period_ns=0, deep_idle_after_ns=1000000000)"
    )


def test_should_park_longer_only_after_a_long_idle_when_deep_idle_is_on() -> None:
    strategy = idle_strategy_from_name("backoff:0,0,1000000,2000000,8000000,5000000")
    assert isinstance(strategy, BackoffIdleStrategy)
    periods = []
    for _ in range(8):  # bounded: 8 cycles, at most ~40 ms of parking
        strategy.idle(0)
        periods.append(strategy.park_period_ns)
    # spin, yield, to parking; parks of 1, 2, 2 ms (5 ms parked: deep idle), then 4, 8 ms
    assert periods == [1_000_000, 1_000_000, 1_000_000, 2_000_000, 2_000_000, 4_000_000,
                       8_000_000, 8_000_000]  # fmt: skip
    strategy.idle(1)  # work: back to the start
    assert (strategy.state, strategy.park_period_ns, strategy.parked_ns) == (
        BackoffIdleStrategy.NOT_IDLE,
        1_000_000,
        0,
    )
    plain = BackoffIdleStrategy(0, 0, 1_000_000, 2_000_000)
    for _ in range(8):
        plain.idle(0)
    assert plain.park_period_ns == 2_000_000  # Agrona's: never past the max park


def test_should_refuse_a_deep_park_shorter_than_the_max_park() -> None:
    with pytest.raises(ConfigurationError):
        BackoffIdleStrategy(10, 5, 1_000, 1_000_000, 500_000)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-1, 5, 1_000, 2_000), "max_spins=-1"),
        ((1, -5, 1_000, 2_000), "max_yields=-5"),
        ((1, 5, 0, 2_000), "min_park_period_ns=0"),
        ((1, 5, 3_000, 2_000), "max_park_period_ns=2000"),
    ],
)
def test_should_reject_bad_backoff_parameters(
    args: tuple[int, int, int, int], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        BackoffIdleStrategy(*args)


def test_should_yield_only_without_work(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(monkeypatch)
    strategy = YieldingIdleStrategy()
    strategy.idle(1)
    strategy.idle(0)
    strategy.idle()
    strategy.reset()
    assert calls.log == ["yield", "yield"]


def test_should_sleep_for_the_period_only_without_work(monkeypatch: pytest.MonkeyPatch) -> None:
    strategy = SleepingIdleStrategy(period_ns=2_000_000)
    start_ns = time.monotonic_ns()
    strategy.idle()
    assert time.monotonic_ns() - start_ns >= 2_000_000
    calls = Calls(monkeypatch)
    strategy.idle(3)
    strategy.idle(0)
    strategy.reset()
    assert calls.log == ["park 2000000"]
    with pytest.raises(ConfigurationError, match="period_ns=0"):
        SleepingIdleStrategy(0)


def test_should_return_at_once_when_spinning_or_noop(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(monkeypatch)
    for strategy in (BusySpinIdleStrategy(), NoOpIdleStrategy()):
        strategy.idle()
        strategy.idle(1)
        strategy.reset()
    assert calls.log == []


@pytest.mark.parametrize(
    ("name", "cls", "alias"),
    [
        ("noop", NoOpIdleStrategy, "noop"),
        ("spin", BusySpinIdleStrategy, "spin"),
        ("busy_spin", BusySpinIdleStrategy, "spin"),
        ("Busy-Spin", BusySpinIdleStrategy, "spin"),
        ("yield", YieldingIdleStrategy, "yield"),
        ("yielding", YieldingIdleStrategy, "yield"),
        ("sleep-ns", SleepingIdleStrategy, "sleep-ns"),
        ("sleeping", SleepingIdleStrategy, "sleep-ns"),
        ("backoff", BackoffIdleStrategy, "backoff"),
    ],
)
def test_should_parse_strategy_names(name: str, cls: type, alias: str) -> None:
    strategy: IdleStrategy = idle_strategy_from_name(name)
    assert type(strategy) is cls
    assert strategy.alias == alias


def test_should_parse_strategy_parameters() -> None:
    sleeping = idle_strategy_from_name("sleep-ns:250_000")
    assert isinstance(sleeping, SleepingIdleStrategy)
    assert sleeping.period_ns == 250_000
    assert repr(sleeping) == "SleepingIdleStrategy(period_ns=250000)"
    millis = idle_strategy_from_name("sleep-ms:3")
    assert isinstance(millis, SleepingIdleStrategy)
    assert millis.period_ns == 3_000_000
    default_millis = idle_strategy_from_name("sleep-ms")
    assert isinstance(default_millis, SleepingIdleStrategy)
    assert default_millis.period_ns == 1_000_000
    assert isinstance(idle_strategy_from_name("sleep-ns"), SleepingIdleStrategy)
    backoff = idle_strategy_from_name(" backoff: 20, 10, 2000, 500000 ")
    assert isinstance(backoff, BackoffIdleStrategy)
    assert (
        backoff.max_spins,
        backoff.max_yields,
        backoff.min_park_period_ns,
        backoff.max_park_period_ns,
    ) == (20, 10, 2_000, 500_000)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("park", "unknown idle strategy: name='park'"),
        ("noop:1", "unknown idle strategy"),
        ("sleep-ns:fast", "not an integer"),
        ("sleep-ns:-5", "period_ns=-5"),
        ("backoff:1,2,3", "expected=4 given=3"),
        ("backoff:1,2,3000,1000", "min <= max"),
    ],
)
def test_should_reject_bad_strategy_names(name: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        idle_strategy_from_name(name)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_should_tighten_the_timer_slack_of_the_calling_thread_only() -> None:
    seen: dict[str, int] = {}

    def slack() -> int:  # prctl(PR_GET_TIMERSLACK)
        return int(ctypes.CDLL(None).prctl(30, 0, 0, 0, 0))

    def tighten() -> None:
        seen["before"] = slack()
        seen["ok"] = int(tighten_timer_slack(2_000))
        seen["after"] = slack()

    thread = threading.Thread(target=tighten)
    thread.start()
    thread.join(5)
    assert seen == {"before": seen["before"], "ok": 1, "after": 2_000}
    assert slack() != 2_000 or seen["before"] == 2_000  # this thread keeps its own


def test_should_park_in_the_given_waiter_instead_of_sleeping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = Calls(monkeypatch)
    waits: list[float] = []
    backoff = BackoffIdleStrategy(0, 0, 1_000_000, 2_000_000)
    backoff.park_with(waits.append)
    sleeping = SleepingIdleStrategy(3_000_000)
    sleeping.park_with(waits.append)
    for _ in range(5):  # spin, to yielding, to parking, then parks of 1 and 2 ms
        backoff.idle(0)
    sleeping.idle(0)
    sleeping.idle(1)
    assert waits == [0.001, 0.002, 0.003]
    assert calls.log == []  # neither time.sleep nor a yield
    assert backoff.parked_ns == 3_000_000  # a waiter's park counts toward the deep idle


def test_should_park_the_longest_at_once_while_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(monkeypatch)
    settled = [True]
    strategy = BackoffIdleStrategy(0, 0, 1_000, 8_000, 32_000, 10_000)
    strategy.settled = lambda: settled[0]
    strategy.idle(0)  # the first empty cycle after work: no spin or yield, the deep park
    strategy.idle(0)
    assert calls.log == ["park 32000", "park 32000"]
    assert (strategy.state, strategy.settled_parks) == (BackoffIdleStrategy.PARKING, 2)
    assert strategy.park_period_ns == 4_000  # the walk beneath: parks of 1 and 2 us counted
    settled[0] = False
    strategy.idle(0)  # owed something: the backoff's own park
    assert calls.log[2:] == ["park 4000"]
    strategy.idle(1)
    strategy.idle(0)  # unsettled after work: Agrona's walk from the start
    assert strategy.state == BackoffIdleStrategy.SPINNING
    settled[0] = True
    strategy.idle(0)
    assert calls.log[3:] == ["park 32000"]
    plain = BackoffIdleStrategy(0, 0, 1_000, 8_000)
    plain.settled = lambda: True
    plain.idle(0)  # no deep park: the max park is the longest
    assert calls.log[4:] == ["park 8000"]


def test_should_park_until_due_at_once_while_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settled and told how long until its next timer (``idle_for``), a thread parks that long
    at once: what it waits for ends the park, so its timers alone wake it."""
    calls = Calls(monkeypatch)
    due = [500_000]
    strategy = BackoffIdleStrategy(0, 0, 1_000, 8_000, 32_000, 10_000)
    strategy.settled = lambda: True
    strategy.idle_for = lambda: due[0]
    strategy.idle(0)
    due[0] = 0  # a stream or a timer due now: the longest park, as without it
    strategy.idle(0)
    assert calls.log == ["park 500000", "park 32000"]


def test_should_park_right_after_work_only_when_the_cycle_settled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cycle that worked and settled (``settled_after_work``) parks the settled park at once,
    the same park an empty cycle after it would have taken; one that did not resets only."""
    calls = Calls(monkeypatch)
    settled = [False]
    strategy = BackoffIdleStrategy(0, 0, 1_000, 8_000, 32_000, 10_000)
    strategy.settled = lambda: True
    strategy.settled_after_work = lambda: settled[0]
    strategy.idle(1)  # left work (or owes some): no park, the next cycle runs at once
    assert (calls.log, strategy.state, strategy.parks_after_work) == (
        [],
        BackoffIdleStrategy.NOT_IDLE,
        0,
    )
    settled[0] = True
    strategy.idle(1)
    assert calls.log == ["park 32000"]
    assert (strategy.state, strategy.parks_after_work) == (BackoffIdleStrategy.PARKING, 1)
    assert strategy.park_period_ns == 2_000  # reset by the work, then the walk's first step
    strategy.idle(0)  # the park returned with nothing: settled, the same park again
    strategy.idle(1)  # work again: reset, then parked at once
    assert calls.log[1:] == ["park 32000", "park 32000"]
    assert (strategy.parks_after_work, strategy.park_period_ns) == (2, 2_000)
    strategy.idle_for = lambda: 500_000  # streaming nothing: until the next timer, as after
    strategy.idle(1)  # an empty cycle
    assert calls.log[3:] == ["park 500000"]
    plain = BackoffIdleStrategy(0, 0, 1_000, 8_000)
    plain.idle(1)  # no settled_after_work: Agrona's reset
    assert calls.log[4:] == []
