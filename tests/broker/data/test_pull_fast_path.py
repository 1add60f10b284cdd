"""A pull through the broker's fast path (``common/_pull_envelope.py``: the request's fields read
by one native call, the FOUND answer's envelope written by another) answers byte for byte as the
protobuf path: over found, capped, filtered, SQL92, out-of-range, refused, local and held pulls,
the envelope the session writes is the one protobuf and ``encode_envelope_around`` write."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from aeromq.broker.processor.pull import PullProcessor
from aeromq.broker.processor.pull_hold import PullHoldService
from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.session._answer_envelopes import answer_envelope
from aeromq.broker.store import MessageStore, TopicConfig
from aeromq.common import (
    PERM_WRITE,
    RESPONSE_FIELD_NUMBERS,
    PullAnswer,
    StoredPullAnswer,
    read_pull_request,
    stored_pull_envelope_py,
)
from aeromq.proto import messages_pb2, session_pb2

from .conftest import TOPIC, Answers, send_request

_PULL = RESPONSE_FIELD_NUMBERS["pull"]
_CORRELATION_ID = 1 << 40
_SESSION_ID = -(1 << 62)


def _old_envelope(answer: PullAnswer) -> bytes:
    """The envelope as the session wrote every pull answer before the fast path."""
    data, length = stored_pull_envelope_py(_CORRELATION_ID, _SESSION_ID, answer)
    data = data if isinstance(data, bytes) else b"".join(data)
    assert length == len(data)
    return data


def _new_envelope(answer: PullAnswer) -> bytes:
    data, length = answer_envelope(_CORRELATION_ID, _SESSION_ID, _PULL, answer)
    data = data if isinstance(data, bytes) else b"".join(data)
    assert length == len(data)
    return data


def _both(pull: PullProcessor, local: bool = False, **fields: Any) -> tuple[bytes, bytes]:
    """The answer to one pull of ``fields`` by the protobuf request and the old envelope, and by
    the natively read request and the session's envelope."""
    fields.setdefault("consumer_group", "cg")
    fields.setdefault("topic", TOPIC)
    request = messages_pb2.PullMessageRequest(**fields)
    old, new = Answers(), Answers()
    pull.process(request, old, local=local)
    data = session_pb2.TransportRequest(
        correlation_id=_CORRELATION_ID, session_id=_SESSION_ID, pull=request
    ).SerializeToString()
    read = read_pull_request(data)
    assert read is not None and read.message() == request
    pull.process(read, new, local=local)
    (old_answer,), (new_answer,) = old, new
    return _old_envelope(old_answer), _new_envelope(new_answer)


@pytest.fixture
def filled(store: MessageStore, send: SendProcessor) -> MessageStore:
    store.topic_config.create_or_update(TopicConfig("writeonly", 1, 1, perm=PERM_WRITE))
    send.process(send_request(b"a", b"b", b"c", tags="A"), Answers())
    for i in range(5):
        send.process(send_request(b"m%d" % i, tags="B" if i % 2 else "A"), Answers())
    send.process(send_request(b"x", properties={"a": "2"}, tags="A"), Answers())
    return store


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"queue_offset": 1},
        {"queue_offset": 4, "max_msg_nums": 1},
        {"queue_offset": 2, "max_msg_nums": 3, "max_bytes": 1},
        {"sub_expression": "B"},
        {"sub_expression": "C"},
        {"sub_expression": "A || B", "queue_offset": 3},
        {"expression_type": messages_pb2.SQL92, "sub_expression": "a = '2'"},
        {"expression_type": messages_pb2.SQL92, "sub_expression": "a = '3'"},
        {"expression_type": messages_pb2.SQL92, "sub_expression": "a >"},
        {"queue_offset": 9},
        {"queue_offset": 99},
        {"queue_id": 1},
        {"queue_id": 1, "queue_offset": 5},
        {"topic": "missing"},
        {"topic": "writeonly"},
        {"consumer_group": "bad group"},
        {"consumer_group": ""},
        {"queue_id": 7},
        {"queue_offset": -1},
        {"max_msg_nums": -1},
        {"sub_expression": "A ||"},
        {"commit_offset": 99},
        {"commit_offset": 2, "queue_offset": 2},
    ],
)
def test_should_answer_the_natively_read_pull_byte_for_byte_as_the_protobuf_path(
    filled: MessageStore, pull: PullProcessor, fields: dict[str, Any]
) -> None:
    old, new = _both(pull, **fields)
    assert new == old


def test_should_answer_a_local_read_as_the_protobuf_path(
    filled: MessageStore, pull: PullProcessor
) -> None:
    old, new = _both(pull, local=True, queue_offset=1)
    assert new == old
    assert session_pb2.TransportResponse.FromString(new).pull.local_ranges


def test_should_answer_a_held_pull_released_by_an_arrival_as_a_fresh_pull(
    store: MessageStore, send: SendProcessor, pull: PullProcessor, hold: PullHoldService
) -> None:
    send.process(send_request(b"first"), Answers())
    answered = threading.Event()
    answers = Answers()

    def on_done(answer: PullAnswer) -> None:
        answers(answer)
        answered.set()

    data = session_pb2.TransportRequest(
        correlation_id=_CORRELATION_ID,
        session_id=_SESSION_ID,
        pull=messages_pb2.PullMessageRequest(
            consumer_group="cg", topic=TOPIC, queue_offset=1, suspend_timeout_ms=5_000
        ),
    ).SerializeToString()
    read = read_pull_request(data)
    assert read is not None
    pull.process(read, on_done)
    assert hold.held_count == 1 and not answers
    send.process(send_request(b"second"), Answers())
    assert answered.wait(2.0)
    (held,) = answers
    assert type(held) is StoredPullAnswer and hold.woken_by_arrival == 1
    old, new = _both(pull, queue_offset=1)
    assert _new_envelope(held) == new == old
