"""Liveness: the client heartbeat counter, CLIENT_KEEPALIVE, driver death, client timeouts,
and the conductor run by the application (invoker mode)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from aeromq.transport import ClientTimeoutError, DriverTimeoutError, TransportStateError
from aeromq.transport.client import CLOSED, HEARTBEAT_TYPE_ID, Aeron, AeronContext
from aeromq.transport.command import CLIENT_KEEPALIVE
from aeromq.transport.concurrent.clock import SettableClock
from aeromq.transport.testing.fake_driver import FakeDriver

from .conftest import MS, wait_for


def test_should_send_keepalives_until_the_driver_allocates_its_heartbeat_counter(
    aeron: Aeron, driver: FakeDriver
) -> None:
    wait_for(lambda: CLIENT_KEEPALIVE in driver.command_types(), what="a keepalive")
    keepalive = next(c for t, c in driver.commands if t == CLIENT_KEEPALIVE)
    assert (keepalive.client_id, keepalive.correlation_id) == (aeron.client_id, 0)
    wait_for(lambda: aeron.conductor.heartbeat_counter_id >= 0, what="the heartbeat counter")
    counter_id = aeron.conductor.heartbeat_counter_id
    assert counter_id == driver.heartbeat_counter_id(aeron.client_id)
    assert aeron.counters_reader.get_counter_type_id(counter_id) == HEARTBEAT_TYPE_ID
    assert aeron.counters_reader.get_counter_label(counter_id) == (
        f"client-heartbeat: {aeron.client_id}"
    )


def test_should_stamp_the_heartbeat_counter_with_the_epoch_time(
    aeron: Aeron, driver: FakeDriver
) -> None:
    aeron.add_publication("aeron:ipc", 1)  # the driver allocates the counter on a command
    wait_for(lambda: aeron.conductor.heartbeat_counter_id >= 0, what="the heartbeat counter")
    counter_id = aeron.conductor.heartbeat_counter_id
    first = driver.counter_value(counter_id)
    assert abs(first - time.time() * 1000) < 2_000
    wait_for(lambda: driver.counter_value(counter_id) > first, what="the next heartbeat")
    assert not aeron.is_closed
    keepalives = driver.command_types().count(CLIENT_KEEPALIVE)
    time.sleep(0.1)
    assert driver.command_types().count(CLIENT_KEEPALIVE) == keepalives  # the counter is enough


def test_should_close_with_a_client_timeout_when_the_driver_says_so(
    aeron: Aeron, driver: FakeDriver, errors: list[BaseException]
) -> None:
    publication = aeron.add_publication("aeron:ipc", 1)
    subscription = aeron.add_subscription("aeron:ipc", 1)
    driver.time_out_client(aeron.client_id + 1000)  # someone else's timeout: ignored
    driver.time_out_client(aeron.client_id)

    wait_for(lambda: aeron.is_closed and len(errors) > 0, what="the client to close")
    assert [type(e) for e in errors] == [ClientTimeoutError]
    assert errors[0].client_id == aeron.client_id  # type: ignore[attr-defined]
    assert publication.is_closed and subscription.is_closed
    assert publication.offer(b"late") == CLOSED
    with pytest.raises(ClientTimeoutError, match="timed out"):
        aeron.add_publication("aeron:ipc", 1)


def test_should_fail_with_a_driver_timeout_when_the_driver_dies(
    driver: FakeDriver, context: AeronContext, errors: list[BaseException]
) -> None:
    ctx = dataclasses.replace(context, driver_timeout_ms=200)
    with Aeron.connect(ctx) as aeron:
        publication = aeron.add_publication("aeron:ipc", 1)
        driver.stop_heartbeat()

        wait_for(lambda: aeron.is_closed and len(errors) > 0, what="the driver death to be noticed")
        assert len(errors) == 1 and isinstance(errors[0], DriverTimeoutError)
        assert errors[0].aeron_dir == str(driver.aeron_dir)  # type: ignore[attr-defined]
        assert errors[0].heartbeat_age_ms > 200  # type: ignore[attr-defined]
        assert publication.offer(b"x") == CLOSED
        with pytest.raises(DriverTimeoutError, match="media driver timed out") as info:
            aeron.add_subscription("aeron:ipc", 1)
        assert info.value.__cause__ is errors[0]


def test_should_fail_with_a_driver_timeout_when_the_driver_shut_down(
    driver: FakeDriver, aeron: Aeron, errors: list[BaseException]
) -> None:
    driver.set_driver_heartbeat_ms(-1)
    wait_for(lambda: aeron.is_closed and len(errors) > 0, what="the shutdown to be noticed")
    assert [str(e) for e in errors] == [
        f"the media driver has shut down: aeron_dir={str(driver.aeron_dir)!r}"
    ]


def test_should_close_when_its_heartbeat_counter_disappears(
    aeron: Aeron, driver: FakeDriver, errors: list[BaseException]
) -> None:
    aeron.add_publication("aeron:ipc", 1)
    wait_for(lambda: aeron.conductor.heartbeat_counter_id >= 0, what="the heartbeat counter")
    with driver._lock:  # the driver frees the counter without telling the client
        driver.counters.free(driver.clients.pop(aeron.client_id))
    wait_for(lambda: aeron.is_closed and len(errors) > 0, what="the client to close")
    assert isinstance(errors[0], ClientTimeoutError)
    assert "heartbeat counter was closed" in str(errors[0])


def test_should_be_timed_out_by_the_driver_when_it_stops_heartbeating(
    shm_dir: object, errors: list[BaseException]
) -> None:
    fake = FakeDriver(shm_dir / "strict", client_liveness_timeout_ns=200 * MS)  # type: ignore[operator]
    fake.start()
    try:
        ctx = AeronContext(
            aeron_dir=str(fake.aeron_dir),
            error_handler=errors.append,
            use_conductor_agent_invoker=True,
        )
        aeron = Aeron.connect(ctx)
        aeron.add_publication("aeron:ipc", 1)
        wait_for(lambda: aeron.client_id in fake.timed_out_clients, what="the driver's timeout")
        invoker = aeron.conductor_agent_invoker
        wait_for(lambda: invoker.invoke() >= 0 and aeron.is_closed, what="ON_CLIENT_TIMEOUT")
        assert isinstance(errors[-1], ClientTimeoutError)
        aeron.close()
    finally:
        fake.close()


def test_should_do_nothing_until_the_application_invokes_the_conductor(
    driver: FakeDriver, context: AeronContext
) -> None:
    ctx = dataclasses.replace(context, use_conductor_agent_invoker=True)
    with Aeron.connect(ctx) as aeron:
        subscription = aeron.add_subscription("aeron:ipc", 2)
        aeron.add_publication("aeron:ipc", 2)  # the image arrives while waiting for this
        assert subscription.image_count == 1
        driver.make_image_unavailable(next(iter(driver.publications)))
        time.sleep(0.05)
        assert subscription.image_count == 1  # nobody serviced the conductor
        invoker = aeron.conductor_agent_invoker
        wait_for(lambda: invoker.invoke() >= 0 and subscription.image_count == 0, what="invoke")


def test_should_close_when_the_conductor_is_not_serviced_in_time(
    driver: FakeDriver, context: AeronContext, errors: list[BaseException]
) -> None:
    # the client has sent no command: the driver holds no heartbeat counter of it, so after the
    # interval it is as good as dropped (one the driver still holds carries on:
    # test_client_liveness.py, tests/system/test_broker_pause.py)
    clock = SettableClock(time.monotonic_ns())
    ctx = dataclasses.replace(
        context,
        use_conductor_agent_invoker=True,
        nano_clock=clock,
        inter_service_timeout_ns=1_000 * MS,
    )
    with Aeron.connect(ctx) as aeron:
        invoker = aeron.conductor_agent_invoker
        clock.advance_ms(500)
        invoker.invoke()
        assert not aeron.is_closed
        clock.advance_ms(1_500)
        invoker.invoke()
        assert aeron.is_closed
        assert isinstance(errors[-1], ClientTimeoutError)
        assert "inter-service timeout" in str(errors[-1])
        with pytest.raises(ClientTimeoutError):
            aeron.add_publication("aeron:ipc", 1)


def test_should_refuse_calls_after_close(aeron: Aeron) -> None:
    aeron.close()
    with pytest.raises(TransportStateError, match="closed"):
        aeron.add_subscription("aeron:ipc", 1)
    with pytest.raises(TransportStateError, match="closed"):
        aeron.next_correlation_id()


def test_should_keep_logs_mapped_after_a_timeout_until_the_application_closes(
    aeron: Aeron, driver: FakeDriver, errors: list[BaseException]
) -> None:
    publication = aeron.add_publication("aeron:ipc", 1)
    log = publication.log_buffers
    driver.time_out_client(aeron.client_id)
    wait_for(lambda: aeron.is_closed and len(errors) > 0, what="the client to stop")
    time.sleep(0.1)  # past the resource linger: still mapped, nothing lingers out by itself
    assert log.term_buffers[0].capacity > 0
    aeron.close()
    assert log.term_buffers[0].capacity == 0
