"""The session agent's doorbells: the one it sleeps on (named to IPC clients that name theirs),
the clients' it rings after each answer, and when it may sleep until rung."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from aeromq.broker.session import SessionAgent, SessionServerConfig
from aeromq.client.session import (
    DEFAULT_SESSION_IDLE_STRATEGY,
    IDLE_STRATEGY_ENV,
    ClientSession,
    SessionConfig,
)
from aeromq.common import SESSION_PROTOCOL_VERSION, IllegalArgumentError, PullAnswer
from aeromq.proto import session_pb2
from aeromq.transport.client import Aeron, AeronContext, Counter
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.doorbell import DOORBELL_TYPE_ID, Doorbell
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy
from aeromq.transport.driver import MediaDriver, with_doorbell

from ._raw import RawClient
from .conftest import (
    MS,
    agent_with_doorbell,
    driver_context,
    pull_request,
    send_request,
    wait_for,
)


@pytest.fixture
def agent(aeron: Aeron, send: object, pull: object) -> Iterator[SessionAgent]:
    agent, _, idle = agent_with_doorbell(
        aeron, send, pull, SessionServerConfig(session_timeout_ms=5_000, connect_timeout_ms=2_000)
    )
    errors: list[BaseException] = []
    runner = AgentRunner(idle, errors.append, None, agent)
    runner.start()
    yield agent
    runner.close()
    assert errors == []


@contextlib.contextmanager
def _ipc_session(media_driver: MediaDriver) -> Iterator[ClientSession]:
    """A client session over IPC on the agent's driver, from an Aeron client of its own."""
    context = AeronContext(aeron_dir=media_driver.aeron_dir, idle_sleep_duration_ns=1 * MS)
    with (
        Aeron.connect(context) as client_aeron,
        ClientSession.connect(client_aeron, SessionConfig(request_timeout_ms=5_000)) as session,
    ):
        yield session


def _connect(raw: RawClient, doorbell_counter_id: int | None) -> session_pb2.ConnectResponse:
    connect = session_pb2.ConnectRequest(
        response_channel="aeron:ipc",
        response_stream_id=raw.response_stream_id,
        client_id="raw",
        version=SESSION_PROTOCOL_VERSION,
    )
    if doorbell_counter_id is not None:
        connect.doorbell_counter_id = doorbell_counter_id
    raw.request("connect", connect.SerializeToString(), correlation_id=7, session_id=0)
    answer = raw.answer()
    raw.session_id = answer.session_id
    return answer.connect


def _word(aeron: Aeron, counter: Counter) -> int:
    return aeron.counters_reader.values_buffer.get_int32_volatile(
        Doorbell.for_counter(aeron.counters_reader, counter.id).offset
    )


def test_should_ring_an_ipc_clients_doorbell_after_each_answer(
    agent: SessionAgent, aeron: Aeron
) -> None:
    counter = aeron.add_counter(DOORBELL_TYPE_ID, label="doorbell: raw client")
    raw = RawClient(aeron)
    try:
        connected = _connect(raw, counter.id)
        assert connected.rings_client_doorbell
        assert agent.doorbell is not None
        assert connected.doorbell_counter_id == agent.doorbell.counter_id
        assert _word(aeron, counter) == 2  # the CONNECT answer
        for expected in (4, 6):
            raw.request("keepalive", correlation_id=expected)
            assert raw.answer().WhichOneof("body") == "keepalive"
            assert _word(aeron, counter) == expected
        assert agent.all_rung()
    finally:
        raw.close()


def test_should_not_ring_a_counter_that_is_not_a_doorbell(
    agent: SessionAgent, aeron: Aeron
) -> None:
    other = aeron.add_counter(7, label="someone else's counter")
    raw = RawClient(aeron)
    try:
        connected = _connect(raw, other.id)
        assert not connected.rings_client_doorbell
        assert not connected.HasField("doorbell_counter_id")  # it would not ring ours
        raw.request("keepalive", correlation_id=2)
        raw.answer()
        assert other.get() == 0
        assert agent.counters.doorbells_refused == 1
        assert not agent.all_rung()  # its requests ring nothing: the agent must poll
    finally:
        raw.close()


def test_should_poll_while_a_session_rings_nothing_and_sleep_once_all_ring(
    agent: SessionAgent, aeron: Aeron, media_driver: MediaDriver
) -> None:
    raw = RawClient(aeron)
    _connect(raw, None)
    wait_for(lambda: not agent._connecting and not agent._backlogged, what="the connect answered")
    assert not agent.all_rung()
    raw.request("close", correlation_id=3)
    wait_for(agent.all_rung, what="the silent session closed")
    raw.close()
    with _ipc_session(media_driver) as session:
        assert session.request(send_request(b"rung")).status.code == 0
        wait_for(agent.all_rung, what="every session to ring")


