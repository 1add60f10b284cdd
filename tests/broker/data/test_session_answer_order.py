"""The order of a message's two answers at the session agent (``broker/session/_answers.py``):
in a cycle that takes a send, a pull's answer (a held pull the send's arrival released, or a
pull read after the send) is offered at once and its consumer's doorbell rung at once, before
the send's answer is offered and its producer rung at the cycle's end; a client that gets
another answer later in the same cycle is rung again after it, so no wake-up is lost. When
sends come fast, the send goes first, its answer offered from its own completion, before the
agent takes the next request; one its response stream refuses then is queued, not lost.

Each session's response publication and doorbell are wrapped in recorders that log, in one list,
every offer and every ring in the order the agent made them."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from aeromq.broker.processor.pull_hold import PullHoldService
from aeromq.broker.processor.send import SendDone, SendProcessor
from aeromq.broker.session import SessionAgent, SessionServerConfig
from aeromq.broker.session._dispatch import POLL_SHARE_NS, SEND_FIRST_WITHIN_NS
from aeromq.transport.client import BACK_PRESSURED, Aeron
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.doorbell import DOORBELL_TYPE_ID, Doorbell
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy

from ._raw import RawClient
from .conftest import agent_with_doorbell, pull_request, send_request, wait_for

_HELD_MS = 5_000
Log = list[tuple[str, str]]


class _Recorded:
    """A stand-in for a session's publication or doorbell: logs ``(what, client)`` for each
    offer or ring, then does it; every other attribute is the wrapped object's."""

    def __init__(self, wrapped: object, client: str, log: Log) -> None:
        self._wrapped = wrapped
        self._client = client
        self._log = log

    def __getattr__(self, name: str) -> object:
        return getattr(self._wrapped, name)

    def offer(self, *args: object) -> int:
        result: int = self._wrapped.offer(*args)  # type: ignore[attr-defined]
        if result > 0:
            self._log.append(("offer", self._client))
        return result

    def offer_vectored(self, *args: object) -> int:
        result: int = self._wrapped.offer_vectored(*args)  # type: ignore[attr-defined]
        if result > 0:
            self._log.append(("offer", self._client))
        return result

    def ring(self) -> bool:
        self._log.append(("ring", self._client))
        woke: bool = self._wrapped.ring()  # type: ignore[attr-defined]
        return woke


def _connect(aeron: Aeron, bell: Doorbell, step: Callable[[], object]) -> RawClient:
    """A raw client whose CONNECT names a doorbell of its own, its connect answered
    (``step()``: one duty cycle of the agent, or nothing when the agent runs on its thread)."""
    raw = RawClient(aeron)
    own = aeron.add_counter(DOORBELL_TYPE_ID, label="doorbell: raw client")
    raw.request_connect(correlation_id=7, doorbell_counter_id=own.id)
    bell.ring()
    _until(step, lambda: raw.poll_answers() > 0, "the connect answered")
    raw.session_id = raw.answer().session_id
    return raw


def _until(step: Callable[[], object], done: Callable[[], bool], what: str) -> None:
    """``step()`` until ``done()``, for at most 5 s."""
    deadline = time.monotonic() + 5.0
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after 5 s waiting for {what}")
        step()
        time.sleep(0.0005)


def _record(agent: SessionAgent, raw: RawClient, client: str, log: Log) -> None:
    session = agent.table.get(raw.session_id)
    assert session is not None and session.publication is not None
    assert session.doorbell is not None
    session.publication = _Recorded(session.publication, client, log)  # type: ignore[assignment]
    session.doorbell = _Recorded(session.doorbell, client, log)  # type: ignore[assignment]


def _recorded_pair(
    aeron: Aeron, agent: SessionAgent, bell: Doorbell, step: Callable[[], object], log: Log
) -> tuple[RawClient, RawClient]:
    """A consumer and a producer connected (see :func:`_connect`), their answers and rings
    recorded into ``log``."""
    consumer = _connect(aeron, bell, step)
    producer = _connect(aeron, bell, step)
    _record(agent, consumer, "consumer", log)
    _record(agent, producer, "producer", log)
    return consumer, producer


