"""The session envelope written by hand: protobuf parses it as the whole message."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.common import (
    REQUEST_FIELD_NUMBERS,
    RESPONSE_FIELD_NUMBERS,
    encode_envelope,
    salvage_envelope_ids,
    with_ipc_mtu,
)
from aeromq.proto import messages_pb2, session_pb2

_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def test_should_number_the_bodies_as_the_schema_does() -> None:
    assert {
        field.name: field.number
        for field in session_pb2.TransportRequest.DESCRIPTOR.oneofs_by_name["body"].fields
    } == REQUEST_FIELD_NUMBERS
    assert set(RESPONSE_FIELD_NUMBERS) == {"connect", "send", "pull", "error", "keepalive"}


@given(_INT64, _INT64, st.text(max_size=50), st.binary(max_size=300))
def test_should_parse_as_a_transport_request_with_its_ids_and_body(
    correlation_id: int, session_id: int, topic: str, body: bytes
) -> None:
    send = messages_pb2.SendMessageRequest(topic=topic, batch=body)
    data = encode_envelope(
        correlation_id, session_id, REQUEST_FIELD_NUMBERS["send"], send.SerializeToString()
    )
    parsed = session_pb2.TransportRequest.FromString(data)
    assert (parsed.correlation_id, parsed.session_id) == (correlation_id, session_id)
    assert parsed.WhichOneof("body") == "send" and parsed.send == send
    assert salvage_envelope_ids(data) == (correlation_id, session_id)


def test_should_carry_an_empty_body_as_a_set_oneof() -> None:
    data = encode_envelope(1, 2, REQUEST_FIELD_NUMBERS["keepalive"], b"")
    assert session_pb2.TransportRequest.FromString(data).WhichOneof("body") == "keepalive"


def test_should_salvage_ids_from_a_torn_envelope_and_nothing_from_garbage() -> None:
    data = encode_envelope(77, 88, REQUEST_FIELD_NUMBERS["pull"], b"\x0a\x05hello")
    assert salvage_envelope_ids(data[:-3]) == (77, 88)
    assert salvage_envelope_ids(data[:3]) == (77, 0)
    assert salvage_envelope_ids(b"\xff\xfe\xfd") == (0, 0)
    assert salvage_envelope_ids(b"") == (0, 0)


@pytest.mark.parametrize(
    ("channel", "expected"),
    [
        ("aeron:ipc", "aeron:ipc?mtu=65504"),
        ("aeron:ipc?term-length=65536", "aeron:ipc?term-length=65536|mtu=65504"),
        ("aeron:ipc?mtu=1408", "aeron:ipc?mtu=1408"),
        ("aeron:udp?endpoint=127.0.0.1:40456", "aeron:udp?endpoint=127.0.0.1:40456"),
    ],
)
def test_should_give_ipc_session_channels_the_largest_mtu_unless_they_name_one(
    channel: str, expected: str
) -> None:
    assert with_ipc_mtu(channel) == expected
