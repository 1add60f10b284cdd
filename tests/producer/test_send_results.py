"""A send's answer in either form (a ``SendAnswer`` read natively, or protobuf's
``SendMessageResponse``) read into the same results and the same errors
(``producer/_answers.py``)."""

from __future__ import annotations

import time

import pytest

from aeromq.client import ClientError, MessageQueue, UniqueMessageIdGenerator
from aeromq.common import read_send_answer
from aeromq.producer._answers import results_of
from aeromq.producer._attempt import Attempt
from aeromq.proto import session_pb2
from tests.client._send_answers import STORED, send_answer_bytes

TARGET = MessageQueue("orders", "broker-a", 1)


def _attempt(count: int = 1) -> Attempt:
    ids = UniqueMessageIdGenerator().next_ids(count, int(time.time() * 1000))
    return Attempt([], b"", ids, time.monotonic_ns() + 10**9, 1, None, None)


def test_should_read_both_forms_of_an_answer_into_the_same_results() -> None:
    wire = send_answer_bytes(9, **STORED)
    native = read_send_answer(wire)
    parsed = session_pb2.TransportResponse.FromString(wire).send
    attempt = _attempt(2)

    assert native is not None
    fast, slow = results_of(native, TARGET, attempt), results_of(parsed, TARGET, attempt)

    assert list(fast) == list(slow)
    assert fast[1].queue_offset == 41 and fast[0].message_queue.queue_id == 3


def test_should_raise_the_same_error_for_a_miscounted_answer_in_both_forms() -> None:
    wire = send_answer_bytes(10, **STORED)  # two messages answered for a send of one
    native = read_send_answer(wire)
    parsed = session_pb2.TransportResponse.FromString(wire).send
    assert native is not None

    errors = []
    for response in (native, parsed):
        with pytest.raises(ClientError) as raised:
            results_of(response, TARGET, _attempt(1))
        errors.append((type(raised.value), str(raised.value)))

    assert errors[0] == errors[1]
    assert "a send of 1 messages with 2" in errors[0][1]
