"""The asyncio tests run on anyio's pytest plugin (``@pytest.mark.anyio``), on asyncio only:
``aeromq.aio`` is built on asyncio's event loop."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aeromq.consumer.testing import InMemoryBroker


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def broker() -> Iterator[InMemoryBroker]:
    """An in-memory broker cluster, shut down after the test."""
    instance = InMemoryBroker()
    try:
        yield instance
    finally:
        instance.shutdown()
