"""Fixtures: a real store in tmp_path with the control plane served by a real gRPC server on
127.0.0.1, port 0, and a ``GrpcClient`` to it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.config import BrokerConfig
from aeromq.broker.grpc import BrokerGrpcServer
from aeromq.broker.processor.admin import ControlPlane
from aeromq.broker.store import InboundMessage, MessageStore
from aeromq.client.grpc_client import GrpcClient
from aeromq.proto import common_pb2


def small_broker_config(data_dir: Path, **overrides: Any) -> BrokerConfig:
    """A broker config with tiny store files and port 0."""
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "grpc_port": 0,
        "commit_log_segment_bytes": 1 << 20,
        "max_message_size": 64 * 1024,
        "consume_queue_entries_per_segment": 1024,
        "index_slots": 31,
        "index_entries": 64,
        "flush_interval_ms": 50,
        "ingress_udp_endpoint": None,
    }
    values.update(overrides)
    return BrokerConfig(**values)


@dataclass
class RunningBroker:
    config: BrokerConfig
    store: MessageStore
    control: ControlPlane
    server: BrokerGrpcServer

    @property
    def address(self) -> str:
        return self.server.address

    def stop(self) -> None:
        self.server.stop(grace_s=0.5)
        self.control.close()
        self.store.shutdown()


def start_broker(
    data_dir: Path, *, clock_ms: Callable[[], int] | None = None, **overrides: Any
) -> RunningBroker:
    """A store, control plane and gRPC server on port 0; ``clock_ms`` stamps stored messages."""
    config = small_broker_config(data_dir, **overrides)
    store = MessageStore(config.to_store_config(), clock_ms=clock_ms)
    store.start()
    control = ControlPlane(config, store)
    server = BrokerGrpcServer(control, config.grpc_host, config.grpc_port)
    server.start()
    control.identity.update_endpoints(
        common_pb2.BrokerEndpoints(
            grpc_address=server.address,
            ipc_channel=config.ingress_ipc_channel,
            ipc_stream_id=config.ingress_ipc_stream_id,
            aeron_dir=str(data_dir / "aeron"),
        )
    )
    control.start()
    return RunningBroker(config, store, control, server)


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., RunningBroker]]:
    """``broker_factory(name="b", **config overrides)`` starts a broker in tmp_path/name;
    all are stopped at the end."""
    started: list[RunningBroker] = []

    def factory(
        name: str = "broker", *, clock_ms: Callable[[], int] | None = None, **overrides: Any
    ) -> RunningBroker:
        running = start_broker(tmp_path / name, clock_ms=clock_ms, **overrides)
        started.append(running)
        return running

    yield factory
    for running in started:
        running.stop()


@pytest.fixture
def broker(broker_factory: Callable[..., RunningBroker]) -> RunningBroker:
    return broker_factory()


@pytest.fixture
def client(broker: RunningBroker) -> Iterator[GrpcClient]:
    with GrpcClient(broker.address, timeout_s=5.0) as grpc_client:
        yield grpc_client


def put_messages(store: MessageStore, topic: str, queue_id: int, count: int) -> None:
    """Append ``count`` small messages to (topic, queue id)."""
    for i in range(count):
        result = store.put_message(InboundMessage(topic, queue_id, f"m{i}".encode()))
        assert result.ok, result
