"""Lazy pulls over UDP: a client on another host cannot leave the broker's doorbell unrung (its
broker's media driver rings the session agent as a request lands), so it sends a lazy pull as
a *quiet* frame (``client/_request_sender.py``); the broker's receiver does not ring the agent
for it, unless the agent's flag word asks for rings
(``transport/driver/udp/publication_image.py``). The agent reads it with the next send, as
over IPC."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from aeromq.broker.session import SessionAgent, SessionServerConfig
from aeromq.broker.session import _agent as agent_module
from aeromq.client._udp_liveness import UdpProbe
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.common import PullAnswer
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.doorbell import DOORBELL_TYPE_ID, Doorbell, DoorbellIdleStrategy
from aeromq.transport.driver import MediaDriver, with_doorbell

from .conftest import MS, driver_context, pull_request, send_request, wait_for

_HELD_MS = 5_000
_S = 1_000_000_000
_LANDED_S = 0.3
"""Long enough for a datagram on loopback to land and its ring, if any, to be made."""


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _rings(bell: Doorbell) -> int:
    return bell.prepare() >> 1


@contextlib.contextmanager
def _agent_and_udp_session(
    aeron: Aeron, send: object, pull: object, shm_dir: Path
) -> Iterator[tuple[SessionAgent, Doorbell, ClientSession]]:
    """A session agent on a UDP ingress that names its doorbell (its driver runs in this
    process), and a client session over UDP from a driver of its own."""
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
    idle = DoorbellIdleStrategy(bell, max_park_period_ns=5 * MS)
    idle.all_rung = agent.all_rung
    errors: list[BaseException] = []
    runner = AgentRunner(idle, errors.append, None, agent)
    runner.start()
    try:
        with (
            MediaDriver.launch(driver_context(shm_dir / "client")) as client_driver,
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
            assert not session.rings_broker  # no doorbell of the broker's to leave unrung
            # its liveness probes (a keepalive every 200 ms while a pull is held) ring the
            # agent as any request: none within a test's steps
            session._liveness.udp_probe = UdpProbe(probe_after_ns=60 * _S, silent_ns=120 * _S)
            wait_for(agent.all_rung, what="the UDP session counted as one that rings")
            yield agent, bell, session
    finally:
        runner.close()
    assert errors == []


def _lazy_pull(session: ClientSession, offset: int) -> Future[PullAnswer]:
    return session.request_async(
        pull_request(offset=offset, suspend_timeout_ms=_HELD_MS), lazy=True
    )


def _answer(future: Future[PullAnswer]) -> PullAnswer:
    return future.result(5.0)


@pytest.fixture
def unswept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's sweeps 60 s apart: it forgets the pulls it awaits at each sweep (every 100
    ms), and on a loaded machine a test's steps may take longer than that."""
    monkeypatch.setattr(agent_module, "_SWEEP_INTERVAL_NS", 60_000_000_000)


def test_should_not_wake_the_agent_for_a_lazy_pull_over_udp_yet_answer_it_with_the_next_send(
    aeron: Aeron, send: object, pull: object, shm_dir: Path
) -> None:
    with _agent_and_udp_session(aeron, send, pull, shm_dir) as (agent, bell, session):
        assert session.request(send_request(b"zero")).status.code == 0
        first = _answer(session.request_async(pull_request(offset=0)))
        assert first.response.next_begin_offset == 1  # caught up: the next pull may be lazy
        time.sleep(_LANDED_S)
        before = _rings(bell)
        lazy = _lazy_pull(session, 1)
        time.sleep(_LANDED_S)
        assert _rings(bell) == before  # it landed, and the agent was left asleep
        assert not lazy.done()
        assert session.request(send_request(b"one")).status.code == 0
        assert _answer(lazy).response.next_begin_offset == 2  # read in the send's cycle
        time.sleep(_LANDED_S)
        before = _rings(bell)
        eager = session.request_async(pull_request(offset=2, suspend_timeout_ms=_HELD_MS))
        time.sleep(_LANDED_S)
        assert _rings(bell) > before  # a pull that is not lazy rings as it lands
        assert session.request(send_request(b"two")).status.code == 0
        assert _answer(eager).response.next_begin_offset == 3
        assert agent.counters.pull_rings_wanted == 0


def test_should_ring_for_a_lazy_pull_over_udp_while_the_agent_asks_for_rings(
    aeron: Aeron, send: object, pull: object, shm_dir: Path, unswept: None
) -> None:
    with _agent_and_udp_session(aeron, send, pull, shm_dir) as (agent, bell, session):
        held = session.request_async(pull_request(offset=0, suspend_timeout_ms=_HELD_MS))
        time.sleep(_LANDED_S)  # held before the send comes
        assert session.request(send_request(b"zero")).status.code == 0  # releases the hold
        assert _answer(held).response.next_begin_offset == 1
        # stored before the consumer's next pull came back: that pull may be lazy, and wait
        assert session.request(send_request(b"one")).status.code == 0
        wait_for(lambda: bell.flag() == 1, what="the flag set")
        assert agent.counters.pull_rings_wanted == 1
        before = _rings(bell)
        lazy = _lazy_pull(session, 1)
        # the broker's receiver read the flag and rang: the agent answers from the store
        assert _answer(lazy).response.next_begin_offset == 2
        assert _rings(bell) > before
        wait_for(lambda: bell.flag() == 0, what="the flag cleared")
