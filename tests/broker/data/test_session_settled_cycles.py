"""What the session agent's idle cycles skip (``broker/session/_agent.py``): a cycle that served
requests and read every source to the end lets its doorbell idle strategy park right after it,
with no empty cycle first, and one that may have left a request behind does not; an ingress
subscription without an image is not polled until a client comes to it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import pytest

from aeromq.broker.session import SessionAgent, SessionServerConfig
from aeromq.transport.client import Aeron, Subscription
from aeromq.transport.concurrent import BackoffIdleStrategy
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.doorbell import DOORBELL_TYPE_ID, Doorbell

from ._raw import RawClient
from .conftest import MS, agent_with_doorbell, send_request, wait_for

_REQUESTS = 20
_UNRUNG_PARK_NS = 10_000_000_000  # while all ring, parks end only at a ring in these tests


class _CountingAgent:
    """The agent, with its duty cycles counted (those that did work and those that did not)."""

    def __init__(self, agent: SessionAgent) -> None:
        self.agent = agent
        self.working = 0
        self.empty = 0

    @property
    def role_name(self) -> str:
        return self.agent.role_name

    def on_start(self) -> None:
        self.agent.on_start()

    def on_close(self) -> None:
        self.agent.on_close()

    def do_work(self) -> int:
        work = self.agent.do_work()
        if work:
            self.working += 1
        else:
            self.empty += 1
        return work


@dataclass
class _Running:
    agent: SessionAgent
    counted: _CountingAgent
    bell: Doorbell


def _run(aeron: Aeron, send: object, pull: object, fragment_limit: int) -> Iterator[_Running]:
    config = SessionServerConfig(
        session_timeout_ms=30_000, connect_timeout_ms=2_000, fragment_limit=fragment_limit
    )
    agent, bell, idle = agent_with_doorbell(aeron, send, pull, config)
    idle.rung_park_ns = _UNRUNG_PARK_NS
    idle.settling = agent
    counted = _CountingAgent(agent)
    errors: list[BaseException] = []
    runner = AgentRunner(idle, errors.append, None, counted)
    runner.start()
    yield _Running(agent, counted, bell)
    runner.close()
    assert errors == []


@pytest.fixture
def running(aeron: Aeron, send: object, pull: object) -> Iterator[_Running]:
    yield from _run(aeron, send, pull, fragment_limit=64)


@pytest.fixture
def running_one_at_a_time(aeron: Aeron, send: object, pull: object) -> Iterator[_Running]:
    yield from _run(aeron, send, pull, fragment_limit=1)


def _connected(aeron: Aeron, running: _Running) -> RawClient:
    """A raw client whose CONNECT names a doorbell (so its session counts as one that rings;
    the test rings the agent for it after each request), its connect answered."""
    raw = RawClient(aeron)
    own = aeron.add_counter(DOORBELL_TYPE_ID, label="doorbell: raw client")
    raw.request_connect(correlation_id=7, doorbell_counter_id=own.id)
    running.bell.ring()
    raw.session_id = raw.answer().session_id
    agent = running.agent
    wait_for(agent.all_rung, what="the session connected and counted as rung")
    return raw


def test_should_park_right_after_each_cycle_that_served_a_request(
    aeron: Aeron, running: _Running
) -> None:
    raw = _connected(aeron, running)
    try:
        counted = running.counted
        empty_before = counted.empty
        working_before = counted.working
        for correlation_id in range(100, 100 + _REQUESTS):
            raw.request("keepalive", correlation_id=correlation_id)
            running.bell.ring()
            assert raw.answer().correlation_id == correlation_id
        assert counted.working - working_before >= _REQUESTS
        # without settled cycles each request's cycle is followed by an empty one (20 here);
        # with them none is, but for a ring that found its request already read
        assert counted.empty - empty_before < _REQUESTS // 2
    finally:
        raw.close()


def test_should_not_settle_a_cycle_whose_poll_stopped_at_its_fragment_limit(
    aeron: Aeron, running_one_at_a_time: _Running
) -> None:
    running = running_one_at_a_time
    raw = _connected(aeron, running)
    try:
        ids = list(range(200, 205))
        for correlation_id in ids:  # five requests, one ring: one request a poll
            raw.request("keepalive", correlation_id=correlation_id)
        running.bell.ring()
        # a settled cycle would park after the first, the others unread until a ring that
        # never comes (parks of 10 s here); each cycle reads one and polls again
        assert [raw.answer().correlation_id for _ in ids] == ids
    finally:
        raw.close()


class _CountingSubscription:
    """An ingress subscription that counts the agent's polls of it (its handlers are the real
    subscription's: the Aeron client calls those)."""

    def __init__(self, real: Subscription) -> None:
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "polls", 0)

    def controlled_poll(self, handler: Any, limit: int) -> int:
        object.__setattr__(self, "polls", self.polls + 1)
        result: int = self._real.controlled_poll(handler, limit)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._real, name, value)