def _pull_to_hold(consumer: RawClient) -> None:
    """The consumer's pull of an empty queue, asking to be held (correlation id 2)."""
    consumer.request(
        "pull",
        pull_request(offset=0, suspend_timeout_ms=_HELD_MS).SerializeToString(),
        correlation_id=2,
    )


def _answered_first(log: Log, first: str, then: str) -> None:
    """``first``'s answer offered and its doorbell rung, both before ``then``'s answer was
    offered; each client rung after its last answer (no wake-up lost)."""
    assert log.index(("offer", first)) < log.index(("ring", first)), log
    assert log.index(("ring", first)) < log.index(("offer", then)), log
    for client in (first, then):
        last_offer = max(i for i, event in enumerate(log) if event == ("offer", client))
        last_ring = max(i for i, event in enumerate(log) if event == ("ring", client))
        assert last_offer < last_ring, log


def _consumer_first(log: Log) -> None:
    """The consumer answered and rung before the producer's answer (:func:`_answered_first`)."""
    _answered_first(log, "consumer", "producer")


class _FastSends:
    """A session agent on a clock of the test's (``now[0]``, ns), its duty cycles run on the
    test's thread, a consumer and a producer connected and recorded into ``log``, and the
    producer's first send answered: its next send within ``SEND_FIRST_WITHIN_NS`` goes first."""

    def __init__(self, aeron: Aeron, send: object, pull: object) -> None:
        self.now = [1_000_000_000_000]
        config = SessionServerConfig(session_timeout_ms=30_000, connect_timeout_ms=2_000)
        self.agent, bell, _ = agent_with_doorbell(aeron, send, pull, config, lambda: self.now[0])
        self.agent.on_start()
        self.log: Log = []
        self.consumer, self.producer = _recorded_pair(
            aeron, self.agent, bell, self.agent.do_work, self.log
        )
        self.producer.request("send", send_request(b"one").SerializeToString(), correlation_id=3)
        _until(
            self.agent.do_work, lambda: self.producer.poll_answers() > 0, "the first send answered"
        )


@pytest.fixture
def agent(
    aeron: Aeron, send: object, pull: object
) -> tuple[SessionAgent, Doorbell, DoorbellIdleStrategy]:
    """The session agent, its doorbell and idle strategy, not started: a test runs its duty
    cycles on its own thread, or starts a runner."""
    config = SessionServerConfig(session_timeout_ms=30_000, connect_timeout_ms=2_000)
    return agent_with_doorbell(aeron, send, pull, config)


def test_should_answer_a_released_pull_and_ring_its_consumer_before_answering_the_send(
    aeron: Aeron, agent: tuple[SessionAgent, Doorbell, DoorbellIdleStrategy], hold: PullHoldService
) -> None:
    session_agent, bell, idle = agent
    errors: list[BaseException] = []
    runner = AgentRunner(idle, errors.append, None, session_agent)
    runner.start()
    try:
        log: Log = []
        consumer, producer = _recorded_pair(aeron, session_agent, bell, lambda: None, log)
        _pull_to_hold(consumer)
        bell.ring()
        wait_for(lambda: hold.held_count == 1, what="the pull held")
        producer.request("send", send_request(b"one").SerializeToString(), correlation_id=3)
        bell.ring()
        assert consumer.answer().pull.next_begin_offset == 1
        assert producer.answer().send.base_queue_offset == 0
        _consumer_first(log)
    finally:
        runner.close()
    assert errors == []


def test_should_answer_a_pull_read_in_the_sends_cycle_before_the_send(
    aeron: Aeron, agent: tuple[SessionAgent, Doorbell, DoorbellIdleStrategy]
) -> None:
    # the pull and the send polled in one cycle, in whichever order the images come: held and
    # released, or read after the send and answered from the store; either way at once
    session_agent, bell, _ = agent
    session_agent.on_start()  # its duty cycles run on this thread
    log: Log = []
    consumer, producer = _recorded_pair(aeron, session_agent, bell, session_agent.do_work, log)
    _pull_to_hold(consumer)
    producer.request("send", send_request(b"one").SerializeToString(), correlation_id=3)
    # (an IPC offer is in the agent's image once it returned: one cycle polls both)
    assert session_agent.do_work() > 0
    _consumer_first(log)
    assert consumer.answer().pull.next_begin_offset == 1
    assert producer.answer().send.base_queue_offset == 0


