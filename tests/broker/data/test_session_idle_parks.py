"""The session agent's idle parks, wired as the broker wires them: while every source of its
work rings, it sleeps until its next sweep (once a second with no session, every 100 ms with
some), and a client connecting (a new image on the ingress) wakes it, for its CONNECT rings
nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from aeromq.broker.config import DEFAULT_SESSION_IDLE_STRATEGY
from aeromq.broker.session import (
    SessionAgent,
    SessionServerConfig,
    new_image_handler,
    park_until_due,
    session_idle_strategy,
)
from aeromq.broker.session._idle import EMPTY_PARK_NS, RUNG_PARK_NS
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy
from aeromq.transport.driver import MediaDriver

from .conftest import MS, wait_for

LONG_PARK_NS = 20_000 * MS
MAX_CONNECT_S = 10.0
"""A CONNECT rings nothing: without the new image's ring it would wait for the agent's park
(20 s); woken, it takes milliseconds."""


@pytest.fixture
def wired(
    aeron: Aeron, send: object, pull: object
) -> Iterator[tuple[SessionAgent, DoorbellIdleStrategy]]:
    idle, bell = session_idle_strategy(aeron, DEFAULT_SESSION_IDLE_STRATEGY, "broker-a")
    assert isinstance(idle, DoorbellIdleStrategy)
    assert idle.yield_while_polling  # its windows' polls give the CPU away (broker.session._idle)
    agent = SessionAgent(
        aeron,
        [aeron.add_subscription("aeron:ipc", 1001, new_image_handler(idle))],
        send,  # type: ignore[arg-type]
        pull,  # type: ignore[arg-type]
        "broker-a",
        config=SessionServerConfig(session_timeout_ms=5_000, connect_timeout_ms=2_000),
        doorbell=bell,
    )
    park_until_due(idle, agent)
    errors: list[BaseException] = []
    runner = AgentRunner(idle, errors.append, None, agent)
    runner.start()
    yield agent, idle
    runner.close()
    assert errors == []


def test_should_sleep_until_the_next_sweep_and_be_woken_by_a_connecting_client(
    wired: tuple[SessionAgent, DoorbellIdleStrategy], media_driver: MediaDriver
) -> None:
    agent, idle = wired
    until_sweep = idle.rung_park_for
    assert until_sweep is not None
    assert until_sweep() == EMPTY_PARK_NS  # no session: the tombstones' sweep only
    idle.rung_park_for = lambda: LONG_PARK_NS
    time.sleep(1.5 * EMPTY_PARK_NS / 1e9)  # now in a park of LONG_PARK_NS
    context = AeronContext(aeron_dir=media_driver.aeron_dir, idle_sleep_duration_ns=1 * MS)
    started = time.monotonic()
    with (
        Aeron.connect(context) as client_aeron,
        ClientSession.connect(client_aeron, SessionConfig(request_timeout_ms=30_000)),
    ):
        assert time.monotonic() - started < MAX_CONNECT_S  # the new image woke the agent
        wait_for(lambda: agent.table.live_count == 1, what="the session")
        assert until_sweep() == RUNG_PARK_NS  # a session to sweep every 100 ms
