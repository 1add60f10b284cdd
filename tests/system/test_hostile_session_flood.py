"""One client opening IPC sessions in a loop against a default broker process: refused with a
code (``SYSTEM_BUSY``, within a second, never the 5 s silence of the issue) once it holds its
share of shared memory (8 GiB: 21 sessions of 2 x 192 MiB logs), while another client, in
another process, connects; and the moment the first closes its sessions what they held is given
back: its next session connects at once (not seconds later, after the logs' linger)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import BrokerBusyError
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.proto import session_pb2
from aeromq.transport.client import Aeron, AeronContext
from tests.system.conftest import Workers

MAX_SESSIONS_TRIED = 80
REFUSED_WITHIN_S = 1.0


def bystander(aeron_dir: str, results: Queue[Any]) -> None:
    """Another client: connects a session of its own and has one request answered."""
    started = time.monotonic()
    try:
        with (
            Aeron.connect(AeronContext(aeron_dir=aeron_dir)) as aeron,
            ClientSession.connect(aeron, SessionConfig(client_id="bystander")) as session,
        ):
            session.request(session_pb2.KeepAliveRequest())
            results.put(("connected", time.monotonic() - started))
    except Exception as exc:  # reported, for the test to fail with it
        results.put(("failed", f"{type(exc).__name__}: {exc}"))


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_broker_process(
        tmp_path / "data", "broker-crowded", ["--ingress-udp-endpoint", "none"]
    )
    try:
        yield process
    finally:
        assert process.stop() == 0


@pytest.mark.slow
def test_should_refuse_one_clients_session_flood_with_a_code_while_another_connects(
    broker: ServerProcess, workers: Workers
) -> None:
    aeron_dir = broker.ready["aeron_dir"]
    flood: list[ClientSession] = []
    with Aeron.connect(AeronContext(aeron_dir=aeron_dir)) as aeron:
        try:
            refused: BrokerBusyError | None = None
            refused_after_s = 0.0
            for _ in range(MAX_SESSIONS_TRIED):
                started = time.monotonic()
                try:
                    flood.append(ClientSession.connect(aeron, SessionConfig(client_id="flood")))
                except BrokerBusyError as exc:
                    refused, refused_after_s = exc, time.monotonic() - started
                    break
            assert refused is not None, f"{len(flood)} sessions and no refusal"
            print(f"session flood: {len(flood)} sessions, then refused in {refused_after_s:.2f} s")
            assert refused_after_s < REFUSED_WITHIN_S, "refused by a timeout, not an answer"
            assert "client=flood@aeron:ipc" in str(refused) or "response stream" in str(refused)
            workers.start(bystander, aeron_dir)
            report = workers.expect("connected", timeout_s=20)
            assert report[1] < 5.0
        finally:
            for session in flood:
                session.close()
        started = time.monotonic()
        with ClientSession.connect(aeron, SessionConfig(client_id="flood")) as again:
            assert again.is_open
        assert time.monotonic() - started < REFUSED_WITHIN_S
