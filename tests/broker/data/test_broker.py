"""The broker service: start and graceful stop, what it publishes, what recovery reports
(``aeromq broker`` as a process: ``tests/cli/test_broker.py``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from aeromq.broker.broker import Broker
from aeromq.broker.config import BrokerConfig
from aeromq.broker.store import FlushMode, RecoveryReport
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.proto import messages_pb2
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.driver import MediaDriver
from tests.producer.conftest import small_driver

from .conftest import send_request, wait_for

REPORT = RecoveryReport(
    clean_shutdown=False, scanned_from=100, end_offset=900, records_scanned=7,
    records_redispatched=3, truncated_at=None, truncated_check=None, zeroed_bytes=0,
    queue_entries_dropped=0, queue_gaps=0, duration_ms=1.0,
)  # fmt: skip


def _config(data_dir: Path, **overrides: object) -> BrokerConfig:
    values: dict[str, object] = {
        "data_dir": data_dir,
        "grpc_port": 0,
        "rocketmq_port": 0,
        "ingress_udp_endpoint": None,
        "commit_log_segment_bytes": 1 << 24,
        "index_enabled": False,
    }
    values.update(overrides)
    return BrokerConfig(**values)  # type: ignore[arg-type]


def test_should_describe_each_kind_of_recovery() -> None:
    fresh = dataclasses.replace(REPORT, end_offset=0, records_scanned=0)
    assert fresh.describe(FlushMode.ASYNC, 500) == "recovery: a new, empty store"
    clean = dataclasses.replace(REPORT, clean_shutdown=True)
    assert clean.describe(FlushMode.ASYNC, 500).startswith("recovery: clean shutdown")
    crashed = REPORT.describe(FlushMode.ASYNC, 500)
    assert "did not shut down cleanly" in crashed and "re-dispatched 3" in crashed
    assert "no torn record" in crashed and "at most the last 500 ms" in crashed
    torn = dataclasses.replace(REPORT, truncated_at=850, truncated_check="BAD_CRC", zeroed_bytes=50)
    text = torn.describe(FlushMode.SYNC, 500)
    assert "truncated a torn tail at 850 (BAD_CRC), zeroed 50 bytes" in text
    assert "SYNC flush: every acknowledged message is durable" in text


def test_should_serve_and_publish_its_endpoints_and_counters(tmp_path: Path) -> None:
    config = _config(tmp_path, ingress_udp_endpoint="127.0.0.1:0", auto_create_topic=True)
    with Broker(config, driver_context=small_driver()) as broker:
        assert broker.running and broker.grpc_address.startswith("127.0.0.1:")
        endpoints = broker.endpoints()
        assert endpoints.aeron_dir == broker.aeron_dir and endpoints.ipc_stream_id == 1001
        assert endpoints.udp_channel.startswith("aeron:udp?endpoint=127.0.0.1:")
        assert not endpoints.udp_channel.endswith(":0")
        with (
            Aeron.connect(AeronContext(aeron_dir=broker.aeron_dir)) as aeron,
            ClientSession.connect(aeron, SessionConfig()) as session,
        ):
            answer = session.request(send_request(b"x", topic="fresh"))
            assert answer.status.code == 0
        with GrpcClient(broker.grpc_address) as admin:
            route = admin.query_route("fresh")
            assert route.broker_datas[0].endpoints.aeron_dir == broker.aeron_dir
            counters = admin.broker_stats().counters
        assert counters["send.messages"] == 1 and counters["session.sessions_opened"] == 1
    assert not broker.running
    broker.shutdown()  # idempotent


@pytest.mark.parametrize(
    "strategy",
    [
        "sleep-ns:200000",
        "backoff:0,0,20000,1000000",
        "backoff:10,5,1000,1000000,25000000,1000000000",
    ],
)
def test_should_answer_sends_with_the_configured_session_idle_strategy(
    tmp_path: Path, strategy: str
) -> None:
    config = BrokerConfig.load(
        [
            "--data-dir", str(tmp_path), "--grpc-port", "0", "--ingress-udp-endpoint", "none",
            "--commit-log-segment-bytes", "16MiB", "--index-enabled", "false",
            "--auto-create-topic", "true",
        ],
        environ={"AEROMQ_BROKER_SESSION_IDLE_STRATEGY": strategy},
    )  # fmt: skip
    assert config.session_idle_strategy == strategy
    with (
        Broker(config, driver_context=small_driver()) as broker,
        Aeron.connect(AeronContext(aeron_dir=broker.aeron_dir)) as aeron,
        ClientSession.connect(aeron, SessionConfig()) as session,
    ):
        futures = [
            session.request_async(send_request(b"%d" % i, topic="idle"), 10_000) for i in range(20)
        ]
        answers = [future.result(10) for future in futures]
        assert [answer.status.code for answer in answers] == [0] * 20
        assert sorted(answer.base_queue_offset for answer in answers) == list(range(20))
        assert broker.stats()["send.messages"] == 20


def test_should_answer_held_pulls_and_flush_on_a_graceful_stop(tmp_path: Path) -> None:
    config = _config(tmp_path, auto_create_topic=True)
    broker = Broker(config, driver_context=small_driver()).start()
    aeron = Aeron.connect(AeronContext(aeron_dir=broker.aeron_dir))
    session = ClientSession.connect(aeron, SessionConfig())
    session.request(send_request(b"kept", topic="t"))
    held = session.request_async(
        messages_pb2.PullMessageRequest(
            consumer_group="g", topic="t", queue_id=1, suspend_timeout_ms=30_000
        ),
        40_000,
    )
    wait_for(lambda: broker.stats()["pull.held"] == 1, what="the pull to be held")
    broker.shutdown()
    assert held.result(10).pull_status == messages_pb2.NO_NEW_MSG
    session.close()
    aeron.close()
    with Broker(config, driver_context=small_driver()) as again:
        assert again.recovery_report is not None and again.recovery_report.clean_shutdown
        assert again.store is not None and again.store.get_max_offset("t", 0) == 1


def test_should_stop_what_started_when_a_start_fails(tmp_path: Path) -> None:
    first = Broker(_config(tmp_path), driver_context=small_driver()).start()
    try:
        with pytest.raises(Exception, match="lock"):  # the data directory is taken
            Broker(_config(tmp_path), driver_context=small_driver()).start()
    finally:
        first.shutdown()


def test_should_use_an_external_driver_and_leave_it_running(
    tmp_path: Path, media_driver: MediaDriver
) -> None:
    config = _config(tmp_path, aeron_dir=Path(media_driver.aeron_dir), auto_create_topic=True)
    with Broker(config) as broker:
        assert broker.driver is None and broker.aeron_dir == media_driver.aeron_dir
        with (
            Aeron.connect(AeronContext(aeron_dir=media_driver.aeron_dir)) as aeron,
            ClientSession.connect(aeron, SessionConfig()) as session,
        ):
            assert session.request(send_request(b"x", topic="ext")).status.code == 0
    assert not media_driver.is_closed
