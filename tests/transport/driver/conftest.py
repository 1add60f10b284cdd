"""Fixtures for the media driver tests: a driver over a small context, and a raw client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.transport.driver import MediaDriver, MediaDriverContext
from aeromq.transport.testing.driver_client import DriverClient
from tests.transport.driver.support import small_context


@pytest.fixture
def driver_context(shm_dir: Path) -> MediaDriverContext:
    return small_context(shm_dir / "aeron")


@pytest.fixture
def driver(driver_context: MediaDriverContext) -> Iterator[MediaDriver]:
    media_driver = MediaDriver.launch(driver_context)
    try:
        yield media_driver
    finally:
        media_driver.close()


@pytest.fixture
def client(driver: MediaDriver) -> Iterator[DriverClient]:
    with DriverClient(driver.aeron_dir) as driver_client:
        yield driver_client
