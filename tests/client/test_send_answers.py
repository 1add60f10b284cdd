"""A session's answers to sends and pulls (``client/_answer_dispatch.py``): a stored send's read
in one native call into a ``SendAnswer``, a pull's (its batches as the raw section) straight from
the log buffer into a ``PulledAnswer``, every other answer left to protobuf as before (an error,
a refusal), and every answer so when the native module is missing."""

from __future__ import annotations

import pytest

from aeromq.client import _answer_dispatch as dispatch_module
from aeromq.client._answer_dispatch import AnswerDispatcher
from aeromq.client._pending_requests import Answer, PendingRequests
from aeromq.client._session_state import SessionState
from aeromq.client._sync_answer import SyncAnswer
from aeromq.common import (
    ClientError,
    PullAnswer,
    PulledAnswer,
    SendAnswer,
    StoredPullAnswer,
    encode_envelope,
    read_send_answer,
    stored_pull_envelope,
)
from aeromq.proto import common_pb2, messages_pb2, session_pb2
from tests.transport.logbuffer.test_fragment_assemblers import MAX_PAYLOAD, Stream

from ._send_answers import SESSION_ID, STORED, send_answer_bytes


def _dispatched(wire: bytes, correlation_id: int | None = None) -> Answer:
    """``wire`` written to a term by a real term appender (in fragments when it is longer than
    the MTU) and its fragments handed to a session's dispatcher as its poll hands them over:
    what its request got."""
    state = SessionState()
    state.session_id = SESSION_ID
    pending = PendingRequests(state)
    future: SyncAnswer[Answer] = SyncAnswer()
    if correlation_id is None:
        correlation_id = session_pb2.TransportResponse.FromString(wire).correlation_id
    pending.futures[correlation_id] = future
    dispatcher = AnswerDispatcher(state, pending)
    for fragment in Stream(7).message(wire):
        dispatcher.on_fragment(fragment.term, fragment.offset, fragment.length, fragment.header)
    assert future.done() and state.last_heard_ns
    return future.result(0)


def test_should_complete_a_stored_sends_request_with_its_answer_read_natively() -> None:
    answer = _dispatched(send_answer_bytes(5, **STORED))

    assert type(answer) is SendAnswer
    assert answer.base_queue_offset == 40 and answer.status.code == 0


@pytest.mark.parametrize(
    ("code", "message"),
    [(17, "topic missing"), (1, ""), (0, "stored, with words")],
    ids=["refused", "system-error", "with-message"],
)
def test_should_leave_any_other_answer_to_protobuf(code: int, message: str) -> None:
    answer = _dispatched(send_answer_bytes(6, code, message, message_count=1))

    assert isinstance(answer, messages_pb2.SendMessageResponse)
    assert (answer.status.code, answer.status.message) == (code, message)


def test_should_read_every_answer_through_protobuf_without_the_native_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dispatch_module, "read_send_answer", lambda data: None)

    answer = _dispatched(send_answer_bytes(7, **STORED))

    assert isinstance(answer, messages_pb2.SendMessageResponse)
    assert answer.base_commit_log_offset == 9_000


def test_should_fail_a_request_with_the_error_of_an_envelope_level_error() -> None:
    wire = encode_envelope(8, SESSION_ID, 13, common_pb2.Status(code=1).SerializeToString())
    assert read_send_answer(wire) is None
    with pytest.raises(ClientError):
        _dispatched(wire)


def _pull_answer_bytes(correlation_id: int, batches: bytes, **fields: int) -> bytes:
    response = messages_pb2.PullMessageResponse(**fields)  # type: ignore[arg-type]
    pieces = [memoryview(batches)] if batches else []
    envelope, _ = stored_pull_envelope(
        correlation_id, SESSION_ID, StoredPullAnswer(response, pieces=pieces)
    )
    return envelope if isinstance(envelope, bytes) else b"".join(envelope)


@pytest.mark.parametrize("batches", [b"x" * 300, b"x" * 900, b""], ids=["small", "long", "none"])
def test_should_complete_a_pulls_request_with_its_answer_read_natively(batches: bytes) -> None:
    wire = _pull_answer_bytes(9, batches, next_begin_offset=12, min_offset=1, max_offset=12)

    answer = _dispatched(wire, 9)

    assert type(answer) is PulledAnswer
    assert (answer.status.code, answer.next_begin_offset, answer.max_offset) == (0, 12, 12)
    assert answer.batches == batches


def test_should_read_a_refused_pull_through_protobuf() -> None:
    response = messages_pb2.PullMessageResponse(next_begin_offset=3)
    response.status.code = 17
    response.status.message = "topic missing"
    wire = encode_envelope(10, SESSION_ID, 12, response.SerializeToString())

    answer = _dispatched(wire)

    assert type(answer) is PullAnswer
    assert (answer.status.code, answer.status.message) == (17, "topic missing")


def test_should_read_a_pull_through_protobuf_without_the_native_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dispatch_module, "read_pulled_answer", lambda *args: None)
    wire = _pull_answer_bytes(11, b"batch", next_begin_offset=5, max_offset=5)

    answer = _dispatched(wire, 11)

    assert type(answer) is PullAnswer
    assert (answer.next_begin_offset, answer.max_offset, answer.batches) == (5, 5, b"batch")


def test_should_assemble_a_pull_answer_longer_than_the_mtu_before_reading_it() -> None:
    batches = bytes(i % 251 for i in range(3 * MAX_PAYLOAD))
    wire = _pull_answer_bytes(12, batches, next_begin_offset=40, max_offset=40)
    assert len(Stream(7).message(wire)) > 1  # (the fragments of one answer)

    answer = _dispatched(wire, 12)

    assert isinstance(answer, PullAnswer)  # (its raw section copied straight out of them)
    assert (answer.next_begin_offset, answer.batches) == (40, batches)


def test_should_assemble_an_error_longer_than_the_mtu_before_reading_it() -> None:
    status = common_pb2.Status(code=1, message="x" * (2 * MAX_PAYLOAD))
    wire = encode_envelope(13, SESSION_ID, 13, status.SerializeToString())

    with pytest.raises(ClientError, match="x" * 20):
        _dispatched(wire)
