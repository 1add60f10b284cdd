"""Sessions are bound to the client that opened them: random ids, every request checked
against the ingress image of the session's CONNECT, answers only to the CONNECT's source."""

from __future__ import annotations

import itertools
import multiprocessing
from collections.abc import Iterator

import pytest

from aeromq.broker.session import SessionAgent, SessionServerConfig
from aeromq.broker.session._route_check import route_refusal
from aeromq.broker.session._table import SessionTable
from aeromq.client import ResponseCode
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.proto import session_pb2
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy
from aeromq.transport.driver import MediaDriver

from ._hijacker import hijack
from ._raw import RawClient
from .conftest import MS, send_request, wait_for

_SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def agent(aeron: Aeron, send: object, pull: object) -> Iterator[SessionAgent]:
    subscription = aeron.add_subscription("aeron:ipc", 1001)
    agent = SessionAgent(
        aeron,
        [subscription],
        send,  # type: ignore[arg-type]
        pull,  # type: ignore[arg-type]
        "broker-a",
        config=SessionServerConfig(session_timeout_ms=5_000, connect_timeout_ms=2_000),
    )
    errors: list[BaseException] = []
    runner = AgentRunner(BackoffIdleStrategy(), errors.append, None, agent)
    runner.start()
    yield agent
    runner.close()
    assert errors == []


@pytest.fixture
def victim(agent: SessionAgent, media_driver: MediaDriver) -> Iterator[ClientSession]:
    context = AeronContext(aeron_dir=media_driver.aeron_dir, idle_sleep_duration_ns=1 * MS)
    with (
        Aeron.connect(context) as client_aeron,
        ClientSession.connect(client_aeron, SessionConfig(request_timeout_ms=5_000)) as session,
    ):
        yield session


def test_should_refuse_a_neighbour_process_that_uses_or_closes_another_clients_session(
    agent: SessionAgent, victim: ClientSession, media_driver: MediaDriver
) -> None:
    results = _SPAWN.Queue()
    process = _SPAWN.Process(
        target=hijack, args=(str(media_driver.aeron_dir), victim.session_id, results), daemon=True
    )
    process.start()
    try:
        kind, own_session_id = results.get(timeout=60)
        assert kind == "own" and own_session_id not in (0, victim.session_id)
        kind, code, message, answered_session = results.get(timeout=30)
        assert answered_session == victim.session_id  # echoed, answered on its own session
        assert (kind, code) == ("answer", ResponseCode.NO_PERMISSION)
        assert f"session_id={victim.session_id}" in message
        assert results.get(timeout=30) == ("closed",)
        process.join(timeout=30)
        assert process.exitcode == 0
    finally:
        if process.is_alive():
            process.kill()
    wait_for(lambda: agent.counters.foreign_session == 2, what="both requests refused")
    assert agent.table.get(victim.session_id) is not None  # the victim's session lives on
    sent = victim.request(send_request(b"still mine"))
    assert sent.status.code == ResponseCode.SUCCESS
    assert victim.is_open


def test_should_draw_unguessable_session_ids() -> None:
    table = SessionTable(SessionServerConfig())
    ids = [table.new_id() for _ in range(1_000)]
    assert len(set(ids)) == len(ids)
    assert all(0 < i < 1 << 63 for i in ids)
    assert sum(1 for a, b in itertools.pairwise(ids) if abs(a - b) < 1 << 32) == 0


def test_should_not_answer_a_connect_that_points_its_answers_elsewhere(
    agent: SessionAgent, aeron: Aeron
) -> None:
    raw = RawClient(aeron)
    try:
        connect = session_pb2.ConnectRequest(
            response_channel="aeron:udp?endpoint=127.0.0.1:9",
            response_stream_id=raw.response_stream_id,
            client_id="elsewhere",
            version=1,
        )
        raw.request("connect", connect.SerializeToString(), correlation_id=3, session_id=0)
        wait_for(lambda: agent.counters.routes_refused == 1, what="the connect refused")
        assert agent.table.live_count == 0
        assert raw.no_answer_within(0.3)
    finally:
        raw.close()


@pytest.mark.parametrize(
    ("channel", "source", "allowed"),
    [
        ("aeron:ipc", "aeron:ipc", True),
        ("aeron:udp?endpoint=127.0.0.1:4000", "aeron:ipc", False),
        ("aeron:udp?endpoint=127.0.0.1:4000", "127.0.0.1:51000", True),
        ("aeron:udp?endpoint=10.1.2.3:4000", "127.0.0.1:51000", False),
        ("aeron:udp?endpoint=127.0.0.1:4000|control=10.1.2.3:9", "127.0.0.1:51000", False),
        ("aeron:udp?endpoint=[::1]:4000", "[::1]:51000", True),
        ("aeron:ipc", "127.0.0.1:51000", False),
        ("not a channel", "aeron:ipc", False),
    ],
)
def test_should_allow_answers_only_back_to_the_connects_source(
    channel: str, source: str, allowed: bool
) -> None:
    assert (route_refusal(channel, source) is None) is allowed
