"""Real servers for consumer tests, through the package's launcher (``aeromq.broker.testing``):
``aeromq broker`` with its data and embedded media driver in a temporary directory (IPC ingress
only, quick flushes) and ``aeromq namesrv``, each on gRPC port 0; plus the gRPC calls the tests
make on them."""

from __future__ import annotations

from pathlib import Path

from aeromq.broker.testing import ServerProcess, start_broker_process, start_namesrv_process
from aeromq.client.grpc_client import GrpcClient

__all__ = ["ServerProcess", "client", "create_topic", "start_broker", "start_namesrv"]

_CONSUMER_TEST_ARGS = (
    "--flush-interval-ms", "50",
    "--commit-log-segment-bytes", str(64 << 20),
    "--ingress-udp-endpoint", "none",
    "--log-level", "WARNING",
)  # fmt: skip


def start_broker(
    directory: Path,
    name: str = "broker-a",
    *extra: str,
    namesrv: str | None = None,
    timeout_s: float = 30.0,
) -> ServerProcess:
    """An ``aeromq broker`` named ``name`` with its data in ``directory/name``; with ``namesrv``
    it registers there every 200 ms."""
    arguments = [*_CONSUMER_TEST_ARGS]
    if namesrv is not None:
        arguments += ["--namesrv-heartbeat-interval-ms", "200"]
    return start_broker_process(
        directory / name / "store",
        name,
        [*arguments, *extra],
        namesrv_address=namesrv,
        timeout_s=timeout_s,
    )


def start_namesrv(timeout_s: float = 30.0) -> ServerProcess:
    """An ``aeromq namesrv`` on 127.0.0.1, port 0."""
    return start_namesrv_process(timeout_s)


def client(server: ServerProcess) -> GrpcClient:
    return GrpcClient(server.grpc_address, timeout_s=5.0)


def create_topic(server: ServerProcess, topic: str, queue_nums: int) -> None:
    with client(server) as grpc:
        grpc.create_topic(topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums)
