"""A broker process, two producer processes and a puller process: 100,000 messages over IPC and
over UDP land in order per queue and are pulled intact."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeromq.broker.testing import start_broker_process
from aeromq.client.grpc_client import GrpcClient
from tests.broker.data._system import produce_worker, pull_worker
from tests.system.conftest import ADMIN_TIMEOUT_S, Workers

BROKER_ARGS = [
    "--ingress-udp-endpoint", "127.0.0.1:0", "--index-enabled", "false",
    "--commit-log-segment-bytes", "64MiB", "--log-level", "WARNING",
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["ipc", "udp"])
def test_should_land_100_000_messages_of_2_producers_in_order_per_queue_and_pull_them_intact(
    transport: str, tmp_path: Path, workers: Workers
) -> None:
    broker = start_broker_process(tmp_path / "data", extra_args=BROKER_ARGS)
    try:
        with GrpcClient(broker.grpc_address, timeout_s=ADMIN_TIMEOUT_S) as admin:
            admin.create_topic("load", read_queue_nums=4, write_queue_nums=4)
        workers.start(pull_worker, broker.ready, "load", 4, 100_000, transport)
        workers.expect("puller-ready", 30)
        for producer_id in (1, 2):
            workers.start(
                produce_worker, broker.grpc_address, "load", producer_id, 50_000, transport
            )
        produced = [workers.expect("produced", 90) for _ in range(2)]
        assert sorted(p[1] for p in produced) == [1, 2] and all(p[2] == 50_000 for p in produced)
        _, received, duplicates, corrupt, out_of_order, _seconds = workers.expect("pulled", 90)
        assert (received, duplicates, corrupt, out_of_order) == (100_000, 0, 0, 0)
        workers.join()
    finally:
        assert broker.stop() == 0
