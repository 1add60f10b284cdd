"""Fixtures of the lite pull consumer tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aeromq.consumer.testing import InMemoryBroker


@pytest.fixture
def broker() -> Iterator[InMemoryBroker]:
    """An in-memory broker cluster, shut down after the test."""
    instance = InMemoryBroker()
    try:
        yield instance
    finally:
        instance.shutdown()