def test_should_ring_a_consumer_again_for_its_answer_offered_later_in_the_cycle(
    aeron: Aeron, agent: tuple[SessionAgent, Doorbell, DoorbellIdleStrategy], hold: PullHoldService
) -> None:
    # rung at once for its pull's answer, the consumer may have read it and gone back to sleep
    # before its keepalive's answer went out in the same cycle: rung again after that one
    session_agent, bell, _ = agent
    session_agent.on_start()
    log: Log = []
    consumer, producer = _recorded_pair(aeron, session_agent, bell, session_agent.do_work, log)
    _pull_to_hold(consumer)
    _until(session_agent.do_work, lambda: hold.held_count == 1, "the pull held")
    producer.request("send", send_request(b"one").SerializeToString(), correlation_id=3)
    consumer.request("keepalive", correlation_id=4)
    assert session_agent.do_work() > 0
    _consumer_first(log)
    assert log.count(("offer", "consumer")) == 2
    assert log.count(("ring", "consumer")) == 2, log
    kinds = {consumer.answer().WhichOneof("body"), consumer.answer().WhichOneof("body")}
    assert kinds == {"pull", "keepalive"}


def test_should_not_count_a_cycle_that_only_held_a_pull_as_work(
    aeron: Aeron, agent: tuple[SessionAgent, Doorbell, DoorbellIdleStrategy], hold: PullHoldService
) -> None:
    # a consumer's lazy pull, read while the agent polls through its spin window, must not make
    # the spin predictor take it for a request that came fast: it asks nothing of the agent
    session_agent, bell, _ = agent
    session_agent.on_start()
    consumer = _connect(aeron, bell, session_agent.do_work)
    _pull_to_hold(consumer)
    assert session_agent.do_work() == 0
    assert hold.held_count == 1
    consumer.request("keepalive", correlation_id=3)
    assert session_agent.do_work() == 1  # any other request is work


@pytest.mark.parametrize("gap_ns", [0, SEND_FIRST_WITHIN_NS - 1, SEND_FIRST_WITHIN_NS])
def test_should_answer_a_send_before_the_pull_it_released_when_sends_come_fast(
    aeron: Aeron, send: object, pull: object, hold: PullHoldService, gap_ns: int
) -> None:
    # a send within SEND_FIRST_WITHIN_NS of the one before: its producer, whose next send is
    # due soon, is answered and rung first; a slower one: its consumer first, as ever
    fast = _FastSends(aeron, send, pull)
    session_agent, now, log = fast.agent, fast.now, fast.log
    consumer, producer = fast.consumer, fast.producer
    consumer.request(
        "pull",
        pull_request(offset=1, suspend_timeout_ms=_HELD_MS).SerializeToString(),
        correlation_id=4,
    )
    _until(session_agent.do_work, lambda: hold.held_count == 1, "the pull held")
    now[0] += gap_ns
    log.clear()
    producer.request("send", send_request(b"two").SerializeToString(), correlation_id=5)
    assert session_agent.do_work() > 0
    if gap_ns < SEND_FIRST_WITHIN_NS:
        _answered_first(log, "producer", "consumer")
    else:
        _consumer_first(log)
    assert consumer.answer().pull.next_begin_offset == 2
    answers = [producer.answer(), producer.answer()]
    assert [a.send.base_queue_offset for a in answers] == [0, 1]
    assert hold.woken_by_arrival == 1


