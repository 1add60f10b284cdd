"""A session's answers to sends (``client/_answer_dispatch.py``): a stored send's read in one
native call into a ``SendAnswer``, every other answer left to protobuf as before (an error, a
refusal), and every answer so when the native module is missing."""

from __future__ import annotations

from typing import cast

import pytest

from aeromq.client import _answer_dispatch as dispatch_module
from aeromq.client._answer_dispatch import AnswerDispatcher
from aeromq.client._pending_requests import Answer, PendingRequests
from aeromq.client._session_state import SessionState
from aeromq.client._sync_answer import SyncAnswer
from aeromq.common import ClientError, SendAnswer, encode_envelope, read_send_answer
from aeromq.proto import common_pb2, messages_pb2, session_pb2
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import Header

from ._send_answers import SESSION_ID, STORED, send_answer_bytes


class _Bytes:
    """The part of an ``AtomicBuffer`` the dispatcher reads, over plain bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def get_bytes(self, offset: int, length: int) -> bytes:
        return self.data[offset : offset + length]


def _dispatched(wire: bytes) -> Answer:
    """``wire`` handed to a session's dispatcher as one fragment: what its request got."""
    state = SessionState()
    state.session_id = SESSION_ID
    pending = PendingRequests(state)
    future: SyncAnswer[Answer] = SyncAnswer()
    correlation_id = session_pb2.TransportResponse.FromString(wire).correlation_id
    pending.futures[correlation_id] = future
    dispatcher = AnswerDispatcher(state, pending)
    buffer = cast(AtomicBuffer, _Bytes(wire))
    dispatcher.on_fragment(buffer, 0, len(wire), cast(Header, None))
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
    state = SessionState()
    state.session_id = SESSION_ID
    pending = PendingRequests(state)
    future: SyncAnswer[Answer] = SyncAnswer()
    pending.futures[8] = future
    AnswerDispatcher(state, pending).on_fragment(
        cast(AtomicBuffer, _Bytes(wire)), 0, len(wire), cast(Header, None)
    )
    with pytest.raises(ClientError):
        future.result(0)
