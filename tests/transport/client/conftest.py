"""Fixtures of the client tests: a fake driver on a thread, a client of it, and a bare log.

Every wait is bounded (``wait_for``); short timeouts keep the liveness tests quick.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.position import Position
from aeromq.transport.logbuffer.exclusive_term_appender import ExclusiveTermAppender
from aeromq.transport.logbuffer.header import HeaderWriter
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    default_frame_header,
    fill_default_header,
    initialise_tails,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.testing.fake_driver import FakeDriver

MS = 1_000_000


def wait_for(
    condition: Callable[[], bool], timeout_s: float = 5.0, what: str = "condition"
) -> None:
    """Poll ``condition`` until true; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.001)


@pytest.fixture
def driver(shm_dir: Path) -> Iterator[FakeDriver]:
    fake = FakeDriver(shm_dir / "aeron", delete_dir_on_close=False)
    fake.start()
    yield fake
    fake.close()


@pytest.fixture
def errors() -> list[BaseException]:
    return []


@pytest.fixture
def context(driver: FakeDriver, errors: list[BaseException]) -> AeronContext:
    return AeronContext(
        aeron_dir=str(driver.aeron_dir),
        error_handler=errors.append,
        driver_timeout_ms=2_000,
        keep_alive_interval_ns=20 * MS,
        idle_sleep_duration_ns=1 * MS,
        resource_linger_duration_ns=50 * MS,
    )


@pytest.fixture
def aeron(context: AeronContext) -> Iterator[Aeron]:
    client = Aeron.connect(context)
    yield client
    client.close()


class BareLog:
    """A log buffer file with one writer and one subscriber position, no driver or client:
    for driving an ``Image`` directly."""

    def __init__(self, path: Path, term_length: int = 64 * 1024, initial_term_id: int = 7) -> None:
        self.log = LogBuffers.create(path, term_length)
        meta = self.log.meta_data_buffer
        self.log.metadata.initial_term_id = initial_term_id
        self.log.metadata.mtu_length = 1408
        fill_default_header(meta, 42, 1001, initial_term_id)
        initialise_tails(meta, initial_term_id)
        self.header_writer = HeaderWriter(default_frame_header(meta))
        self.appenders = [
            ExclusiveTermAppender(buffer, meta, index)
            for index, buffer in enumerate(self.log.term_buffers)
        ]
        self.values = AtomicBuffer(bytearray(1024))
        self.position = Position(self.values, 0)
        self.term_id = initial_term_id
        self.term_offset = 0
        self.index = 0
        self.term_length = term_length

    def append(self, payload: bytes, max_payload_length: int = 1376) -> int:
        """Append one message (rotating to the next term when it does not fit)."""
        appender = self.appenders[self.index]
        if len(payload) > max_payload_length:
            result = appender.append_fragmented_message(
                self.term_id,
                self.term_offset,
                self.header_writer,
                payload,
                0,
                len(payload),
                max_payload_length,
                None,
            )
        else:
            result = appender.append_unfragmented_message(
                self.term_id, self.term_offset, self.header_writer, payload, 0, len(payload), None
            )
        if result < 0:
            self.term_id += 1
            self.term_offset = 0
            self.index = (self.index + 1) % 3
            return self.append(payload, max_payload_length)
        self.term_offset = result
        return result

    def close(self) -> None:
        self.log.close()


@pytest.fixture
def bare_log(shm_dir: Path) -> Iterator[BareLog]:
    log = BareLog(shm_dir / "bare.logbuffer")
    yield log
    log.close()
