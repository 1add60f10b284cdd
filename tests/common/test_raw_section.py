"""A response's raw section (a pull answer's batches beside its body): written in pieces, found
from the message's head alone, and refused with a typed error when it does not fit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.common import (
    ENVELOPE_HEAD_MAX_LENGTH,
    RAW_SECTION_FIELD,
    RESPONSE_FIELD_NUMBERS,
    CorruptMessageError,
    PullAnswer,
    encode_envelope,
    encode_envelope_around,
    split_raw_section,
)
from aeromq.proto import messages_pb2, session_pb2

_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_PULL = RESPONSE_FIELD_NUMBERS["pull"]


def _answer(correlation_id: int, session_id: int, raw: bytes) -> tuple[bytes, bytes]:
    """A pull answer with ``raw`` as its raw section, and its body."""
    body = messages_pb2.PullMessageResponse(next_begin_offset=7, max_offset=9).SerializeToString()
    head, tail = encode_envelope_around(correlation_id, session_id, _PULL, body, len(raw))
    return head + raw + tail, body


def test_should_number_the_raw_section_apart_from_every_response_field() -> None:
    numbers = {field.number for field in session_pb2.TransportResponse.DESCRIPTOR.fields}
    assert RAW_SECTION_FIELD not in numbers


@given(_INT64, _INT64, st.binary(max_size=2000))
def test_should_find_the_raw_section_and_leave_the_ids_and_body_to_protobuf(
    correlation_id: int, session_id: int, raw: bytes
) -> None:
    message, body = _answer(correlation_id, session_id, raw)
    section = split_raw_section(message[:ENVELOPE_HEAD_MAX_LENGTH], len(message))
    assert section is not None
    assert message[section.offset : section.offset + section.length] == raw
    rest = message[: section.tag_offset] + message[section.offset + section.length :]
    parsed = session_pb2.TransportResponse.FromString(rest)
    assert (parsed.correlation_id, parsed.session_id) == (correlation_id, session_id)
    assert parsed.pull.SerializeToString() == body
    # and the whole message is still a TransportResponse (the section an unknown field)
    whole = session_pb2.TransportResponse.FromString(message)
    assert whole.pull.next_begin_offset == 7 and whole.correlation_id == correlation_id


@given(_INT64, _INT64)
def test_should_find_no_raw_section_in_a_plain_envelope(
    correlation_id: int, session_id: int
) -> None:
    data = encode_envelope(correlation_id, session_id, _PULL, b"\x18\x05")
    assert split_raw_section(data[:ENVELOPE_HEAD_MAX_LENGTH], len(data)) is None


def test_should_find_no_raw_section_in_bytes_that_are_not_an_envelope() -> None:
    for data in (b"", b"\x08", b"\x08\xff\xff", b"garbage", b"\x08\x01\x10"):
        assert split_raw_section(data, len(data)) is None


@pytest.mark.parametrize("cut", [1, 100, 4095])
def test_should_refuse_a_raw_section_cut_short_with_the_ids(cut: int) -> None:
    message, _ = _answer(42, 77, b"b" * 4096)
    torn = message[: message.index(b"b") + 4096 - cut]  # ends inside the raw section
    with pytest.raises(CorruptMessageError, match="raw section runs past its message") as caught:
        split_raw_section(torn[:ENVELOPE_HEAD_MAX_LENGTH], len(torn))
    assert (caught.value.correlation_id, caught.value.session_id) == (42, 77)
    assert caught.value.raw_length == 4096


def test_should_refuse_a_raw_length_whose_varint_is_cut_or_too_long() -> None:
    head, _ = encode_envelope_around(1, 2, _PULL, b"", 300)  # the length takes two bytes
    with pytest.raises(CorruptMessageError, match="raw_length=-1"):
        split_raw_section(head[:-1], len(head) - 1)
    endless = head[:-2] + b"\xff" * 11
    with pytest.raises(CorruptMessageError, match="raw_length=-1"):
        split_raw_section(endless, len(endless) + 1000)


@given(st.binary(max_size=64), st.integers(min_value=0, max_value=1 << 20))
def test_should_never_fail_otherwise_on_arbitrary_heads(head: bytes, extra: int) -> None:
    try:
        section = split_raw_section(head, len(head) + extra)
    except CorruptMessageError:
        return
    if section is not None:
        assert section.offset + section.length <= len(head) + extra


def test_should_read_a_pull_answer_as_its_response_with_the_raw_batches() -> None:
    response = messages_pb2.PullMessageResponse(
        pull_status=messages_pb2.NO_MATCHED_MSG, next_begin_offset=5, min_offset=1, max_offset=8
    )
    answer = PullAnswer(response, b"raw")
    assert (answer.pull_status, answer.next_begin_offset, answer.min_offset, answer.max_offset) == (
        messages_pb2.NO_MATCHED_MSG,
        5,
        1,
        8,
    )
    assert answer.batches == b"raw" and answer.status.code == 0
    assert answer.to_message().batches == b"raw" and not response.batches
    inside = PullAnswer(messages_pb2.PullMessageResponse(batches=b"inside"))
    assert inside.batches == b"inside"  # an answer that carried them in the protobuf body
