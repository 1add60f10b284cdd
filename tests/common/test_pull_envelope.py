"""A pull's request and its stored answer in one native call each at the broker
(``common/_pull_envelope.py``, ``record_batch/_pull_envelope.c``): the request read as protobuf
reads it, or left to protobuf (None) for whatever the fast path does not cover; the answer byte
for byte what the Python reference (protobuf's serialisation and ``encode_envelope_around``)
writes, over generated ids, statuses, offsets and batches; at the client, the request written
byte for byte as protobuf writes it, and the answer read back straight from a buffer as the reference (``split_raw_section`` and protobuf) reads it,
refusals and everything else left to protobuf."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.common import (
    RESPONSE_FIELD_NUMBERS,
    PullAnswer,
    PulledAnswer,
    PulledAnswerFields,
    PullRequestBody,
    PullRequestFields,
    StoredPullAnswer,
    encode_envelope,
    encode_envelope_around,
    encode_pull_request,
    pull_request_py,
    read_pull_request,
    read_pull_request_py,
    read_pulled_answer,
    read_pulled_answer_py,
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


@given(_answers(), st.binary(max_size=40), st.binary(max_size=40))
@settings(max_examples=300, deadline=None)
def test_should_read_a_pull_answer_back_from_a_buffer_as_the_reference_reads_it(
    answer: tuple[int, int, StoredPullAnswer], before: bytes, after: bytes
) -> None:
    correlation_id, session_id, stored = answer
    envelope, length = stored_pull_envelope(correlation_id, session_id, stored)
    buffer = bytearray(before + _joined(envelope) + after)  # (a buffer, not bytes)
    expected = PulledAnswerFields(
        correlation_id,
        session_id,
        stored.response.pull_status,
        stored.response.next_begin_offset,
        stored.response.min_offset,
        stored.response.max_offset,
        b"".join(stored.pieces),
    )
    assert read_pulled_answer_py(buffer, len(before), length) == expected
    fast = read_pulled_answer(buffer, len(before), length)
    assert fast == expected and type(fast) is PulledAnswerFields


@given(_answers(), st.data())
@settings(max_examples=300, deadline=None)
def test_should_read_damaged_pull_answers_as_the_reference_does_or_leave_them_to_it(
    answer: tuple[int, int, StoredPullAnswer], data: st.DataObject
) -> None:
    correlation_id, session_id, stored = answer
    envelope, _ = stored_pull_envelope(correlation_id, session_id, stored)
    damaged_bytes = damaged(_joined(envelope), data)
    fast = read_pulled_answer(damaged_bytes, 0, len(damaged_bytes))
    if fast is not None:  # what the fast path reads, the reference reads alike
        assert fast == read_pulled_answer_py(damaged_bytes, 0, len(damaged_bytes))


def _response(**body: object) -> bytes:
    return session_pb2.TransportResponse(correlation_id=3, session_id=4, **body).SerializeToString()


def test_should_leave_refusals_local_reads_and_other_answers_to_protobuf() -> None:
    refused = messages_pb2.PullMessageResponse(next_begin_offset=5)
    refused.status.code = 24
    refused.status.message = "not the leader"
    ok_status = messages_pb2.PullMessageResponse(next_begin_offset=5)
    ok_status.status.SetInParent()  # a status of code 0, there all the same
    local = messages_pb2.PullMessageResponse(next_begin_offset=5, local_ranges=b"\x01")
    inline = messages_pb2.PullMessageResponse(next_begin_offset=5, batches=b"abc")
    send = messages_pb2.SendMessageResponse(queue_id=1)
    for data in (
        _response(pull=refused),
        _response(pull=ok_status),
        _response(pull=local),
        _response(pull=inline),
        _response(send=send),
        _response(keepalive=session_pb2.KeepAliveResponse()),
        _response(),  # no body
        _response(pull=messages_pb2.PullMessageResponse()) + b"\x78\x01",  # field 15
    ):
        assert read_pulled_answer(data, 0, len(data)) is None
        assert read_pulled_answer_py(data, 0, len(data)) is None
    bare = _response(pull=messages_pb2.PullMessageResponse())  # NO_NEW_MSG at offset 0
    assert read_pulled_answer(bare, 0, len(bare)) == PulledAnswerFields(3, 4, 0, 0, 0, 0, b"")


def test_should_leave_a_raw_section_anywhere_but_after_the_ids_to_protobuf() -> None:
    body = messages_pb2.PullMessageResponse(next_begin_offset=9).SerializeToString()
    head, tail = encode_envelope_around(3, 4, RESPONSE_FIELD_NUMBERS["pull"], body, 2)
    ids = head[: head.index(b"\xc2\x3e")]
    moved = ids + tail + head[len(ids) :] + b"ab"  # the section after the body
    assert read_pulled_answer(moved, 0, len(moved)) is None
    assert read_pulled_answer_py(moved, 0, len(moved)) is None
    past = head + b"a"  # a section of 2 bytes with 1 left in the message
    assert read_pulled_answer(past, 0, len(past)) is None
    assert read_pulled_answer_py(past, 0, len(past)) is None


def test_should_read_nothing_outside_the_buffer() -> None:
    data = _response(pull=messages_pb2.PullMessageResponse(next_begin_offset=1))
    for offset, length in ((0, len(data) + 1), (1, len(data)), (-1, 2), (0, -1)):
        assert read_pulled_answer(data, offset, length) is None
        assert read_pulled_answer_py(data, offset, length) is None
    with pytest.raises(TypeError):
        native.pulled_answer(tuple, data, "0", len(data))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.pulled_answer(dict, data, 0, len(data))  # type: ignore[type-var]
    with pytest.raises(TypeError):
        native.pulled_answer(tuple, "not a buffer", 0, 1)  # type: ignore[arg-type]


def test_should_answer_as_a_pull_answer_over_protobuf_does() -> None:
    response = messages_pb2.PullMessageResponse(
        pull_status=messages_pb2.NO_MATCHED_MSG, next_begin_offset=12, min_offset=2, max_offset=30
    )
    fields = PulledAnswerFields(1, 2, response.pull_status, 12, 2, 30, b"batch")
    pulled, over_protobuf = PulledAnswer(fields), PullAnswer(response, b"batch")
    for name in ("pull_status", "next_begin_offset", "min_offset", "max_offset", "local_ranges"):
        assert getattr(pulled, name) == getattr(over_protobuf, name), name
    assert pulled.status.code == 0 and not pulled.status.message
    assert pulled.response == response
    assert pulled.to_message() == over_protobuf.to_message()
    assert (pulled.batches, list(pulled.pieces)) == (b"batch", [b"batch"])
    assert repr(pulled) == repr(over_protobuf)


@given(_pull_requests())
@settings(max_examples=300, deadline=None)
def test_should_write_a_pull_request_byte_for_byte_as_protobuf(fields: PullRequestFields) -> None:
    body = PullRequestBody(*fields[2:])
    data = encode_pull_request(fields.correlation_id, fields.session_id, body)
    assert data == pull_request_py(fields.correlation_id, fields.session_id, body)
    assert read_pull_request(data) == fields  # and the broker reads it back as it was


def test_should_write_a_request_of_defaults_as_protobuf_does() -> None:
    empty = PullRequestBody("", "", 0, 0, 0, 0, "", 0, 0, 0, False)
    for ids in ((0, 0), (5, 0), (0, 7)):
        assert encode_pull_request(*ids, empty) == pull_request_py(*ids, empty)


def test_should_refuse_pull_request_values_as_protobuf_does() -> None:
    good = PullRequestBody("g", "t", 1, 2, 3, 4, "*", 0, 5, -1, False)
    for field, value in (
        ("queue_id", 1 << 31),
        ("max_msg_nums", -(1 << 31) - 1),
        ("queue_offset", 1 << 63),
        ("expression_type", 1 << 40),
    ):
        bad = good._replace(**{field: value})
        with pytest.raises(ValueError, match="out of range"):
            encode_pull_request(1, 2, bad)
        with pytest.raises(ValueError):
            pull_request_py(1, 2, bad)
    for field, value in (("queue_id", "1"), ("suspend_timeout_ms", 1.5)):
        bad = good._replace(**{field: value})
        with pytest.raises(TypeError, match=field):
            encode_pull_request(1, 2, bad)
        with pytest.raises(TypeError):
            pull_request_py(1, 2, bad)
    with pytest.raises(TypeError, match="topic"):  # (protobuf would take UTF-8 bytes too)
        encode_pull_request(1, 2, good._replace(topic=b"t"))
    with pytest.raises(TypeError):
        native.pull_request_encode(1, 2, tuple(good)[:10])  # type: ignore[arg-type]
