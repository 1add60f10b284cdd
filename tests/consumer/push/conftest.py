"""Fixtures of the push consumer tests: one real broker for the package, a producer on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aeromq.producer import Producer
from tests.consumer._broker_process import ServerProcess, start_broker


@pytest.fixture(scope="package")
def real_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path_factory.mktemp("push-broker"))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="package")
def producer(real_broker: ServerProcess) -> Iterator[Producer]:
    with Producer("push-test-producer", real_broker.grpc_address) as instance:
        yield instance
