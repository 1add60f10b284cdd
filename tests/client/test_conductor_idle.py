"""The idle strategy of a client's Aeron conductor: Aeron's 16 ms park, a deep park once idle,
and the wake before a session connects (``client/_conductor_idle.py``)."""

from __future__ import annotations

import socket
import threading

from aeromq.client._conductor_idle import (
    CONDUCTOR_DEEP_IDLE_AFTER_NS,
    CONDUCTOR_DEEP_PARK_NS,
    CONDUCTOR_PARK_NS,
    conductor_idle_strategy,
    expect_news,
)
from aeromq.client.broker_sessions import BrokerSessions
from aeromq.client.route import BrokerRoute
from aeromq.transport.concurrent import DoorbellIdleStrategy, SleepingIdleStrategy
from aeromq.transport.driver import MediaDriver
from tests.broker.data.test_sessions import Server


def test_should_park_aerons_16_ms_then_back_off_to_the_deep_park() -> None:
    idle = conductor_idle_strategy()
    assert isinstance(idle, DoorbellIdleStrategy)
    assert idle.min_park_period_ns == idle.max_park_period_ns == CONDUCTOR_PARK_NS == 16_000_000
    assert idle.deep_park_period_ns == CONDUCTOR_DEEP_PARK_NS == 250_000_000
    assert idle.deep_idle_after_ns == CONDUCTOR_DEEP_IDLE_AFTER_NS
    assert (idle.max_spins, idle.max_yields) == (0, 0)
    assert conductor_idle_strategy().doorbell is not idle.doorbell  # one per client


def test_should_wake_a_conductor_in_its_deep_park_back_to_16_ms_parks() -> None:
    idle = conductor_idle_strategy()
    assert isinstance(idle, DoorbellIdleStrategy)
    idle.idle(0)  # arms
    idle.park_period_ns = CONDUCTOR_DEEP_PARK_NS  # idle for a while
    waker = threading.Timer(0.02, expect_news, args=(idle,))
    waker.start()
    idle.idle(0)  # the deep park, ended by the wake
    waker.join()
    assert idle.park_period_ns == CONDUCTOR_PARK_NS and idle.parked_ns == 0


def test_should_leave_a_strategy_it_cannot_wake_alone() -> None:
    idle = SleepingIdleStrategy(CONDUCTOR_PARK_NS)
    expect_news(idle)
    assert idle.period_ns == CONDUCTOR_PARK_NS


def test_should_give_the_sessions_aeron_client_a_conductor_woken_to_connect(
    server: Server, media_driver: MediaDriver
) -> None:
    here = BrokerRoute("c", "broker-a", "", "aeron:ipc", 1001, "", 0, media_driver.aeron_dir,
                       socket.gethostname())  # fmt: skip
    sessions = BrokerSessions(client_id="t", request_timeout_ms=3_000, offer_timeout_ms=1_000)
    try:
        first = sessions.session(here)
        idle = sessions._client(media_driver.aeron_dir).context.idle_strategy
        assert isinstance(idle, DoorbellIdleStrategy)  # not Aeron's 16 ms sleep
        assert idle.deep_park_period_ns == CONDUCTOR_DEEP_PARK_NS
        idle.park_period_ns = CONDUCTOR_DEEP_PARK_NS  # as after a quiet while (a benign race)
        sessions.drop("broker-a")
        second = sessions.session(here)  # wakes the conductor first, to see its image
        assert second is not first and second.is_open
        assert sessions._client(media_driver.aeron_dir).context.idle_strategy is idle
    finally:
        sessions.close()
