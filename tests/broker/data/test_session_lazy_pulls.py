"""Lazy pulls at the session agent (``broker/session/_agent.py``): a pull offered without a ring
is read (by the next send's cycle at the latest) and answered from the store; a send stored
before the next pull of a consumer it answered came back sets the agent doorbell's flag word,
and a lazy pull offered then rings after all; the flag is cleared once that pull is read; a message another thread
stores rings the agent, since a lazy pull may wait for it unread."""

from __future__ import annotations

import time
from concurrent.futures import Future

import pytest

from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.session import SessionAgent
from aeromq.broker.session import _agent as agent_module
from aeromq.broker.store import MessageStore
from aeromq.client.session import ClientSession
from aeromq.common import PullAnswer
from aeromq.transport.concurrent.doorbell import Doorbell
from aeromq.transport.driver import MediaDriver

from .conftest import Answers, pull_request, send_request, wait_for
from .test_session_doorbells import _ipc_session, agent  # noqa: F401 (a fixture)

_HELD_MS = 5_000
_NO_SWEEP_NS = 60_000_000_000


def _rings(bell: Doorbell) -> int:
    return bell.prepare() >> 1


def _lazy_pull(session: ClientSession, offset: int) -> Future[PullAnswer]:
    return session.request_async(
        pull_request(offset=offset, suspend_timeout_ms=_HELD_MS), lazy=True
    )


@pytest.fixture
def unswept(agent: SessionAgent, monkeypatch: pytest.MonkeyPatch) -> SessionAgent:  # noqa: F811
    """The agent, its sweeps 60 s apart: it forgets the pulls it awaits at each sweep (every 100
    ms), and on a loaded machine a test's steps may take longer than that (the sweep already
    due is let run first)."""
    monkeypatch.setattr(agent_module, "_SWEEP_INTERVAL_NS", _NO_SWEEP_NS)
    wait_for(
        lambda: agent._next_sweep_ns - time.monotonic_ns() > _NO_SWEEP_NS // 2,
        what="the sweep 60 s away",
    )
    return agent


def _answer(session: ClientSession, future: Future[PullAnswer]) -> PullAnswer:
    assert session.read_until(future.done, time.monotonic_ns() + 5_000_000_000)
    return future.result(0)


def test_should_answer_a_lazy_pull_offered_without_a_ring_once_a_message_comes(
    agent: SessionAgent,  # noqa: F811 (the fixture)
    media_driver: MediaDriver,
) -> None:
    bell = agent.doorbell
    assert bell is not None
    with _ipc_session(media_driver) as session:
        assert session.request(send_request(b"zero")).status.code == 0
        first = _answer(session, session.request_async(pull_request(offset=0)))
        assert first.response.next_begin_offset == 1  # caught up: the next pull may be lazy
        before = _rings(bell)
        lazy = _lazy_pull(session, 1)
        assert _rings(bell) == before  # offered, not rung
        assert session.request(send_request(b"one")).status.code == 0
        answer = _answer(session, lazy)
        assert answer.response.next_begin_offset == 2
        assert agent.counters.pull_rings_wanted == 0


def test_should_ask_lazy_pulls_to_ring_while_a_send_beat_them(
    unswept: SessionAgent, media_driver: MediaDriver
) -> None:
    bell = unswept.doorbell
    assert bell is not None
    with _ipc_session(media_driver) as session:
        held = session.request_async(pull_request(offset=0, suspend_timeout_ms=_HELD_MS))
        assert session.request(send_request(b"zero")).status.code == 0  # releases the hold
        assert _answer(session, held).response.next_begin_offset == 1
        assert bell.flag() == 0
        # stored before the consumer's next pull came back: that pull may be lazy, and wait
        assert session.request(send_request(b"one")).status.code == 0
        wait_for(lambda: bell.flag() == 1, what="the flag set")
        assert unswept.counters.pull_rings_wanted == 1
        before = _rings(bell)
        lazy = _lazy_pull(session, 1)
        assert _rings(bell) > before  # rung after all
        assert _answer(session, lazy).response.next_begin_offset == 2
        wait_for(lambda: bell.flag() == 0, what="the flag cleared")


def test_should_ring_the_agent_for_a_message_another_thread_stored(
    agent: SessionAgent,  # noqa: F811 (the fixture)
    media_driver: MediaDriver,
    store: MessageStore,
    send: SendProcessor,
) -> None:
    bell = agent.doorbell
    assert bell is not None
    store.add_arrival_listener(agent.on_store_arrival)  # as the broker wires it
    with _ipc_session(media_driver):  # a live session: a lazy pull may wait unread
        before = _rings(bell)
        send.process(send_request(b"from the timer, say"), Answers())  # on this thread
        assert _rings(bell) > before


def test_should_not_ask_lazy_pulls_to_ring_when_a_next_pull_came_in_its_answers_cycle(
    unswept: SessionAgent, media_driver: MediaDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a long cycle (a ring that woke a sleeper can take the agent 150 us on a VM) may read a
    # consumer's next pull after that cycle answered the pull before it at once: that next
    # pull was read, so the send of the cycle after must not set the flag (it did: every lazy
    # pull then rang, until the sweep)
    bell = unswept.doorbell
    assert bell is not None
    with _ipc_session(media_driver) as session:
        nexts: list[Future[PullAnswer]] = []
        answer_at_once = unswept._answer_at_once

        def then_the_next_pull(*args: object) -> bool:
            done = answer_at_once(*args)  # type: ignore[arg-type]
            if done and not nexts:  # offered on the agent's thread: read in this very poll
                nexts.append(_lazy_pull(session, 1))
            return done

        monkeypatch.setattr(unswept, "_answer_at_once", then_the_next_pull)
        held = session.request_async(pull_request(offset=0, suspend_timeout_ms=_HELD_MS))
        wait_for(lambda: unswept._pull.held == 1, what="the first pull held")
        assert session.request(send_request(b"zero")).status.code == 0  # releases it at once
        assert _answer(session, held).response.next_begin_offset == 1
        assert len(nexts) == 1
        assert session.request(send_request(b"one")).status.code == 0  # answers the next pull
        assert _answer(session, nexts[0]).response.next_begin_offset == 2
        assert unswept.counters.pull_rings_wanted == 0
        assert bell.flag() == 0
