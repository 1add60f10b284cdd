"""A pull's request and its stored answer in one native call each at the broker
(``common/_pull_envelope.py``, ``record_batch/_pull_envelope.c``): the request read as protobuf
reads it, or left to protobuf (None) for whatever the fast path does not cover; the answer byte
for byte what the Python reference (protobuf's serialisation and ``encode_envelope_around``)
writes, over generated ids, statuses, offsets and batches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.common import (
    RESPONSE_FIELD_NUMBERS,
    PullRequestFields,
    StoredPullAnswer,
    encode_envelope,
    read_pull_request,
    read_pull_request_py,
    split_raw_section,
    stored_pull_envelope,
    stored_pull_envelope_py,
)
from aeromq.common.record_batch import _native as native
from aeromq.proto import messages_pb2, session_pb2

from ._damaged import damaged

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_i64 = st.integers(-(1 << 63), (1 << 63) - 1)
_i32 = st.integers(-(1 << 31), (1 << 31) - 1)


@st.composite
def _pull_requests(draw: st.DrawFn) -> PullRequestFields:
    return PullRequestFields(
        correlation_id=draw(_i64),
        session_id=draw(_i64),
        consumer_group=draw(_text),
        topic=draw(_text),
        queue_id=draw(_i32),
        queue_offset=draw(_i64),
        max_msg_nums=draw(_i32),
        max_bytes=draw(_i32),
        sub_expression=draw(_text),
        expression_type=draw(st.one_of(st.sampled_from([0, 1]), _i32)),
        suspend_timeout_ms=draw(_i64),
        commit_offset=draw(_i64),
        local_read=draw(st.booleans()),
    )


def _request_bytes(fields: PullRequestFields) -> bytes:
    request = session_pb2.TransportRequest(
        correlation_id=fields.correlation_id, session_id=fields.session_id, pull=fields.message()
    )
    return request.SerializeToString()


@given(_pull_requests())
@settings(max_examples=300, deadline=None)
def test_should_read_a_pull_request_as_protobuf_reads_it(fields: PullRequestFields) -> None:
    data = _request_bytes(fields)
    assert read_pull_request_py(data) == fields
    assert read_pull_request(data) == fields
    assert type(read_pull_request(data)) is PullRequestFields


@given(_pull_requests(), st.data())
@settings(max_examples=300, deadline=None)
def test_should_read_damaged_requests_as_protobuf_does_or_leave_them_to_it(
    fields: PullRequestFields, data: st.DataObject
) -> None:
    damaged_bytes = damaged(_request_bytes(fields), data)
    fast = read_pull_request(damaged_bytes)
    if fast is not None:  # what the fast path reads, protobuf reads alike
        assert fast == read_pull_request_py(damaged_bytes)


def test_should_leave_every_other_request_to_protobuf() -> None:
    send = session_pb2.TransportRequest(
        correlation_id=1, session_id=2, send=messages_pb2.SendMessageRequest(topic="t")
    )
    connect = session_pb2.TransportRequest(correlation_id=1, connect=session_pb2.ConnectRequest())
    keepalive = session_pb2.TransportRequest(
        correlation_id=1, session_id=2, keepalive=session_pb2.KeepAliveRequest()
    )
    for request in (send, connect, keepalive, session_pb2.TransportRequest(correlation_id=1)):
        assert read_pull_request(request.SerializeToString()) is None
    pull = session_pb2.TransportRequest(
        correlation_id=1, session_id=2, pull=messages_pb2.PullMessageRequest(topic="t")
    )
    unknown = pull.SerializeToString() + b"\x78\x01"  # field 15, a varint: protobuf keeps it
    assert read_pull_request(unknown) is None and read_pull_request_py(unknown) is None
    invalid_utf8 = session_pb2.TransportRequest(correlation_id=1, session_id=2)
    data = invalid_utf8.SerializeToString() + b"\x72\x03\x12\x01\xff"  # pull{topic: b"\xff"}
    assert read_pull_request(data) is None and read_pull_request_py(data) is None


def test_should_merge_the_occurrences_of_the_pull_body_as_protobuf_does() -> None:
    first = messages_pb2.PullMessageRequest(topic="a", queue_id=3, queue_offset=9)
    second = messages_pb2.PullMessageRequest(topic="b", max_msg_nums=5)
    head = session_pb2.TransportRequest(correlation_id=7, session_id=8).SerializeToString()
    data = b"".join(
        head + bytes((0x72, len(body))) + body
        for body in (first.SerializeToString(), second.SerializeToString())
    )
    fields = read_pull_request(data)
    assert fields is not None and fields == read_pull_request_py(data)
    assert (fields.topic, fields.queue_id, fields.queue_offset, fields.max_msg_nums) == (
        "b",
        3,
        9,
        5,
    )


@st.composite
def _answers(draw: st.DrawFn) -> tuple[int, int, StoredPullAnswer]:
    response = messages_pb2.PullMessageResponse(
        pull_status=draw(st.one_of(st.sampled_from([0, 1, 2, 3]), _i32)),  # type: ignore[arg-type]
        next_begin_offset=draw(st.one_of(st.integers(0, 1 << 40), _i64)),
        min_offset=draw(st.one_of(st.just(0), _i64)),
        max_offset=draw(st.one_of(st.integers(0, 1 << 40), _i64)),
    )
    pieces = draw(st.lists(st.binary(max_size=300), max_size=4))
    views = [memoryview(piece) for piece in pieces]
    answer = StoredPullAnswer(response, pieces=views)
    return draw(_i64), draw(_i64), answer


def _joined(envelope: list[bytes | memoryview] | bytes) -> bytes:
    return envelope if isinstance(envelope, bytes) else b"".join(envelope)


@given(_answers())
@settings(max_examples=300, deadline=None)
def test_should_write_a_stored_pull_answer_byte_for_byte_as_the_reference(
    answer: tuple[int, int, StoredPullAnswer],
) -> None:
    correlation_id, session_id, stored = answer
    fast, fast_length = stored_pull_envelope(correlation_id, session_id, stored)
    slow, slow_length = stored_pull_envelope_py(correlation_id, session_id, stored)
    assert _joined(fast) == _joined(slow) and fast_length == slow_length == len(_joined(slow))
    message = session_pb2.TransportResponse.FromString(_joined(fast))
    assert (message.correlation_id, message.session_id) == (correlation_id, session_id)
    assert message.pull == stored.response
    if stored.pieces:  # the views themselves go to the offer, not copies
        assert isinstance(fast, list)
        assert all(a is b for a, b in zip(fast[1:-1], stored.pieces, strict=True))
        section = split_raw_section(_joined(fast), fast_length)
        assert section is not None
        raw = _joined(fast)[section.offset : section.offset + section.length]
        assert raw == b"".join(stored.pieces)
    else:
        body = stored.response.SerializeToString()
        expected = encode_envelope(correlation_id, session_id, RESPONSE_FIELD_NUMBERS["pull"], body)
        assert fast == expected


def test_should_refuse_arguments_of_the_wrong_type() -> None:
    with pytest.raises(TypeError):
        native.pull_answer(1, 2, 0, 0, 0, 0, "not a list")  # type: ignore[type-var]
    with pytest.raises(TypeError):
        native.pull_answer(1, 2, 0, "0", 0, 0, [])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.pull_answer(1, 2, 0, 0, 0, 0, [object()])  # type: ignore[type-var]
    with pytest.raises(TypeError):
        native.pull_request(dict, b"")  # type: ignore[type-var]
