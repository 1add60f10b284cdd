"""``Aeron.connect`` and ``close``: version check, driver liveness at connect, client id."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aeromq.transport import CncFileError, DriverTimeoutError, TransportStateError
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.cnc import CNC_VERSION_FIELD_OFFSET
from aeromq.transport.command import CLIENT_CLOSE
from aeromq.transport.testing.fake_driver import FakeDriver

from .conftest import wait_for


def test_should_connect_and_take_a_client_id_from_the_ring_buffer(
    driver: FakeDriver, context: AeronContext
) -> None:
    first_id = driver.to_driver.next_correlation_id() + 1
    with Aeron.connect(context) as aeron:
        assert aeron.client_id == first_id
        assert not aeron.is_closed
        assert aeron.counters_reader.max_counter_id == 255


def test_should_refuse_a_cnc_file_of_another_major_version(
    driver: FakeDriver, context: AeronContext
) -> None:
    header = driver.cnc._mapped.buffer  # the raw mapping: rewrite the version word
    header.put_int32(CNC_VERSION_FIELD_OFFSET, 0x10000)  # 1.0.0
    with pytest.raises(CncFileError, match="version not compatible") as info:
        Aeron.connect(context)
    assert info.value.file_version == "1.0.0"


def test_should_time_out_naming_the_directory_when_there_is_no_driver(shm_dir: Path) -> None:
    aeron_dir = shm_dir / "nothing-here"
    started = time.monotonic()
    with pytest.raises(DriverTimeoutError, match=r"cnc\.dat not found") as info:
        Aeron.connect(AeronContext(aeron_dir=str(aeron_dir), driver_timeout_ms=200))
    assert info.value.aeron_dir == str(aeron_dir)
    assert str(aeron_dir) in str(info.value)
    assert time.monotonic() - started < 5


def test_should_time_out_with_the_heartbeat_age_when_the_driver_is_dead(shm_dir: Path) -> None:
    fake = FakeDriver(shm_dir / "dead", delete_dir_on_close=False)
    try:
        fake.set_driver_heartbeat_ms(int(time.time() * 1000) - 60_000)
        with pytest.raises(DriverTimeoutError, match="heartbeat") as info:
            Aeron.connect(AeronContext(aeron_dir=str(fake.aeron_dir), driver_timeout_ms=300))
        assert info.value.aeron_dir == str(fake.aeron_dir)
        assert info.value.heartbeat_age_ms >= 60_000
        assert info.value.retriable
    finally:
        fake.close()


def test_should_connect_once_a_late_driver_starts(shm_dir: Path) -> None:
    import threading

    aeron_dir = shm_dir / "late"
    drivers: list[FakeDriver] = []
    timer = threading.Timer(0.2, lambda: drivers.append(FakeDriver(aeron_dir).start()))
    timer.start()
    try:
        with Aeron.connect(
            AeronContext(aeron_dir=str(aeron_dir), driver_timeout_ms=3_000)
        ) as aeron:
            assert not aeron.is_closed
    finally:
        timer.join()
        for fake in drivers:
            fake.close()


def test_should_close_idempotently_and_say_goodbye_to_the_driver(
    driver: FakeDriver, context: AeronContext
) -> None:
    aeron = Aeron.connect(context)
    client_id = aeron.client_id
    aeron.close()
    aeron.close()
    assert aeron.is_closed
    wait_for(lambda: CLIENT_CLOSE in driver.command_types(), what="CLIENT_CLOSE")
    closes = [c for t, c in driver.commands if t == CLIENT_CLOSE]
    assert [c.client_id for c in closes] == [client_id]
    with pytest.raises(TransportStateError, match="closed"):
        aeron.add_publication("aeron:ipc", 1)


def test_should_refuse_the_invoker_when_the_conductor_has_its_thread(aeron: Aeron) -> None:
    with pytest.raises(TransportStateError, match="use_conductor_agent_invoker"):
        _ = aeron.conductor_agent_invoker
