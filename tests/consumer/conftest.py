"""Fixtures of the lite pull consumer tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aeromq.client import MessageQueue
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.consumer.testing import InMemoryBroker
from tests.consumer._lite import TOPIC, make


@pytest.fixture
def broker() -> Iterator[InMemoryBroker]:
    """An in-memory broker cluster, shut down after the test."""
    instance = InMemoryBroker()
    try:
        yield instance
    finally:
        instance.shutdown()


@pytest.fixture
def queues(broker: InMemoryBroker) -> list[MessageQueue]:
    return broker.create_topic(TOPIC, 4)


@pytest.fixture
def consumer(broker: InMemoryBroker) -> Iterator[DefaultLitePullConsumer]:
    instance = make(broker)
    try:
        yield instance
    finally:
        instance.shutdown()
