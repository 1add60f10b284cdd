"""A send's request and answer in one native call each (``common/_send_envelope.py``,
``record_batch/_send_encode.c`` and ``_send_answer.c``): the request byte for byte what the
Python reference (``stamp_batch``, protobuf, ``encode_envelope``) writes, over generated topics,
bodies, tags, keys and properties (non-ASCII among them), with and without the idempotent
producer's state, compressed or not; the answer read as protobuf reads it, or left to protobuf
(None) for whatever the fast path does not cover."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aeromq.common import (
    SendAnswer,
    SendRequest,
    encode_envelope,
    encode_send_request,
    read_send_answer,
    read_send_answer_py,
    send_request_py,
)
from aeromq.common.record_batch import (
    BatchCheck,
    CompressionType,
    check_batch,
    compress_batch,
    encode_batch,
    read_producer_state,
    stamp_batch,
)
from aeromq.common.record_batch import _native as native
from aeromq.proto import common_pb2, messages_pb2, session_pb2

MiB = 1024 * 1024
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_name_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\x01\x02"),
    min_size=1,
    max_size=8,
)
_i64 = st.integers(-(1 << 63), (1 << 63) - 1)
_u64 = st.integers(0, (1 << 64) - 1)
_i32 = st.integers(-(1 << 31), (1 << 31) - 1)


@st.composite
def _batches(draw: st.DrawFn) -> tuple[str, bytes]:
    """A topic and its one-record (or few-record) batch with tags, keys and properties, maybe
    compressed."""
    topic = draw(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20))
    count = draw(st.integers(1, 3))
    bodies = [draw(st.binary(max_size=300)) for _ in range(count)]
    tags = [draw(st.one_of(st.none(), _name_text)) for _ in range(count)]
    properties = []
    for _ in range(count):
        pairs = draw(st.lists(st.tuples(_name_text, _name_text), max_size=3))
        keys = draw(st.lists(_name_text, max_size=2))
        if keys:
            pairs.append(("KEYS", " ".join(keys)))
        properties.append("".join(f"{n}\x01{v}\x02" for n, v in pairs).encode())
    batch = bytes(
        encode_batch(
            topic.encode(),
            bodies,
            tags,
            properties,
            flags=[draw(_i32) for _ in range(count)],
            born_timestamp_ms=draw(st.integers(0, 1 << 45)),
        )
    )
    if draw(st.booleans()):
        batch = compress_batch(batch, CompressionType.ZLIB, min_body_bytes=0)
    return topic, batch


@given(
    _batches(),
    _u64 | _i64,
    _u64,
    _text,
    _i32,
    st.one_of(st.none(), _i64),
    st.integers(0, (1 << 31) - 1),
    st.integers(-(1 << 15), (1 << 15) - 1),
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_should_encode_a_send_request_byte_for_byte_as_the_python_reference(
    topic_batch: tuple[str, bytes],
    correlation_id: int,
    session_id: int,
    group: str,
    queue_id: int,
    producer_id: int | None,
    base_sequence: int,
    epoch: int,
) -> None:
    topic, batch = topic_batch
    args = (correlation_id, session_id, group, topic, queue_id, batch, producer_id, base_sequence)

    encoded = native.send_request(*args, epoch)

    assert encoded == send_request_py(*args, epoch)
    request = session_pb2.TransportRequest.FromString(encoded)
    sent = request.send.batch
    assert check_batch(sent, topic=topic.encode(), check_content=False)[0] is BatchCheck.OK
    assert (read_producer_state(sent) is None) == (producer_id is None)


@pytest.mark.parametrize(
    "body_length", [0, 1, 127, 128, 16_383, 16_384, 4 * MiB - 1, 4 * MiB], ids=str
)
@pytest.mark.parametrize("producer_id", [None, 7 << 40])
def test_should_encode_bodies_of_every_edge_size_as_the_reference(
    body_length: int, producer_id: int | None
) -> None:
    batch = bytes(encode_batch(b"Edge", [b"\xa5" * body_length], ["tag"], [b"k\x01v\x02"]))
    args = (1 << 33, 7, "group", "Edge", 2, batch, producer_id, 5, 1)

    assert encode_send_request(*args) == send_request_py(*args)


def test_should_stamp_a_request_as_stamp_batch_does() -> None:
    batch = bytes(encode_batch(b"orders", [b"a", b"bb"], ["t", None], [b"k\x01v\x02"] * 2))
    request = SendRequest("g", "orders", 3, batch, 9 << 50, 12, 4)

    parsed = session_pb2.TransportRequest.FromString(encode_send_request(1, 2, *request))

    assert parsed.send == request.message()
    assert parsed.send.batch == stamp_batch(batch, 9 << 50, 12, 4) == request.sent_batch()
    assert SendRequest("g", "orders", 3, batch).sent_batch() is batch


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"queue_id": 1 << 31}, ValueError),  # protobuf's
        ({"base_sequence": 1 << 31}, struct.error),  # stamp_batch's struct
        ({"producer_epoch": 1 << 15}, struct.error),
        ({"producer_id": 1 << 63}, struct.error),
        ({"batch": b"short"}, struct.error),
        ({"topic": 5}, TypeError),
    ],
    ids=["queue", "sequence", "epoch", "producer", "short-batch", "topic-type"],
)
def test_should_refuse_what_it_cannot_encode_with_the_references_error_type(
    change: dict[str, Any], error: type[Exception]
) -> None:
    batch = bytes(encode_batch(b"T", [b"x"]))
    fields = SendRequest("g", "T", 0, batch, 1, 0, 0)._replace(**change)

    with pytest.raises(error):
        native.send_request(1, 2, *fields)
    with pytest.raises(error):
        send_request_py(1, 2, *fields)


def _response(
    code: int = 0,
    message: str = "",
    *,
    leader: bool = False,
    **send: Any,
) -> session_pb2.TransportResponse:
    response = session_pb2.TransportResponse(correlation_id=41, session_id=-5)
    response.send.CopyFrom(messages_pb2.SendMessageResponse(**send))
    response.send.status.CopyFrom(common_pb2.Status(code=code, message=message))
    if leader:
        response.send.status.leader.SetInParent()
    return response


@given(
    st.sampled_from([0, 10, 1, 17, 207]),
    st.sampled_from(["", "refused"]),
    st.booleans(),
    st.integers(0, 5),
    _i32,
    _i64,
    _i32,
    _i64,
    _text,
    _text,
)
@settings(max_examples=200, deadline=None)
def test_should_read_a_send_answer_as_protobuf_reads_it(
    code: int,
    message: str,
    leader: bool,
    send_status: int,
    queue_id: int,
    queue_offset: int,
    count: int,
    commit_log_offset: int,
    store_host: str,
    broker_name: str,
) -> None:
    data = _response(
        code,
        message,
        leader=leader,
        send_status=send_status,
        queue_id=queue_id,
        base_queue_offset=queue_offset,
        message_count=count,
        base_commit_log_offset=commit_log_offset,
        store_host=store_host,
        broker_name=broker_name,
    ).SerializeToString()

    answer = native.send_answer(SendAnswer, data)

    assert answer == read_send_answer_py(data)
    stored = code in (0, 10) and not message and not leader
    assert (answer is not None) == stored
    if answer is not None:
        assert type(answer) is SendAnswer
        assert (answer.correlation_id, answer.session_id) == (41, -5)
        assert (answer.queue_id, answer.base_queue_offset, answer.store_host) == (
            queue_id,
            queue_offset,
            store_host,
        )


_STORED = _response(
    base_queue_offset=3, message_count=1, store_host="127.0.0.1:1"
).SerializeToString()


@given(st.data())
@settings(max_examples=400, deadline=None)
def test_should_agree_with_protobuf_on_broken_and_strange_answers(data: st.DataObject) -> None:
    """Cut, flipped, extended or random bytes: the same answer, or None from both."""
    kind = data.draw(st.sampled_from(["cut", "flip", "extend", "random"]))
    if kind == "cut":
        wire = _STORED[: data.draw(st.integers(0, len(_STORED) - 1))]
    elif kind == "flip":
        at = data.draw(st.integers(0, len(_STORED) - 1))
        wire = _STORED[:at] + bytes((data.draw(st.integers(0, 255)),)) + _STORED[at + 1 :]
    elif kind == "extend":
        wire = _STORED + data.draw(st.binary(min_size=1, max_size=12))
    else:
        wire = data.draw(st.binary(max_size=40))

    assert native.send_answer(SendAnswer, wire) == read_send_answer_py(wire)


@pytest.mark.parametrize(
    "wire",
    [
        _STORED + b"\xc2\x3e\x00",  # a raw section: a pull answer's
        encode_envelope(1, 2, 13, common_pb2.Status(code=1).SerializeToString()),  # an error
        encode_envelope(1, 2, 14, b""),  # a keepalive's answer
        _STORED + b"\x18\x01",  # a field the response does not have
        encode_envelope(1, 2, 11, b"\x42\x01\xff"),  # a store host that is not UTF-8
    ],
    ids=["raw-section", "error", "keepalive", "unknown-field", "bad-utf8"],
)
def test_should_leave_every_other_answer_to_protobuf(wire: bytes) -> None:
    assert read_send_answer(wire) is None
    assert read_send_answer_py(wire) is None