def test_should_offer_a_fast_sends_answer_before_the_next_request_is_processed(
    aeron: Aeron, send: SendProcessor, pull: object, hold: PullHoldService
) -> None:
    # sends within SEND_FIRST_WITHIN_NS of each other: each answer is offered, and its
    # producer rung, from the send's own completion, before the agent goes on to the next
    # request of the same poll (not with the cycle's completions at its end)
    fast = _FastSends(aeron, send, pull)
    session_agent, log, producer = fast.agent, fast.log, fast.producer
    process = send.process

    def logged(request: object, on_done: SendDone) -> None:
        log.append(("process", "producer"))
        process(request, on_done)  # type: ignore[arg-type]

    send.process = logged  # type: ignore[method-assign]
    log.clear()
    producer.request("send", send_request(b"two").SerializeToString(), correlation_id=4)
    producer.request("send", send_request(b"three").SerializeToString(), correlation_id=5)
    assert session_agent.do_work() > 0
    one_send = [("process", "producer"), ("offer", "producer"), ("ring", "producer")]
    assert log == one_send * 2
    answers = [producer.answer() for _ in range(3)]
    assert [a.send.base_queue_offset for a in answers] == [0, 1, 2]
    assert [a.correlation_id for a in answers] == [3, 4, 5]


@pytest.mark.parametrize(("bodies", "ends"), [((b"two",), True), ((b"two", b"two-b"), False)])
def test_should_end_a_producers_poll_after_a_one_message_send_past_its_share(
    aeron: Aeron, send: SendProcessor, pull: object, bodies: tuple[bytes, ...], ends: bool
) -> None:
    # a one-message send taken POLL_SHARE_NS into the cycle ends its image's poll: the send
    # behind it waits for the next cycle and the other images are read in this one (the
    # consumer's keepalive answered); a send of a batch keeps the poll going
    fast = _FastSends(aeron, send, pull)
    session_agent, now, log = fast.agent, fast.now, fast.log
    consumer, producer = fast.consumer, fast.producer
    process = send.process

    def slow(request: object, on_done: SendDone) -> None:
        log.append(("process", "producer"))
        now[0] += POLL_SHARE_NS + 1  # the send took the cycle past the poll's share
        process(request, on_done)  # type: ignore[arg-type]

    send.process = slow  # type: ignore[method-assign]
    log.clear()
    producer.request("send", send_request(*bodies).SerializeToString(), correlation_id=4)
    producer.request("send", send_request(b"three").SerializeToString(), correlation_id=5)
    consumer.request("keepalive", correlation_id=6)
    assert session_agent.do_work() > 0
    assert log.count(("process", "producer")) == (1 if ends else 2), log
    assert consumer.answer().WhichOneof("body") == "keepalive"
    if ends:
        assert session_agent.do_work() > 0
        assert log.count(("process", "producer")) == 2, log
    answers = [producer.answer() for _ in range(3)]
    assert [a.correlation_id for a in answers] == [3, 4, 5]
    assert answers[2].send.base_queue_offset == 1 + len(bodies)


def test_should_queue_a_fast_sends_answer_its_session_cannot_take_now(
    aeron: Aeron, send: SendProcessor, pull: object
) -> None:
    # the answer refused by the response stream (back pressure) is not lost: queued in the
    # session's backlog and offered by a later cycle, in order
    fast = _FastSends(aeron, send, pull)
    session_agent, producer = fast.agent, fast.producer
    session = session_agent.table.get(producer.session_id)
    assert session is not None
    recorded = session.publication
    refusals = [1]

    class _Refusing:
        def __getattr__(self, name: str) -> object:
            return getattr(recorded, name)

        def offer(self, data: bytes) -> int:
            if refusals:
                refusals.pop()
                return BACK_PRESSURED
            return recorded.offer(data)  # type: ignore[union-attr]

    session.publication = _Refusing()  # type: ignore[assignment]
    producer.request("send", send_request(b"two").SerializeToString(), correlation_id=4)
    _until(session_agent.do_work, lambda: producer.poll_answers() > 1, "the second send answered")
    answers = [producer.answer(), producer.answer()]
    assert [a.correlation_id for a in answers] == [3, 4]
    assert answers[1].send.base_queue_offset == 1
    assert refusals == []