def test_should_not_poll_an_ingress_without_an_image_until_a_client_comes(
    aeron: Aeron, send: object, pull: object
) -> None:
    idle_one = aeron.add_subscription("aeron:ipc", 1002)
    counting = _CountingSubscription(idle_one)
    agent = SessionAgent(
        aeron,
        [aeron.add_subscription("aeron:ipc", 1001), cast(Subscription, counting)],
        send,  # type: ignore[arg-type]
        pull,  # type: ignore[arg-type]
        "broker-a",
        config=SessionServerConfig(session_timeout_ms=30_000, connect_timeout_ms=2_000),
    )
    errors: list[BaseException] = []
    runner = AgentRunner(BackoffIdleStrategy(max_park_period_ns=1 * MS), errors.append, None, agent)
    runner.start()
    first = RawClient(aeron)
    second: RawClient | None = None
    try:
        first.connect()
        wait_for(lambda: len(agent._polled) == 1, what="a sweep to drop the image-less ingress")
        polls = counting.polls
        for correlation_id in range(300, 310):  # many cycles, none of which polls it
            first.request("keepalive", correlation_id=correlation_id)
            assert first.answer().correlation_id == correlation_id
        assert counting.polls == polls
        second = RawClient(aeron, ingress=("aeron:ipc", 1002))  # its image: polled again
        assert second.connect().WhichOneof("body") == "connect"
        second.request("keepalive", correlation_id=400)
        assert second.answer().correlation_id == 400
        assert counting.polls > polls
        time.sleep(0.25)  # two sweeps on: kept, for its image
        second.request("keepalive", correlation_id=401)
        assert second.answer().correlation_id == 401
        assert len(agent._polled) == 2
    finally:
        first.close()
        if second is not None:
            second.close()
        runner.close()
    assert errors == []


def test_should_mark_the_cycles_that_took_a_send_for_the_long_spin_window(
    aeron: Aeron, running: _Running
) -> None:
    """After a cycle that took a send of one message the idle strategy polls through its long
    window (a one-at-a-time producer's next send comes back late); after any other (a batch, a
    keepalive), its spin window."""
    raw = _connected(aeron, running)
    try:
        agent = running.agent
        raw.request("send", send_request(b"one").SerializeToString(), correlation_id=200)
        running.bell.ring()
        assert raw.answer().correlation_id == 200
        assert agent.long_spin
        raw.request("keepalive", correlation_id=201)
        running.bell.ring()
        assert raw.answer().correlation_id == 201
        wait_for(lambda: not agent.long_spin, what="a keepalive's cycle, not marked")
        raw.request("send", send_request(b"one", b"two").SerializeToString(), correlation_id=202)
        running.bell.ring()
        assert raw.answer().correlation_id == 202
        assert not agent.long_spin  # a batch: a pipelining producer's, not one at a time
    finally:
        raw.close()
