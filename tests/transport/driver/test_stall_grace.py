"""A driver that stalled (its process stopped or starved) judges its clients' heartbeats from the
stall's end: a client gets a whole liveness timeout after it before it is timed out, so a client
stopped with the driver (a broker's, beside its embedded driver) survives, and a silent one is
still removed, one timeout later (``DriverConductor``'s module, step 4).

The driver runs in ``INVOKER`` mode on a settable clock: the test makes the stall."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.transport.command import ON_CLIENT_TIMEOUT, ON_COUNTER_READY
from aeromq.transport.concurrent.clock import SettableClock
from aeromq.transport.driver import MediaDriver, SystemCounter, ThreadingMode
from aeromq.transport.testing.driver_client import DriverClient
from tests.transport.driver.support import small_context

MS = 1_000_000
LIVENESS_MS = 2_000
TIMER_MS = 10
STEP_MS = 500
"""Between two cycles when the driver does not stall (a stall: over half the timeout)."""


@pytest.fixture
def clock() -> SettableClock:
    return SettableClock(time.time_ns())


@pytest.fixture
def invoked(shm_dir: Path, clock: SettableClock) -> Iterator[MediaDriver]:
    context = dataclasses.replace(
        small_context(
            shm_dir / "aeron",
            client_liveness_timeout_ns=LIVENESS_MS * MS,
            publication_unblock_timeout_ns=2 * LIVENESS_MS * MS,
            timer_interval_ns=TIMER_MS * MS,
        ),
        threading_mode=ThreadingMode.INVOKER,
        epoch_clock=clock,
        nano_clock=clock,
    )
    with MediaDriver.launch(context) as driver:
        yield driver


def _registered(driver: MediaDriver, client: DriverClient) -> None:
    """The client known to the driver, its heartbeat counter allocated and stamped."""
    client.add_subscription("aeron:ipc", 10)
    driver.conductor.do_work()
    assert client.poll() and client.responses_of(ON_COUNTER_READY)
    assert client.client_id in driver.conductor.clients


def _advance_and_run(driver: MediaDriver, clock: SettableClock, ms: int) -> None:
    clock.set_time_ns(clock.time_ns() + ms * MS)
    driver.conductor.do_work()


def _stamped_then_stalled(driver: MediaDriver, clock: SettableClock, client: DriverClient) -> None:
    """The client registered and stamped, then the driver stopped past the timeout with it."""
    _registered(driver, client)
    client.heartbeat(clock.time_ms())
    _advance_and_run(driver, clock, 3 * LIVENESS_MS)
    assert client.client_id in driver.conductor.clients


def test_should_keep_a_client_whose_heartbeat_aged_only_while_the_driver_stalled(
    invoked: MediaDriver, clock: SettableClock
) -> None:
    conductor = invoked.conductor
    with DriverClient(invoked.aeron_dir) as client:
        _stamped_then_stalled(invoked, clock, client)
        assert conductor.stalls == 1
        client.heartbeat(clock.time_ms())  # the resumed client stamps again
        for _ in range(5):
            _advance_and_run(invoked, clock, LIVENESS_MS // 2)
            client.heartbeat(clock.time_ms())
        client.poll()
        assert client.client_id in conductor.clients
        assert not client.responses_of(ON_CLIENT_TIMEOUT)
        assert conductor.stalls == 1  # half the timeout between cycles is no stall


def test_should_still_remove_a_silent_client_one_liveness_timeout_after_the_stall(
    invoked: MediaDriver, clock: SettableClock
) -> None:
    conductor = invoked.conductor
    timeouts = conductor.system_counters.get(SystemCounter.CLIENT_TIMEOUTS)
    with DriverClient(invoked.aeron_dir) as client:
        _stamped_then_stalled(invoked, clock, client)
        for _ in range(LIVENESS_MS // STEP_MS):  # silent, within the grace: kept
            _advance_and_run(invoked, clock, STEP_MS)
            assert client.client_id in conductor.clients
        _advance_and_run(invoked, clock, STEP_MS)  # past it
        assert client.client_id not in conductor.clients
        assert conductor.stalls == 1
        assert timeouts.get() == 1
        client.poll()
        assert client.responses_of(ON_CLIENT_TIMEOUT)


def test_should_remove_a_silent_client_on_time_when_the_driver_did_not_stall(
    invoked: MediaDriver, clock: SettableClock
) -> None:
    conductor = invoked.conductor
    with DriverClient(invoked.aeron_dir) as client:
        _registered(invoked, client)
        client.heartbeat(clock.time_ms())
        for _ in range(LIVENESS_MS // STEP_MS + 1):  # cycles 500 ms apart: no stall
            _advance_and_run(invoked, clock, STEP_MS)
        assert conductor.stalls == 0
        assert client.client_id not in conductor.clients
