"""The client session's parts on their own (no driver): the pending-request table's deadlines
and failures, the reader a config picks, what a CONNECT answer grants, an answer whose reading
raised."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from aeromq.client._answer_dispatch import AnswerDispatcher
from aeromq.client._answer_reader_kinds import CallerReads, PollerReads, reader_for
from aeromq.client._pending_requests import PendingRequests
from aeromq.client._session_setup import SessionGrant
from aeromq.client._session_state import SessionState
from aeromq.client.session import SessionConfig
from aeromq.common import (
    RESPONSE_FIELD_NUMBERS,
    BrokerUnavailableError,
    IllegalStateError,
    RequestTimeoutError,
    encode_envelope,
)
from aeromq.proto import session_pb2


class RecordingDoorbell:
    """Counts its rings (the table rings the session's doorbell after failing futures)."""

    def __init__(self) -> None:
        self.rings = 0

    def ring(self) -> None:
        self.rings += 1


def _pending_with(
    deadlines_ns: list[int], state: SessionState | None = None
) -> tuple[PendingRequests, list[Future[object]]]:
    pending = PendingRequests(state or SessionState())
    futures: list[Future[object]] = []
    for correlation_id, deadline_ns in enumerate(deadlines_ns):
        future: Future[object] = Future()
        pending.futures[correlation_id] = future  # type: ignore[assignment]
        pending.deadlines.append((deadline_ns, correlation_id))
        futures.append(future)
    return pending, futures


def test_should_fail_the_requests_past_their_deadline_and_ring() -> None:
    pending, futures = _pending_with([10, 20, 30])
    bell = pending.doorbell = RecordingDoorbell()  # type: ignore[assignment]
    assert pending.expire(25) == 2
    assert [f.done() for f in futures] == [True, True, False]
    with pytest.raises(RequestTimeoutError, match="no answer in time"):
        futures[0].result()
    assert list(pending.futures) == [2]
    assert bell.rings == 1
    assert pending.expire(25) == 0  # nothing more due: no ring
    assert bell.rings == 1


def test_should_drop_the_deadlines_of_answered_requests_when_they_are_most() -> None:
    pending, _ = _pending_with([1_000 + i for i in range(3_000)])
    for correlation_id in range(2_000):
        del pending.futures[correlation_id]  # answered
    assert pending.expire(0) == 0
    assert sorted(entry[1] for entry in pending.deadlines) == list(range(2_000, 3_000))


def test_should_remember_the_first_failure_and_fail_everything_pending() -> None:
    state = SessionState()
    pending, futures = _pending_with([10, 20], state)
    first = BrokerUnavailableError("the broker stopped answering")
    pending.fail(first)
    pending.fail(IllegalStateError("session closed"))
    assert state.failure is first
    assert pending.futures == {}
    assert all(f.exception() is first for f in futures)


def test_should_pick_the_reader_the_config_asks_for() -> None:
    state = SessionState()
    pending = PendingRequests(state)
    assembler = AnswerDispatcher(state, pending).assembler

    def housekeeping(_now_ns: int) -> int:
        return 0

    def next_due(now_ns: int) -> int:
        return now_ns + 100_000_000

    parts = (assembler, state, pending, housekeeping, next_due)
    poller = reader_for(SessionConfig(), *parts)
    callers = reader_for(SessionConfig(caller_reads=True), *parts)
    assert type(poller) is PollerReads and not poller.callers_read
    assert type(callers) is CallerReads and callers.callers_read


def test_should_grant_a_keepalive_interval_of_a_third_of_the_session_timeout() -> None:
    answer = session_pb2.ConnectResponse(
        broker_name="broker-a", session_timeout_ms=9_000, rings_client_doorbell=True
    )
    grant = SessionGrant.of(answer, SessionConfig(), None, None)  # type: ignore[arg-type]
    assert (grant.broker_name, grant.keepalive_interval_ms) == ("broker-a", 3_000)
    assert not grant.rung and grant.broker_doorbell is None  # no doorbell of its own
    configured = SessionGrant.of(answer, SessionConfig(keepalive_interval_ms=500), None, None)  # type: ignore[arg-type]
    assert configured.keepalive_interval_ms == 500


class _RaisingFutures(dict[int, object]):
    """A pending table whose look-up raises, as a bug in the dispatch would."""

    def pop(self, key: int, default: object = None) -> object:
        raise RuntimeError(f"a bug: correlation_id={key}")


def test_should_tell_the_readers_when_reading_an_answer_raised() -> None:
    state = SessionState()
    state.session_id = 5
    dispatcher = AnswerDispatcher(state, PendingRequests(state))
    body = session_pb2.KeepAliveResponse().SerializeToString()
    data = encode_envelope(7, 5, RESPONSE_FIELD_NUMBERS["keepalive"], body)
    dispatcher.on_answer(data, None, len(data))
    assert not state.answer_failed  # read: no request of that id pending, nothing raised
    dispatcher._futures = _RaisingFutures()  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="a bug"):
        dispatcher.on_answer(data, None, len(data))
    # the image reports the error and ends its poll at this answer: the readers keep no word
    # from that poll for their next wait (client/_answer_readers.py)
    assert state.answer_failed
