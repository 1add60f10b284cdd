"""Two broker processes behind a name server serve one topic's queues: a producer process that
knows only the name server spreads its messages over both, and every message is pulled back
from one broker or the other, once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.namesrv import NameServer, NameServerConfig
from aeromq.broker.testing import start_broker_process
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.transport.client import Aeron, AeronContext
from tests.broker.data._system import parse_body, produce_worker, pull_all
from tests.system.conftest import ADMIN_TIMEOUT_S, Workers, wait_for

COUNT = 2_000


@pytest.fixture
def namesrv() -> Iterator[NameServer]:
    server = NameServer(NameServerConfig(port=0, broker_timeout_ms=3_000, scan_interval_ms=100))
    server.start()
    yield server
    server.stop()


@pytest.mark.slow
def test_should_serve_one_topic_from_two_brokers_behind_a_name_server(
    namesrv: NameServer, tmp_path: Path, workers: Workers
) -> None:
    args = ["--namesrv-address", namesrv.address, "--namesrv-heartbeat-interval-ms", "200",
            "--ingress-udp-endpoint", "none", "--index-enabled", "false",
            "--commit-log-segment-bytes", "16MiB", "--log-level", "WARNING"]  # fmt: skip
    brokers = [
        start_broker_process(tmp_path / name, name=name, extra_args=args)
        for name in ("broker-a", "broker-b")
    ]
    try:
        for broker in brokers:
            with GrpcClient(broker.grpc_address, timeout_s=ADMIN_TIMEOUT_S) as admin:
                admin.create_topic("shared", read_queue_nums=2, write_queue_nums=2)
        with GrpcClient(namesrv.address, timeout_s=ADMIN_TIMEOUT_S) as ns:
            wait_for(
                lambda: len(ns.query_route("shared", namesrv=True).queue_datas) == 2,
                what="both brokers in the topic's route",
            )
        workers.start(produce_worker, namesrv.address, "shared", 5, COUNT, "ipc")
        assert workers.expect("produced", 60)[2] == COUNT
        workers.join()
        bodies: list[bytes] = []
        counts: dict[str, int] = {}
        for broker in brokers:
            with (
                Aeron.connect(AeronContext(aeron_dir=broker.ready["aeron_dir"])) as aeron,
                ClientSession.connect(aeron, SessionConfig()) as session,
            ):
                found = pull_all(session, "shared", 2)
            counts[broker.name] = len(found)
            bodies += found.values()
        assert all(count > COUNT // 4 for count in counts.values()), counts
        assert sorted(parse_body(body) for body in bodies) == [(5, seq) for seq in range(COUNT)]
    finally:
        for broker in brokers:
            assert broker.stop() == 0
