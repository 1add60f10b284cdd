"""A pull on a session without a future: its envelope made by protobuf in C
(``client/_request_sender.py``: the bytes ``encode_envelope`` makes), and its outcome handed to
its callback once (``client/_sync_answer.CallbackAnswer``)."""

from __future__ import annotations

from concurrent.futures import InvalidStateError

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.client import SessionConfig
from aeromq.client._pending_requests import PendingRequests
from aeromq.client._request_sender import RequestSender
from aeromq.client._session_state import SessionState
from aeromq.client._sync_answer import CallbackAnswer
from aeromq.common import REQUEST_FIELD_NUMBERS, encode_envelope
from aeromq.proto import messages_pb2

_U64 = st.integers(min_value=0, max_value=2**64 - 1)  # 0 and past int64: encode_envelope's way
_I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_I32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)


class _Publication:
    """An ingress that takes every offer and keeps it."""

    max_message_length = 1 << 20

    def __init__(self) -> None:
        self.offered: list[bytes] = []

    def offer(self, data: bytes) -> int:
        self.offered.append(bytes(data))
        return len(data)


def _sender(session_id: int) -> tuple[RequestSender, _Publication]:
    state = SessionState()
    state.session_id = session_id
    sender = RequestSender(SessionConfig(), state, PendingRequests(state))
    publication = _Publication()
    sender.publication = publication  # type: ignore[assignment]
    return sender, publication


@given(
    correlation_id=_U64,
    session_id=_U64,
    offset=_I64,
    queue_id=_I32,
    suspend_ms=_I64,
    group=st.text(max_size=20),
    expression=st.text(max_size=30),
)
def test_should_offer_a_pull_as_encode_envelope_writes_it(
    correlation_id: int,
    session_id: int,
    offset: int,
    queue_id: int,
    suspend_ms: int,
    group: str,
    expression: str,
) -> None:
    request = messages_pb2.PullMessageRequest(
        consumer_group=group,
        topic="orders",
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=10,
        sub_expression=expression,
        suspend_timeout_ms=suspend_ms,
        commit_offset=-1,
    )
    sender, publication = _sender(session_id)
    sender.offer(request, correlation_id)
    field = REQUEST_FIELD_NUMBERS["pull"]
    expected = encode_envelope(correlation_id, session_id, field, request.SerializeToString())
    assert publication.offered == [expected]


def test_should_call_a_pull_back_once_with_its_answer_or_its_error() -> None:
    outcomes: list[tuple[object, BaseException | None]] = []
    answered: CallbackAnswer[str] = CallbackAnswer(lambda *outcome: outcomes.append(outcome))
    answered.set_result("answer")
    with pytest.raises(InvalidStateError):
        answered.set_exception(RuntimeError("late"))
    failed: CallbackAnswer[str] = CallbackAnswer(lambda *outcome: outcomes.append(outcome))
    error = RuntimeError("gone")
    failed.set_exception(error)

    assert outcomes == [("answer", None), (None, error)]
    assert answered.done() and answered.result() == "answer"
    with pytest.raises(RuntimeError):
        failed.result()


def test_should_log_a_callback_that_raises_and_stay_completed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(answer: object, error: BaseException | None) -> None:
        raise ValueError("callback bug")

    answer: CallbackAnswer[str] = CallbackAnswer(broken)
    answer.set_result("answer")  # the reader that completes it goes on
    assert answer.done()
    assert "callback of a request's answer failed" in caplog.text


def test_should_register_a_pull_whose_callback_takes_its_answer() -> None:
    sender, publication = _sender(7)
    outcomes: list[tuple[object, BaseException | None]] = []
    sender.submit_callback(
        messages_pb2.PullMessageRequest(topic="orders"), 1_000, lambda *o: outcomes.append(o)
    )
    [(correlation_id, future)] = sender._futures.items()
    future.set_result("the answer")  # type: ignore[arg-type]  # as the dispatch completes it
    assert len(publication.offered) == 1 and correlation_id
    assert outcomes == [("the answer", None)]
