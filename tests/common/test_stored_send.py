"""A send's request and its stored answer in one native call each at the broker
(``common/_stored_send.py``, ``record_batch/_send_fields.c``): the request read as protobuf
reads it, or left to protobuf (None) for whatever the fast path does not cover; the answer byte
for byte what protobuf serialises, over generated ids, queues, offsets, hosts and names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.common import (
    SendRequestFields,
    StoredSendAnswer,
    read_send_request,
    read_send_request_py,
    stored_send_envelope,
    stored_send_envelope_py,
)
from aeromq.common.record_batch import _native as native
from aeromq.proto import messages_pb2, session_pb2

from ._damaged import damaged

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_i64 = st.integers(-(1 << 63), (1 << 63) - 1)
_i32 = st.integers(-(1 << 31), (1 << 31) - 1)
_varint_edges = st.sampled_from([0, 1, 127, 128, 16_383, 16_384, (1 << 31) - 1, (1 << 63) - 1])


@st.composite
def _send_requests(draw: st.DrawFn) -> SendRequestFields:
    return SendRequestFields(
        correlation_id=draw(st.one_of(_varint_edges, _i64)),
        session_id=draw(_i64),
        producer_group=draw(_text),
        topic=draw(_text),
        queue_id=draw(st.one_of(st.sampled_from([-1, 0, 1, 127, 128]), _i32)),
        batch=draw(st.one_of(st.binary(max_size=300), st.just(b"b" * 20_000))),
    )


def _request_bytes(fields: SendRequestFields) -> bytes:
    request = session_pb2.TransportRequest(
        correlation_id=fields.correlation_id, session_id=fields.session_id, send=fields.message()
    )
    return request.SerializeToString()


@given(_send_requests())
@settings(max_examples=300, deadline=None)
def test_should_read_a_send_request_as_protobuf_reads_it(fields: SendRequestFields) -> None:
    data = _request_bytes(fields)
    assert read_send_request_py(data) == fields
    assert read_send_request(data) == fields
    assert type(read_send_request(data)) is SendRequestFields


@given(_send_requests(), st.data())
@settings(max_examples=300, deadline=None)
def test_should_read_damaged_send_requests_as_protobuf_does_or_leave_them_to_it(
    fields: SendRequestFields, data: st.DataObject
) -> None:
    damaged_bytes = damaged(_request_bytes(fields), data)
    fast = read_send_request(damaged_bytes)
    if fast is not None:  # what the fast path reads, protobuf reads alike
        assert fast == read_send_request_py(damaged_bytes)


def test_should_leave_every_other_send_request_to_protobuf() -> None:
    pull = session_pb2.TransportRequest(
        correlation_id=1, session_id=2, pull=messages_pb2.PullMessageRequest(topic="t")
    )
    connect = session_pb2.TransportRequest(correlation_id=1, connect=session_pb2.ConnectRequest())
    for request in (pull, connect, session_pb2.TransportRequest(correlation_id=1)):
        assert read_send_request(request.SerializeToString()) is None
    send = session_pb2.TransportRequest(
        correlation_id=1, session_id=2, send=messages_pb2.SendMessageRequest(topic="t")
    )
    unknown = send.SerializeToString() + b"\x78\x01"  # field 15, a varint: protobuf keeps it
    assert read_send_request(unknown) is None and read_send_request_py(unknown) is None
    reserved = session_pb2.TransportRequest(correlation_id=1, session_id=2).SerializeToString()
    data = reserved + b"\x6a\x02\x20\x01"  # send{field 4 (reserved): 1}: an unknown field
    assert read_send_request(data) is None and read_send_request_py(data) is None
    data = reserved + b"\x6a\x03\x12\x01\xff"  # send{topic: b"\xff"}: not UTF-8
    assert read_send_request(data) is None and read_send_request_py(data) is None


def test_should_merge_the_occurrences_of_the_send_body_as_protobuf_does() -> None:
    first = messages_pb2.SendMessageRequest(topic="a", queue_id=3, batch=b"xyz")
    second = messages_pb2.SendMessageRequest(producer_group="g", queue_id=-1)
    head = session_pb2.TransportRequest(correlation_id=7, session_id=8).SerializeToString()
    data = b"".join(
        head + bytes((0x6A, len(body))) + body
        for body in (first.SerializeToString(), second.SerializeToString())
    )
    fields = read_send_request(data)
    assert fields is not None and fields == read_send_request_py(data)
    assert fields == SendRequestFields(7, 8, "g", "a", -1, b"xyz")


@st.composite
def _answers(draw: st.DrawFn) -> tuple[int, int, StoredSendAnswer]:
    answer = StoredSendAnswer(
        queue_id=draw(st.one_of(st.integers(0, 64), _i32)),
        base_queue_offset=draw(st.one_of(_varint_edges, _i64)),
        message_count=draw(st.one_of(st.integers(0, 2), _i32)),
        base_commit_log_offset=draw(st.one_of(_varint_edges, _i64)),
        store_host=draw(st.one_of(st.just("127.0.0.1:10911"), _text)),
        broker_name=draw(st.one_of(st.just("broker-a"), _text, st.just("n" * 200))),
    )
    return draw(st.one_of(_varint_edges, _i64)), draw(st.one_of(st.just(0), _i64)), answer


@given(_answers())
@settings(max_examples=300, deadline=None)
def test_should_write_a_stored_send_answer_byte_for_byte_as_protobuf(
    answer: tuple[int, int, StoredSendAnswer],
) -> None:
    correlation_id, session_id, stored = answer
    fast = stored_send_envelope(correlation_id, session_id, stored)
    assert fast == stored_send_envelope_py(correlation_id, session_id, stored)
    message = session_pb2.TransportResponse.FromString(fast)
    assert (message.correlation_id, message.session_id) == (correlation_id, session_id)
    assert message.WhichOneof("body") == "send" and message.send == stored.message()


def test_should_refuse_stored_send_arguments_of_the_wrong_type() -> None:
    with pytest.raises(TypeError):
        native.stored_send(1, 2, (0, 0, 1, 0, b"host", "name"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.stored_send(1, 2, ("0", 0, 1, 0, "host", "name"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.stored_send(1, 2, (0, 0, 1, 0, "host"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.stored_send(1, 2, [0, 0, 1, 0, "host", "name"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.send_fields(dict, b"")  # type: ignore[type-var]
