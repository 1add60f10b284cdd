"""One client cannot hold the broker's shared memory: its sessions are limited in number and in
log bytes, a response channel's term is capped, and every refusal (a limit, or the driver's own
STORAGE_SPACE for the response stream) is answered with a code, at once, never with silence;
what a closed session held is given back at once (``broker/session/_client_limits.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.processor.pull import PullProcessor
from aeromq.broker.processor.pull_hold import PullHoldService
from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.session import SessionAgent, SessionServerConfig
from aeromq.broker.store import MessageStore, TopicConfig
from aeromq.client import BrokerBusyError, IllegalArgumentError
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy
from aeromq.transport.driver import MediaDriver
from tests.broker.data.conftest import TERM, driver_context, store_config, wait_for
from tests.system._tmpfs import small_tmpfs

KIB = 1 << 10
MIB = 1 << 20
SESSION_LOG_BYTES = 2 * 3 * TERM  # ingress and response logs of 64 KiB terms
FAST_S = 2.0
"""A refusal is an answer, not a timeout (the connect timeout is 5 s)."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    opened = MessageStore(store_config(tmp_path / "store"))
    opened.start()
    opened.topic_config.create_or_update(TopicConfig("orders", 1, 1))
    yield opened
    opened.shutdown()


def _serve(
    aeron: Aeron, store: MessageStore, **config: Any
) -> Iterator[tuple[SessionAgent, Aeron]]:
    hold = PullHoldService(store.get_max_offset, max_suspend_ms=1_000)
    hold.start()
    agent = SessionAgent(
        aeron,
        [aeron.add_subscription("aeron:ipc", 1001)],
        SendProcessor(store, "broker-a"),
        PullProcessor(store, hold, "broker-a"),
        "broker-a",
        config=SessionServerConfig(**config),
    )
    errors: list[BaseException] = []
    runner = AgentRunner(BackoffIdleStrategy(), errors.append, None, agent)
    runner.start()
    try:
        yield agent, aeron
    finally:
        runner.close()
        hold.shutdown()
    assert errors == []


@pytest.fixture
def serve(
    shm_dir: Path, store: MessageStore
) -> Iterator[Callable[..., tuple[SessionAgent, Aeron]]]:
    driver = MediaDriver.launch(driver_context(shm_dir / "aeron"))
    aeron = Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir))
    servers: list[Iterator[tuple[SessionAgent, Aeron]]] = []

    def start(**config: Any) -> tuple[SessionAgent, Aeron]:
        server = _serve(aeron, store, **config)
        servers.append(server)
        return next(server)

    yield start
    for server in servers:
        next(server, None)
    aeron.close()
    driver.close()


def _connect(aeron: Aeron, client_id: str, **config: Any) -> ClientSession:
    return ClientSession.connect(aeron, SessionConfig(client_id=client_id, **config))


def _refused_fast(aeron: Aeron, error: type[Exception], match: str, **config: Any) -> None:
    started = time.monotonic()
    with pytest.raises(error, match=match):
        _connect(aeron, **config)
    assert time.monotonic() - started < FAST_S, "refused by a timeout, not an answer"


def test_should_refuse_one_clients_sessions_past_its_limit_while_another_connects(
    serve: Callable[..., tuple[SessionAgent, Aeron]],
) -> None:
    agent, aeron = serve(max_sessions_per_client=3)
    flood = [_connect(aeron, "flood") for _ in range(3)]
    _refused_fast(aeron, BrokerBusyError, "too many sessions for this client", client_id="flood")
    with _connect(aeron, "other") as other:
        assert other.is_open
    assert agent.counters.client_limits_refused == 1
    for session in flood:
        session.close()
    with _connect(aeron, "flood") as again:  # what the closed sessions held is back at once
        assert again.is_open


def test_should_refuse_a_client_past_the_log_bytes_it_may_hold(
    serve: Callable[..., tuple[SessionAgent, Aeron]],
) -> None:
    agent, aeron = serve(max_log_bytes_per_client=2 * SESSION_LOG_BYTES)
    with _connect(aeron, "big"), _connect(aeron, "big"):
        assert agent.table.client_holds("big@aeron:ipc") == (2, 2 * SESSION_LOG_BYTES)
        _refused_fast(aeron, BrokerBusyError, "too much shared memory", client_id="big")
    # A close is one message the broker's agent reads on its next duty cycle, not an answered
    # request: the full run's loaded machine read the table before the second close (1, 393216).
    wait_for(
        lambda: agent.table.client_holds("big@aeron:ipc") == (0, 0),
        FAST_S,
        "the closed sessions' sessions and log bytes given back",
    )


def test_should_refuse_a_response_channel_asking_a_longer_term_than_the_broker_takes(
    serve: Callable[..., tuple[SessionAgent, Aeron]],
) -> None:
    agent, aeron = serve(max_response_term_length=256 * KIB)
    _refused_fast(
        aeron,
        IllegalArgumentError,
        "term_length=1048576 max_response_term_length=262144",
        client_id="greedy",
        response_channel="aeron:ipc?term-length=1m",
    )
    assert agent.table.live_count == 0


def test_should_answer_when_the_driver_refuses_the_response_stream(
    tmp_path: Path, store: MessageStore
) -> None:
    with small_tmpfs(tmp_path / "shm", 16) as shm:
        context = driver_context(shm / "aeron", term_buffer_sparse_file=True)
        with (
            MediaDriver.launch(context) as driver,
            Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron,
        ):
            server = _serve(aeron, store, max_response_term_length=64 * MIB)
            agent, _ = next(server)
            try:  # a 48 MiB response log on a 16 MiB file system: STORAGE_SPACE
                _refused_fast(
                    aeron,
                    BrokerBusyError,
                    "cannot open the session's response stream.*insufficient usable storage",
                    client_id="big",
                    response_channel="aeron:ipc?term-length=16m",
                )
                assert agent.counters.response_streams_refused == 1
                with _connect(aeron, "small") as small:
                    assert small.is_open
            finally:
                next(server, None)
