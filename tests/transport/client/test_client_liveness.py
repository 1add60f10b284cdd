"""``ClientLiveness`` with a settable clock: when it stamps, what it sends, when it fails."""

from __future__ import annotations

import struct

import pytest

from aeromq.transport import ClientTimeoutError, DriverTimeoutError
from aeromq.transport.client import HEARTBEAT_TYPE_ID
from aeromq.transport.client.client_liveness import ClientLiveness
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.clock import SettableClock
from aeromq.transport.concurrent.counters_manager import CountersManager

MS = 1_000_000
CLIENT_ID = 77


class StubProxy:
    """The two things liveness asks of the driver proxy."""

    client_id = CLIENT_ID

    def __init__(self, clock: SettableClock) -> None:
        self.clock = clock
        self.driver_heartbeat_ms: int | None = None
        self.keepalives = 0

    def time_of_last_driver_keepalive_ms(self) -> int:
        if self.driver_heartbeat_ms is not None:
            return self.driver_heartbeat_ms
        return self.clock.time_ms()  # a live driver

    def send_client_keepalive(self) -> None:
        self.keepalives += 1


@pytest.fixture
def clock() -> SettableClock:
    return SettableClock(1_000_000 * MS)


@pytest.fixture
def counters(clock: SettableClock) -> CountersManager:
    return CountersManager(
        AtomicBuffer(bytearray(64 * 512)), AtomicBuffer(bytearray(64 * 128)), clock
    )


@pytest.fixture
def proxy(clock: SettableClock) -> StubProxy:
    return StubProxy(clock)


@pytest.fixture
def liveness(clock: SettableClock, counters: CountersManager, proxy: StubProxy) -> ClientLiveness:
    return ClientLiveness(
        proxy,  # type: ignore[arg-type]
        counters,
        clock,
        aeron_dir="/dev/shm/x",
        keep_alive_interval_ns=500 * MS,
        driver_timeout_ms=10_000,
        inter_service_timeout_ns=10_000 * MS,
        idle_sleep_duration_ns=16 * MS,
        now_ns=clock.time_ns(),
    )


def allocate_heartbeat(counters: CountersManager, client_id: int = CLIENT_ID) -> int:
    return counters.allocate(
        f"client-heartbeat: {client_id}", HEARTBEAT_TYPE_ID, struct.pack("<q", client_id)
    )


def test_should_check_at_most_once_per_idle_sleep(
    liveness: ClientLiveness, clock: SettableClock
) -> None:
    assert not liveness.due(clock.time_ns() + 16 * MS)
    assert liveness.due(clock.time_ns() + 16 * MS + 1)


def test_should_send_keepalives_until_the_counter_exists_then_stamp_it(
    liveness: ClientLiveness, clock: SettableClock, counters: CountersManager, proxy: StubProxy
) -> None:
    clock.advance_ms(100)
    assert liveness.check(clock.time_ns()) == 0  # not yet a keepalive interval
    clock.advance_ms(450)
    assert liveness.check(clock.time_ns()) == 1
    assert proxy.keepalives == 1 and liveness.heartbeat_counter_id == -1

    allocate_heartbeat(counters, CLIENT_ID + 1)  # someone else's
    counter_id = allocate_heartbeat(counters)
    clock.advance_ms(501)
    assert liveness.check(clock.time_ns()) == 1
    assert liveness.heartbeat_counter_id == counter_id
    assert counters.get_counter_value(counter_id) == clock.time_ms()
    assert proxy.keepalives == 1

    clock.advance_ms(501)
    liveness.check(clock.time_ns())
    assert counters.get_counter_value(counter_id) == clock.time_ms()
    assert proxy.keepalives == 1


def test_should_fail_when_the_driver_heartbeat_is_too_old(
    liveness: ClientLiveness, clock: SettableClock, proxy: StubProxy
) -> None:
    proxy.driver_heartbeat_ms = clock.time_ms()
    clock.advance_ms(600)
    liveness.check(clock.time_ns())  # 600 ms old: fine
    clock.advance_ms(10_000)
    with pytest.raises(DriverTimeoutError) as info:
        liveness.check(clock.time_ns())
    assert info.value.heartbeat_age_ms == 10_600
    assert info.value.aeron_dir == "/dev/shm/x"


def test_should_fail_when_the_driver_shut_down(
    liveness: ClientLiveness, clock: SettableClock, proxy: StubProxy
) -> None:
    proxy.driver_heartbeat_ms = -1
    clock.advance_ms(501)
    with pytest.raises(DriverTimeoutError, match="shut down"):
        liveness.check(clock.time_ns())


def test_should_fail_when_not_serviced_within_the_inter_service_timeout_and_unknown_to_the_driver(
    liveness: ClientLiveness, clock: SettableClock
) -> None:
    clock.advance_ms(10_001)
    with pytest.raises(ClientTimeoutError, match="inter-service") as info:
        liveness.check(clock.time_ns())
    assert info.value.interval_ns == 10_001 * MS


def test_should_carry_on_after_a_stall_while_the_driver_still_holds_it(
    liveness: ClientLiveness, clock: SettableClock, counters: CountersManager, proxy: StubProxy
) -> None:
    counter_id = allocate_heartbeat(counters)  # found at the stall's check, not before
    proxy.driver_heartbeat_ms = clock.time_ms()
    clock.advance_ms(12_000)  # stopped with its embedded driver, past every timeout
    assert liveness.check(clock.time_ns()) == 1
    assert counters.get_counter_value(counter_id) == clock.time_ms()  # stamped at once
    assert liveness.heartbeat_counter_id == counter_id
    clock.advance_ms(501)  # the driver's heartbeat is judged at the next check
    with pytest.raises(DriverTimeoutError):
        liveness.check(clock.time_ns())


def test_should_judge_a_driver_that_ran_again_after_the_stall_alive(
    liveness: ClientLiveness, clock: SettableClock, counters: CountersManager, proxy: StubProxy
) -> None:
    allocate_heartbeat(counters)
    proxy.driver_heartbeat_ms = clock.time_ms()
    clock.advance_ms(12_000)
    liveness.check(clock.time_ns())
    proxy.driver_heartbeat_ms = clock.time_ms()  # the driver's conductor ran once resumed
    clock.advance_ms(501)
    assert liveness.check(clock.time_ns()) == 1


@pytest.mark.parametrize(
    ("later_ms", "message"),
    [
        (501, "heartbeat counter was closed"),  # at its next keepalive
        (12_000, "holds no heartbeat counter"),  # after a stall in which the driver dropped it
    ],
)
def test_should_fail_when_its_heartbeat_counter_is_freed(
    liveness: ClientLiveness, clock: SettableClock, counters: CountersManager, later_ms: int,
    message: str,
) -> None:  # fmt: skip
    counter_id = allocate_heartbeat(counters)
    clock.advance_ms(501)
    liveness.check(clock.time_ns())
    counters.free(counter_id)  # the driver timed the client out
    clock.advance_ms(later_ms)
    with pytest.raises(ClientTimeoutError, match=message):
        liveness.check(clock.time_ns())
