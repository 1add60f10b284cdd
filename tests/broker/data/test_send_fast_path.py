"""A send through the broker's fast path (``common/_stored_send.py``: the request's fields read
by one native call, a stored send's answer written by another) answers byte for byte as the
protobuf path, and stores the same bytes: over stored, batched, round-robin, idempotent and
retried sends and every refusal, the envelope the session writes is the one protobuf wrote, and
the two stores' commit logs and consume queues end alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.session._answer_envelopes import answer_envelope
from aeromq.broker.store import MessageStore
from aeromq.common import (
    RESPONSE_FIELD_NUMBERS,
    StoredSendAnswer,
    encode_batch,
    encode_properties,
    read_send_request,
)
from aeromq.proto import messages_pb2, session_pb2

from .conftest import TOPIC, Answers, record_batch

_SEND = RESPONSE_FIELD_NUMBERS["send"]
_CORRELATION_ID = 1 << 40
_SESSION_ID = -(1 << 62)


def _old_envelope(response: messages_pb2.SendMessageResponse) -> bytes:
    """The envelope as the session wrote every send answer before the fast path."""
    envelope = session_pb2.TransportResponse(correlation_id=_CORRELATION_ID, session_id=_SESSION_ID)
    envelope.send.CopyFrom(response)
    return envelope.SerializeToString()


def _new_envelope(answer: Any) -> bytes:
    data, length = answer_envelope(_CORRELATION_ID, _SESSION_ID, _SEND, answer)
    assert isinstance(data, bytes) and length == len(data)
    return data


def _idempotent(*bodies: bytes, sequence: int = 0) -> bytes:
    properties = encode_properties({"UNIQ_KEY": f"ID{sequence}"})
    return bytes(
        encode_batch(
            TOPIC.encode(),
            list(bodies),
            [None] * len(bodies),
            [properties] * len(bodies),
            born_timestamp_ms=1_700_000_000_000,
            producer_id=77,
            base_sequence=sequence,
            producer_epoch=1,
        )
    )


_CASES: list[tuple[str, dict[str, Any]]] = [
    ("one", {"batch": record_batch(b"m")}),
    ("keyed", {"batch": record_batch(b"m", keys=["k1", "k2"], msg_id="U1", tags="T")}),
    ("several", {"batch": record_batch(b"a", b"b", b"c")}),
    ("round-robin", {"batch": record_batch(b"r"), "queue_id": -1}),
    ("queue-3", {"batch": record_batch(b"q"), "queue_id": 3}),
    ("idempotent", {"batch": _idempotent(b"i", sequence=0)}),
    ("idempotent-retry", {"batch": _idempotent(b"i", sequence=0)}),
    ("idempotent-next", {"batch": _idempotent(b"j", b"k", sequence=1)}),
    ("idempotent-gap", {"batch": _idempotent(b"g", sequence=9)}),
    ("unknown-topic", {"topic": "missing", "batch": record_batch(b"x", topic="missing")}),
    ("system-topic", {"topic": "SCHEDULE_TOPIC_XXXX", "batch": record_batch(b"x")}),
    ("queue-too-big", {"batch": record_batch(b"x"), "queue_id": 4}),
    ("no-batch", {"batch": b""}),
    ("empty-body", {"batch": record_batch(b"")}),
    ("over-max-size", {"batch": record_batch(b"x" * 1025)}),
    ("bad-tag", {"batch": record_batch(b"x", tags="a b")}),
    ("not-a-batch", {"batch": b"garbage"}),
    ("other-topic", {"batch": record_batch(b"x", topic="other")}),
]


def _contents(store: MessageStore) -> list[tuple[object, ...]]:
    """Every stored message of the topic but its store time (each store keeps its own)."""
    return [
        (m.queue_id, m.queue_offset, m.physical_offset, m.store_size, m.body, m.properties)
        for queue_id in range(4)
        for m in store.get_messages(TOPIC, queue_id, 0).messages
    ]


def test_should_answer_and_store_every_send_as_the_protobuf_path(
    open_store: Callable[..., MessageStore],
) -> None:
    old_store, new_store = open_store(), open_store()
    old_send = SendProcessor(old_store, "broker-a", max_message_size=1024)
    new_send = SendProcessor(new_store, "broker-a", max_message_size=1024)
    stored = []
    for name, fields in _CASES:
        request = messages_pb2.SendMessageRequest(
            producer_group="pg",
            topic=fields.get("topic", TOPIC),
            queue_id=fields.get("queue_id", 0),
            batch=fields["batch"],
        )
        data = session_pb2.TransportRequest(
            correlation_id=_CORRELATION_ID, session_id=_SESSION_ID, send=request
        ).SerializeToString()
        read = read_send_request(data)
        assert read is not None and read.message() == request, name
        old, new = Answers(), Answers()
        old_send.process(request, old)
        new_send.process(read, new)
        (old_answer,), (new_answer,) = old, new
        assert isinstance(old_answer, messages_pb2.SendMessageResponse), name
        if type(new_answer) is StoredSendAnswer:
            stored.append(name)
            assert new_answer.message() == old_answer, name
        else:
            assert new_answer == old_answer, name
        assert _new_envelope(new_answer) == _old_envelope(old_answer), name
    assert stored == [name for name, _ in _CASES[:8]], stored  # a retry's answer too
    assert old_send.errors == new_send.errors
    assert old_send.messages_stored == new_send.messages_stored
    assert _contents(old_store) == _contents(new_store)
