"""MediaDriver: cnc.dat layout and publication, the directory, live and stale drivers, modes."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from pathlib import Path

import pytest

from aeromq.transport import ActiveDriverError, TransportStateError
from aeromq.transport.cnc import CNC_VERSION, CncFile
from aeromq.transport.command import ON_ERROR, ON_PUBLICATION_READY
from aeromq.transport.concurrent.clock import SystemEpochClock
from aeromq.transport.concurrent.counters_reader import CountersReader
from aeromq.transport.concurrent.distinct_error_log import DistinctErrorLog
from aeromq.transport.driver import MediaDriver, MediaDriverContext, ThreadingMode, deny_termination
from aeromq.transport.driver.aeron_dir import driver_heartbeat_age_ms, prepare_aeron_dir
from aeromq.transport.testing.driver_client import DriverClient
from tests.transport.driver.support import small_context, wait_until


def test_should_write_cnc_header_from_the_context(driver: MediaDriver) -> None:
    context = driver.context
    with CncFile.map(driver.aeron_dir, timeout_ms=1000) as cnc:
        assert cnc.cnc_version == CNC_VERSION
        assert cnc.to_driver_buffer.capacity == context.to_driver_buffer_length
        assert cnc.to_clients_buffer.capacity == context.to_clients_buffer_length
        assert cnc.counters_values_buffer.capacity == context.counters_values_buffer_length
        assert cnc.counters_metadata_buffer.capacity == 4 * context.counters_values_buffer_length
        assert cnc.error_log_buffer.capacity == context.error_buffer_length
        assert cnc.client_liveness_timeout_ns == context.client_liveness_timeout_ns
        assert cnc.pid == os.getpid()
        assert cnc.file_page_size == context.file_page_size
        assert abs(cnc.start_timestamp_ms - time.time() * 1000) < 60_000
    assert sorted(os.listdir(driver.aeron_dir)) == [
        "cnc.dat",
        "driver.lock",
        "images",
        "publications",
    ]


def test_should_publish_cnc_only_once_version_heartbeat_and_counters_are_in(
    driver_context: MediaDriverContext,
) -> None:
    seen: list[tuple[int, int, str]] = []
    stop = threading.Event()
    path = driver_context.cnc_file_path()

    def watch() -> None:
        while not stop.is_set() and not seen:
            if os.path.exists(path):
                with CncFile.map(driver_context.aeron_dir, timeout_ms=0) as cnc:
                    reader = CountersReader(
                        cnc.counters_metadata_buffer, cnc.counters_values_buffer
                    )
                    seen.append(
                        (cnc.cnc_version, cnc.driver_heartbeat_ms(), reader.get_counter_label(0))
                    )
            time.sleep(0.0001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with MediaDriver.launch(driver_context):
            wait_until(lambda: seen, what="the watcher to see cnc.dat")
    finally:
        stop.set()
        watcher.join(5)
    version, heartbeat_ms, first_label = seen[0]
    assert version == CNC_VERSION
    assert heartbeat_ms > 0
    assert first_label == "Bytes sent"


def test_should_advance_the_driver_heartbeat_and_mark_it_dead_on_close(
    driver: MediaDriver, client: DriverClient
) -> None:
    first = client.driver_heartbeat_ms()
    wait_until(lambda: client.driver_heartbeat_ms() > first, what="the heartbeat to move")
    assert abs(client.driver_heartbeat_ms() - time.time() * 1000) < 1000
    driver.close()
    assert client.driver_heartbeat_ms() == -1


def test_should_refuse_to_start_over_a_live_driver(driver: MediaDriver) -> None:
    second = dataclasses.replace(driver.context, dir_delete_on_shutdown=True)
    with pytest.raises(ActiveDriverError) as raised:
        MediaDriver.launch(second)
    error = raised.value
    assert error.aeron_dir == driver.aeron_dir
    # Refused because the heartbeat is fresh (age within the timeout); never negative, even when
    # the driver stamps it between the refusing side's clock read and its heartbeat read.
    assert 0 <= error.heartbeat_age_ms <= driver.context.driver_timeout_ms
    assert "active media driver found" in str(error)
    assert f"aeron_dir={driver.aeron_dir!r}" in str(error)
    assert f"heartbeat_age_ms={error.heartbeat_age_ms}" in str(error)
    assert os.path.exists(driver.context.cnc_file_path())


def test_should_report_a_heartbeat_stamped_after_the_clock_read_as_age_zero(
    driver_context: MediaDriverContext,
) -> None:
    now_ms = time.time_ns() // 1_000_000
    _stale_cnc(driver_context, now_ms + 1)
    assert driver_heartbeat_age_ms(driver_context.aeron_dir, now_ms) == 0
    with pytest.raises(ActiveDriverError) as raised:
        prepare_aeron_dir(
            driver_context.aeron_dir, delete_on_start=False, driver_timeout_ms=10_000, now_ms=now_ms
        )
    assert raised.value.heartbeat_age_ms == 0


def _stale_cnc(context: MediaDriverContext, heartbeat_ms: int, error: str | None = None) -> None:
    cnc = CncFile.create(
        context.aeron_dir,
        to_driver_buffer_length=context.to_driver_buffer_length,
        to_clients_buffer_length=context.to_clients_buffer_length,
        counters_values_buffer_length=context.counters_values_buffer_length,
        error_log_buffer_length=context.error_buffer_length,
        start_timestamp_ms=heartbeat_ms,
        pid=1,
    )
    index = cnc.to_driver_buffer.capacity - 768 + 640
    cnc.to_driver_buffer.put_int64_ordered(index, heartbeat_ms)
    if error is not None:
        DistinctErrorLog(cnc.error_log_buffer, SystemEpochClock()).record(error)
    cnc.close()
    Path(context.publications_dir()).mkdir(parents=True, exist_ok=True)
    Path(context.publications_dir(), "9.logbuffer").write_bytes(b"old")


def test_should_replace_a_stale_driver_with_a_warning_and_save_its_errors(
    driver_context: MediaDriverContext, caplog: pytest.LogCaptureFixture
) -> None:
    old_ms = time.time_ns() // 1_000_000 - 3_600_000
    _stale_cnc(driver_context, old_ms, error="TransportStateError: the old driver broke")
    assert driver_heartbeat_age_ms(driver_context.aeron_dir, old_ms + 3_600_000) == 3_600_000
    with (
        caplog.at_level(logging.WARNING, logger="aeromq.transport.driver"),
        MediaDriver.launch(driver_context) as driver,
        DriverClient(driver.aeron_dir) as client,
    ):
        assert not os.path.exists(os.path.join(driver.context.publications_dir(), "9.logbuffer"))
        assert client.driver_heartbeat_ms() > old_ms
    warnings = [record.getMessage() for record in caplog.records]
    assert any("replacing the files of a stopped media driver" in text for text in warnings)
    assert any("heartbeat_age_ms=" in text for text in warnings)
    saved = [
        name for name in os.listdir(Path(driver_context.aeron_dir).parent) if "error.log" in name
    ]
    assert len(saved) == 1
    text = (Path(driver_context.aeron_dir).parent / saved[0]).read_text()
    assert "the old driver broke" in text
    assert "1 distinct errors observed" in text


def test_should_treat_a_cleanly_closed_driver_as_stale(driver_context: MediaDriverContext) -> None:
    with MediaDriver.launch(driver_context):
        pass
    assert driver_heartbeat_age_ms(driver_context.aeron_dir, time.time_ns() // 1_000_000) is None
    with MediaDriver.launch(driver_context) as again:
        assert not again.is_closed


def test_should_delete_a_live_drivers_dir_when_asked_to_on_start(
    driver_context: MediaDriverContext,
) -> None:
    _stale_cnc(driver_context, time.time_ns() // 1_000_000)
    with pytest.raises(ActiveDriverError):
        MediaDriver.launch(driver_context)
    forced = dataclasses.replace(driver_context, dir_delete_on_start=True)
    with MediaDriver.launch(forced) as driver:
        assert not os.path.exists(os.path.join(driver.context.publications_dir(), "9.logbuffer"))


def test_should_launch_embedded_in_a_fresh_dir_removed_on_close() -> None:
    base = small_context(Path("/unused"))
    driver = MediaDriver.launch_embedded(base)
    aeron_dir = driver.aeron_dir
    assert aeron_dir != "/unused"
    if os.path.isdir("/dev/shm"):
        assert aeron_dir.startswith("/dev/shm/aeron-embedded-")
    assert os.path.exists(os.path.join(aeron_dir, "cnc.dat"))
    driver.close()
    driver.close()
    assert driver.is_closed
    assert not os.path.exists(aeron_dir)


def test_should_keep_the_dir_on_close_unless_asked(driver_context: MediaDriverContext) -> None:
    with MediaDriver.launch(driver_context) as driver:
        pass
    assert driver.is_closed
    assert os.path.exists(driver_context.cnc_file_path())


def test_should_not_be_constructed_directly() -> None:
    with pytest.raises(TypeError, match="launch"):
        MediaDriver()


@pytest.mark.parametrize("mode", [ThreadingMode.SHARED, ThreadingMode.SHARED_NETWORK])
def test_should_run_the_conductor_in_every_threaded_mode(
    driver_context: MediaDriverContext, mode: ThreadingMode
) -> None:
    context = dataclasses.replace(driver_context, threading_mode=mode)
    with MediaDriver.launch(context) as driver, DriverClient(driver.aeron_dir) as client:
        correlation_id = client.add_publication("aeron:ipc", 7)
        assert client.await_correlated(correlation_id).type_id == ON_PUBLICATION_READY
        with pytest.raises(TransportStateError, match="INVOKER"):
            driver.shared_agent_invoker  # noqa: B018


def test_should_let_the_caller_drive_the_conductor_in_invoker_mode(
    driver_context: MediaDriverContext,
) -> None:
    context = dataclasses.replace(driver_context, threading_mode=ThreadingMode.INVOKER)
    with MediaDriver.launch(context) as driver, DriverClient(driver.aeron_dir) as client:
        invoker = driver.shared_agent_invoker
        correlation_id = client.add_publication("aeron:ipc", 7)
        assert client.poll() == []
        invoker.invoke()
        assert client.await_correlated(correlation_id, timeout_s=0).type_id == ON_PUBLICATION_READY
        client.terminate_driver()
        invoker.invoke()
        assert driver.is_terminated
        assert invoker.is_closed


def test_should_terminate_on_an_accepted_terminate_driver_and_call_the_hook(
    driver_context: MediaDriverContext,
) -> None:
    calls: list[str] = []
    context = dataclasses.replace(driver_context, termination_hook=lambda: calls.append("hook"))
    with MediaDriver.launch(context) as driver, DriverClient(driver.aeron_dir) as client:
        client.terminate_driver(b"secret")
        assert driver.wait_for_termination(5)
        assert calls == ["hook"]
        wait_until(lambda: client.driver_heartbeat_ms() == -1, what="the conductor to stop")


def test_should_refuse_terminate_driver_by_default(driver_context: MediaDriverContext) -> None:
    tokens: list[bytes] = []

    def validator(token: bytes) -> bool:
        tokens.append(token)
        return deny_termination(token)

    context = dataclasses.replace(driver_context, termination_validator=validator)
    with MediaDriver.launch(context) as driver, DriverClient(driver.aeron_dir) as client:
        client.terminate_driver(b"let me")
        wait_until(lambda: tokens, what="the validator to be asked")
        assert tokens == [b"let me"]
        assert not driver.wait_for_termination(0.05)
        correlation_id = client.add_publication("aeron:ipc", 3)
        assert client.await_correlated(correlation_id).type_id != ON_ERROR
