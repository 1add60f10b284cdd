"""A stored send's answer completed on another thread than the session agent's
(``broker/session/_answers.py``): it goes out from that thread when the agent's write lock is free
and nothing is queued before it, and is queued for the agent's next cycle otherwise, in the order
the answers completed."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from aeromq.broker.processor.pull import PullProcessor
from aeromq.broker.processor.pull_hold import PullHoldService
from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.session import SessionAgent, SessionServerConfig
from aeromq.broker.session._session import ServerSession
from aeromq.broker.store import MessageStore
from aeromq.common import RESPONSE_FIELD_NUMBERS, StoredSendAnswer
from aeromq.transport.client import Aeron
from aeromq.transport.concurrent.doorbell import Doorbell

from ._raw import RawClient
from .conftest import (
    TOPIC,
    agent_with_doorbell,
    hold_service,
    pull_request,
    record_batch,
    send_request,
    wait_for,
)

_SEND = RESPONSE_FIELD_NUMBERS["send"]


@pytest.fixture
def sync_hold(sync_store: MessageStore) -> Iterator[PullHoldService]:
    with hold_service(sync_store) as hold:
        yield hold


@pytest.fixture
def sync_agent(
    aeron: Aeron, sync_store: MessageStore, sync_hold: PullHoldService
) -> tuple[SessionAgent, Doorbell]:
    """A session agent whose sends are stored under SYNC flush: the store's flusher thread
    completes them. Its duty cycles run on the test's thread (``on_start`` called)."""
    agent, bell, _ = agent_with_doorbell(
        aeron,
        SendProcessor(sync_store, "broker-a"),
        PullProcessor(sync_store, sync_hold, "broker-a"),
        SessionServerConfig(session_timeout_ms=30_000, connect_timeout_ms=2_000),
    )
    agent.on_start()
    return agent, bell


def _connected(
    aeron: Aeron, agent: SessionAgent, bell: Doorbell
) -> tuple[RawClient, ServerSession]:
    raw = RawClient(aeron)
    raw.request_connect()
    bell.ring()
    wait_for(lambda: agent.do_work() >= 0 and raw.poll_answers() > 0, what="the connect answer")
    raw.session_id = raw.answer().session_id
    session = agent.table.get(raw.session_id)
    assert session is not None
    return raw, session


def _complete_elsewhere(complete: Callable[[], object]) -> None:
    """Run ``complete()`` on a thread of its own, as the flusher or the replication would."""
    thread = threading.Thread(target=complete)
    thread.start()
    thread.join(5.0)
    assert not thread.is_alive()


def _answer(offset: int) -> StoredSendAnswer:
    return StoredSendAnswer(0, offset, 1, 100 * offset, "127.0.0.1:10911", "broker-a")


def test_should_answer_a_send_stored_on_another_thread_without_another_agent_cycle(
    aeron: Aeron, sync_agent: tuple[SessionAgent, Doorbell]
) -> None:
    agent, bell = sync_agent
    producer, _ = _connected(aeron, agent, bell)
    producer.request("send", send_request(b"one").SerializeToString(), correlation_id=3)
    wait_for(lambda: agent.do_work() >= 0 and agent._send.requests == 1, what="the send read")
    # no cycle from here on: the flusher's thread answers once the batch is fsynced
    answer = producer.answer()
    assert answer.correlation_id == 3
    assert answer.send.base_queue_offset == 0
    assert agent.idle  # nothing was queued for the agent


def test_should_queue_an_answer_completed_while_the_agent_is_in_a_cycle(
    aeron: Aeron, sync_agent: tuple[SessionAgent, Doorbell]
) -> None:
    agent, bell = sync_agent
    producer, session = _connected(aeron, agent, bell)
    with agent._write_lock:  # as the agent holds it through each cycle
        _complete_elsewhere(lambda: agent._complete(session, 5, _SEND, _answer(7)))
    assert not agent.idle
    assert producer.no_answer_within(0.05)
    assert agent.do_work() == 1
    answer = producer.answer()
    assert (answer.correlation_id, answer.send.base_queue_offset) == (5, 7)


def test_should_keep_a_later_answer_behind_one_queued_before_it(
    aeron: Aeron, sync_agent: tuple[SessionAgent, Doorbell]
) -> None:
    agent, bell = sync_agent
    producer, session = _connected(aeron, agent, bell)
    with agent._write_lock:
        _complete_elsewhere(lambda: agent._complete(session, 5, _SEND, _answer(7)))
    # the lock is free now, but an answer is queued: this one must not go before it
    _complete_elsewhere(lambda: agent._complete(session, 6, _SEND, _answer(8)))
    assert producer.no_answer_within(0.05)
    assert agent.do_work() == 2
    assert [producer.answer().correlation_id for _ in range(2)] == [5, 6]


def test_should_queue_an_answer_to_a_closed_session_for_the_agent_to_drop(
    aeron: Aeron, sync_agent: tuple[SessionAgent, Doorbell]
) -> None:
    agent, bell = sync_agent
    producer, session = _connected(aeron, agent, bell)
    session.close("closed by the test")
    _complete_elsewhere(lambda: agent._complete(session, 5, _SEND, _answer(7)))
    assert not agent.idle
    agent.do_work()
    assert agent.idle
    assert producer.no_answer_within(0.05)


def test_should_answer_a_pull_released_on_another_thread_and_await_its_next_pull(
    aeron: Aeron,
    sync_agent: tuple[SessionAgent, Doorbell],
    sync_store: MessageStore,
    sync_hold: PullHoldService,
) -> None:
    agent, bell = sync_agent
    consumer, session = _connected(aeron, agent, bell)
    pull = pull_request(offset=0, suspend_timeout_ms=5_000).SerializeToString()
    consumer.request("pull", pull, correlation_id=4)
    wait_for(lambda: agent.do_work() >= 0 and sync_hold.held_count == 1, what="the pull held")
    # a message stored by another thread releases the held pull there: answered from there
    _complete_elsewhere(lambda: sync_store.put_batch(record_batch(b"one"), TOPIC, 0))
    answer = consumer.answer()
    assert answer.correlation_id == 4
    assert answer.pull.next_begin_offset == 1
    assert agent.idle
    assert (session.pulls_awaited, agent._pulls_awaited) == (1, 1)  # its next pull is awaited
