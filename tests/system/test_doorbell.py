"""Doorbells between a broker process and its clients (``transport/concurrent/doorbell.py``).

The broker's session agent and the client's poller park for 2 s at a time here, so only a ring
answers within milliseconds: an IPC request wakes the agent, an answer wakes the client's poller
or its waiting caller, a send completed by the flusher (SYNC flush) or a held long poll answered
by the hold service wakes the agent. A UDP session is served too (its requests ring the agent
through the broker's driver: ``tests/broker/data/test_session_doorbells.py``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.proto import messages_pb2, session_pb2
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.driver import MediaDriver, MediaDriverContext
from tests.broker.data.conftest import pull_request, send_request

LONG_PARK = "doorbell:0,0,1000,2000000000"  # parks of 2 s: a ring, or a wait of ~1 s
ROUNDS = 8
QUIET_S = 0.25  # long enough for both sides to be asleep in a 2 s park
RUNG_MS = 100  # a median round trip under this was rung awake (unrung: ~1,000 ms)
TOPIC = "rung"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker_process(
        tmp_path_factory.mktemp("doorbell") / "data",
        extra_args=["--session-idle-strategy", LONG_PARK, "--flush-mode", "SYNC",
                    "--ingress-udp-endpoint", "127.0.0.1:0", "--auto-create-topic", "true",
                    "--index-enabled", "false", "--commit-log-segment-bytes", "16MiB",
                    "--log-level", "WARNING"],
    )  # fmt: skip
    try:
        yield process
    finally:
        assert process.stop() == 0


@pytest.fixture
def aeron(broker: ServerProcess) -> Iterator[Aeron]:
    with Aeron.connect(AeronContext(aeron_dir=broker.ready["aeron_dir"])) as client:
        yield client


def _ipc_session(aeron: Aeron, broker: ServerProcess) -> ClientSession:
    return ClientSession.connect(
        aeron,
        SessionConfig(
            ingress_channel=broker.ready["ipc_channel"],
            ingress_stream_id=int(broker.ready["ipc_stream_id"]),
            idle_strategy=LONG_PARK,
            connect_timeout_ms=10_000,
            request_timeout_ms=10_000,
        ),
    )


def _round_trips_ms(call: object, rounds: int = ROUNDS) -> list[float]:
    assert callable(call)
    latencies = []
    for _ in range(rounds):
        time.sleep(QUIET_S)
        started = time.monotonic_ns()
        call()
        latencies.append((time.monotonic_ns() - started) / 1e6)
    return latencies


def _assert_rung(latencies_ms: list[float]) -> None:
    # a loaded machine may stall a process now and then: the median decides, and no round
    # trip may take a whole park
    assert statistics.median(latencies_ms) < RUNG_MS, latencies_ms
    assert max(latencies_ms) < 1_000, latencies_ms


@pytest.mark.slow
def test_should_wake_a_sleeping_session_agent_with_an_ipc_request(
    broker: ServerProcess, aeron: Aeron
) -> None:
    with _ipc_session(aeron, broker) as session:
        # a keepalive is answered by the agent itself: only the client's ring wakes it
        latencies = _round_trips_ms(lambda: session.request(session_pb2.KeepAliveRequest()))
    _assert_rung(latencies)


@pytest.mark.slow
def test_should_wake_a_sleeping_client_poller_with_an_answer(
    broker: ServerProcess, aeron: Aeron
) -> None:
    with _ipc_session(aeron, broker) as session:
        session.request(send_request(b"warm up", topic=TOPIC))

        def send_and_wait() -> None:
            # the future is completed by the poller thread, asleep until the broker rings it;
            # the send is acknowledged by the broker's flusher thread (SYNC), which rings the agent
            answer = session.request_async(send_request(b"x", topic=TOPIC)).result(10)
            assert answer.status.code == 0

        latencies = _round_trips_ms(send_and_wait)
    _assert_rung(latencies)


@pytest.mark.slow
def test_should_wake_the_agent_when_a_held_pull_is_answered(
    broker: ServerProcess, aeron: Aeron
) -> None:
    with _ipc_session(aeron, broker) as puller, _ipc_session(aeron, broker) as sender:
        first = sender.request(send_request(b"first", topic=TOPIC))
        offset = first.base_queue_offset + first.message_count
        latencies = []
        for round_ in range(3):
            held = puller.request_async(
                pull_request(offset=offset, topic=TOPIC, suspend_timeout_ms=30_000), 40_000
            )
            time.sleep(QUIET_S)  # held by the hold service; every thread asleep
            assert not held.done()
            started = time.monotonic_ns()
            sent = sender.request(send_request(b"arrival %d" % round_, topic=TOPIC))
            answer = held.result(10)
            latencies.append((time.monotonic_ns() - started) / 1e6)
            assert answer.pull_status == messages_pb2.FOUND
            offset = sent.base_queue_offset + sent.message_count
    assert statistics.median(latencies) < RUNG_MS * 2, latencies  # a send, then a pull answer
    assert max(latencies) < 1_000, latencies


@pytest.mark.slow
def test_should_serve_a_udp_session(broker: ServerProcess, shm_dir: Path) -> None:
    context = MediaDriverContext(aeron_dir=str(shm_dir / "client"), term_buffer_sparse_file=True)
    with (
        MediaDriver.launch_embedded(context) as driver,
        Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron,
        ClientSession.connect(
            aeron,
            SessionConfig(
                ingress_channel=broker.ready["udp_channel"],
                ingress_stream_id=int(broker.ready["udp_stream_id"]),
                response_channel="aeron:udp?endpoint=127.0.0.1:0",
                connect_timeout_ms=10_000,
                request_timeout_ms=10_000,
            ),
        ) as session,
    ):
        # two drivers apart: the broker rings nothing, the client's own driver rings its doorbell
        assert session.rung_by_broker and not session.rings_broker
        for index in range(3):
            answer = session.request(send_request(b"over udp %d" % index, topic=TOPIC))
            assert answer.status.code == 0
        # no round trip waits a whole 2 s park
        latencies = _round_trips_ms(lambda: session.request(session_pb2.KeepAliveRequest()), 3)
    assert max(latencies) < 5_000, latencies