def test_should_stop_ringing_a_doorbell_whose_counter_was_freed(
    agent: SessionAgent, aeron: Aeron
) -> None:
    counter = aeron.add_counter(DOORBELL_TYPE_ID, label="doorbell: raw client")
    raw = RawClient(aeron)
    try:
        _connect(raw, counter.id)
        session = agent.table.get(raw.session_id)
        assert session is not None and session.doorbell is not None
        counter.close()
        wait_for(lambda: session.doorbell is None, what="the freed doorbell dropped")
        assert not agent.all_rung()
        raw.request("keepalive", correlation_id=2)
        assert raw.answer().WhichOneof("body") == "keepalive"  # still served
    finally:
        raw.close()


def test_should_name_doorbells_both_ways_over_ipc(
    agent: SessionAgent, media_driver: MediaDriver
) -> None:
    with _ipc_session(media_driver) as session:
        assert session.rung_by_broker and session.rings_broker
        assert agent.doorbell is not None
        before = agent.doorbell.prepare() & ~1
        assert session.request(send_request(b"rung")).status.code == 0
        assert (agent.doorbell.prepare() & ~1) - before >= 2  # the request rang the agent


def test_should_ring_the_agent_for_a_pull_sent_while_reading_once_the_poll_returns(
    agent: SessionAgent, media_driver: MediaDriver
) -> None:
    with _ipc_session(media_driver) as session:
        assert session.rings_broker and agent.doorbell is not None
        assert session.request(send_request(b"one")).status.code == 0
        bell = agent.doorbell
        next_pulls: list[Future[PullAnswer]] = []
        words: list[int] = []

        def next_pull(_: Future[PullAnswer]) -> None:
            # the pull task's way: the next pull sent from the answer's callback, on the reading
            # thread
            words.append(bell.prepare() & ~1)
            next_pulls.append(session.request_async(pull_request()))
            words.append(bell.prepare() & ~1)

        first = session.request_async(pull_request())
        first.add_done_callback(next_pull)
        assert session.read_until(first.done, time.monotonic_ns() + 5_000_000_000)
        words.append(bell.prepare() & ~1)
        (second,) = next_pulls
        assert session.read_until(second.done, time.monotonic_ns() + 5_000_000_000)
        assert isinstance(second.result(0), PullAnswer)
    before, in_callback, returned = words
    assert in_callback == before  # held while the poll's callbacks ran
    assert returned - in_callback >= 2  # rung as the poll returned, not left for a later read


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_should_count_a_udp_session_as_rung_when_its_driver_rings_the_agent(
    aeron: Aeron, send: object, pull: object, shm_dir: Path
) -> None:
    counter = aeron.add_counter(DOORBELL_TYPE_ID, label="doorbell: udp agent")
    bell = Doorbell.for_counter(aeron.counters_reader, counter.id)
    ingress = f"aeron:udp?endpoint=127.0.0.1:{_free_udp_port()}"
    agent = SessionAgent(
        aeron,
        [aeron.add_subscription(with_doorbell(ingress, counter.id), 1002)],
        send,  # type: ignore[arg-type]
        pull,  # type: ignore[arg-type]
        "broker-a",
        config=SessionServerConfig(session_timeout_ms=5_000, connect_timeout_ms=2_000),
        doorbell=bell,
    )
    assert agent.network_bell is not None  # its driver runs in this process
    idle = DoorbellIdleStrategy(bell, max_park_period_ns=5 * MS)
    idle.all_rung = agent.all_rung
    errors: list[BaseException] = []
    runner = AgentRunner(idle, errors.append, None, agent)
    runner.start()
    client_context = driver_context(shm_dir / "client")
    try:
        with (
            MediaDriver.launch(client_context) as client_driver,
            Aeron.connect(AeronContext(aeron_dir=client_driver.aeron_dir)) as client_aeron,
            ClientSession.connect(
                client_aeron,
                SessionConfig(
                    ingress_channel=ingress,
                    ingress_stream_id=1002,
                    response_channel="aeron:udp?endpoint=127.0.0.1:0",
                    request_timeout_ms=5_000,
                ),
            ) as session,
        ):
            before = bell.prepare() & ~1
            assert session.request(send_request(b"over udp")).status.code == 0
            assert (bell.prepare() & ~1) - before >= 2  # the request landing rang the agent
            wait_for(agent.all_rung, what="the UDP session counted as one that rings")
    finally:
        runner.close()
    assert errors == []


def test_should_refuse_a_session_idle_strategy_it_cannot_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(IllegalArgumentError, match="idle_strategy"):
        SessionConfig(idle_strategy="doorbell:1")
    monkeypatch.setenv(IDLE_STRATEGY_ENV, "backoff:10,5,1000,1000000")
    assert SessionConfig().idle_strategy == "backoff:10,5,1000,1000000"
    monkeypatch.delenv(IDLE_STRATEGY_ENV)
    assert SessionConfig().idle_strategy == DEFAULT_SESSION_IDLE_STRATEGY
