from __future__ import annotations

import re
import struct
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.transport import command as c
from aeromq.transport._errors import (
    ConfigurationError,
    IndexOutOfBoundsError,
    MalformedCommandError,
)
from aeromq.transport.concurrent import AtomicBuffer
from tests.transport.command.specs import ENCODE_CAPACITY, SPEC_IDS, SPECS, Spec, sample_values


def _buffer(data: bytes, capacity: int = 512) -> AtomicBuffer:
    buffer = AtomicBuffer.allocate(capacity)
    buffer.put_bytes(0, data)
    return buffer


def _diagram_offsets(module: Any) -> list[int]:
    """The byte offsets written in the left margin of a module's diagram (``" 16 |"``)."""
    return [int(m) for m in re.findall(r"^\s*(\d+) \|", module.__doc__, flags=re.MULTILINE)]


# The fixed part of each message, as the C structs of aeron_control_protocol.h lay it out
# (#pragma pack(4): no padding anywhere, since every field lands on its own size or 4).
@pytest.mark.parametrize(
    ("length", "c_struct"),
    [
        (c.CORRELATED_MESSAGE_LENGTH, "<qq"),  # aeron_correlated_command_t
        (c.PUBLICATION_MESSAGE_LENGTH, "<qqii"),  # aeron_publication_command_t
        (c.SUBSCRIPTION_MESSAGE_LENGTH, "<qqqii"),  # aeron_subscription_command_t
        (c.REMOVE_MESSAGE_LENGTH, "<qqq"),  # aeron_remove_command_t
        (c.REMOVE_PUBLICATION_MESSAGE_LENGTH, "<qqqq"),  # with the flags word
        (c.COUNTER_MESSAGE_LENGTH, "<qqi"),  # aeron_counter_command_t
        (c.TERMINATE_DRIVER_MESSAGE_LENGTH, "<qqi"),  # aeron_terminate_driver_command_t
        (c.PUBLICATION_READY_LENGTH, "<qqiiiii"),  # aeron_publication_buffers_ready_t
        (c.SUBSCRIPTION_READY_LENGTH, "<qi"),  # aeron_subscription_ready_t
        (c.IMAGE_READY_LENGTH, "<qiiqi"),  # aeron_image_buffers_ready_t
        (c.IMAGE_MESSAGE_LENGTH, "<qqii"),  # aeron_image_message_t
        (c.ERROR_RESPONSE_LENGTH, "<qii"),  # aeron_error_response_t
        (c.OPERATION_SUCCEEDED_LENGTH, "<q"),  # aeron_operation_succeeded_t
        (c.COUNTER_UPDATE_LENGTH, "<qi"),  # aeron_counter_update_t
        (c.CLIENT_TIMEOUT_LENGTH, "<q"),  # aeron_client_timeout_t
    ],
)
def test_should_match_the_length_of_aerons_c_struct(length: int, c_struct: str) -> None:
    assert length == struct.calcsize(c_struct)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_should_document_every_field_offset_in_the_diagram(spec: Spec) -> None:
    assert tuple(_diagram_offsets(spec.module)) == spec.diagram_offsets
    own_offsets = {
        value
        for name, value in vars(spec.module).items()
        if name.endswith(("_OFFSET", "_LENGTH")) and name.isupper() and isinstance(value, int)
    }
    assert own_offsets <= {*spec.diagram_offsets, spec.fixed_length}


def test_should_encode_publication_message_as_aeron_lays_it_out() -> None:
    buffer = AtomicBuffer.allocate(64)
    length = c.encode_publication_message(
        buffer, 0, client_id=7, correlation_id=42, stream_id=1001, channel="aeron:ipc"
    )
    assert buffer.get_bytes(0, length) == struct.pack("<qqii", 7, 42, 1001, 9) + b"aeron:ipc"


def test_should_encode_subscription_message_as_aeron_lays_it_out() -> None:
    buffer = AtomicBuffer.allocate(64)
    length = c.encode_subscription_message(
        buffer,
        0,
        client_id=7,
        correlation_id=43,
        registration_correlation_id=-1,
        stream_id=1001,
        channel="aeron:ipc",
    )
    expected = struct.pack("<qqqii", 7, 43, -1, 1001, 9) + b"aeron:ipc"
    assert buffer.get_bytes(0, length) == expected


def test_should_pad_the_log_file_name_of_image_buffers_ready_to_four_bytes() -> None:
    buffer = _buffer(b"\xff" * 128)
    length = c.encode_image_buffers_ready(
        buffer,
        0,
        correlation_id=5,
        session_id=-9,
        stream_id=1001,
        subscriber_registration_id=6,
        subscriber_position_id=3,
        log_file_name="/dev/shm/a/5.logbuffer",  # 22 bytes: 2 bytes of padding
        source_identity="aeron:ipc",
    )
    expected = (
        struct.pack("<qiiqi", 5, -9, 1001, 6, 3)
        + struct.pack("<i", 22)
        + b"/dev/shm/a/5.logbuffer\x00\x00"
        + struct.pack("<i", 9)
        + b"aeron:ipc"
    )
    assert buffer.get_bytes(0, length) == expected
    assert length == 28 + 4 + 24 + 4 + 9


def test_should_pad_the_key_of_counter_message_to_four_bytes() -> None:
    buffer = _buffer(b"\xff" * 128)
    length = c.encode_counter_message(
        buffer,
        0,
        client_id=1,
        correlation_id=2,
        type_id=1001,
        key=b"\x01\x02\x03\x04\x05",
        label="L",
    )
    expected = (
        struct.pack("<qqi", 1, 2, 1001)
        + struct.pack("<i", 5)
        + b"\x01\x02\x03\x04\x05\x00\x00\x00"
        + struct.pack("<i", 1)
        + b"L"
    )
    assert buffer.get_bytes(0, length) == expected


def test_should_not_pad_the_log_file_name_of_publication_buffers_ready() -> None:
    buffer = AtomicBuffer.allocate(128)
    length = c.encode_publication_buffers_ready(
        buffer,
        0,
        correlation_id=1,
        registration_id=2,
        session_id=3,
        stream_id=4,
        position_limit_counter_id=5,
        channel_status_indicator_id=-1,
        log_file_name="x.log",
    )
    assert buffer.get_bytes(0, length) == struct.pack("<qqiiiii", 1, 2, 3, 4, 5, -1, 5) + b"x.log"


def test_should_encode_remove_publication_with_flags_and_terminate_driver_with_token() -> None:
    buffer = AtomicBuffer.allocate(64)
    length = c.encode_remove_publication_message(
        buffer,
        0,
        client_id=1,
        correlation_id=2,
        registration_id=3,
        flags=c.REMOVE_PUBLICATION_FLAG_REVOKE,
    )
    assert buffer.get_bytes(0, length) == struct.pack("<qqqq", 1, 2, 3, 1)
    length = c.encode_terminate_driver_message(
        buffer, 0, client_id=1, correlation_id=2, token=b"ok"
    )
    assert buffer.get_bytes(0, length) == struct.pack("<qqi", 1, 2, 2) + b"ok"


def test_should_decode_a_remove_publication_from_before_the_flags_word() -> None:
    buffer = _buffer(struct.pack("<qqq", 1, 2, 3))
    message = c.decode_remove_publication_message(buffer, 0, 24)
    assert message == c.RemovePublicationMessage(1, 2, 3, 0)
    assert not message.revoke
    assert c.decode_remove_publication_message(
        _buffer(struct.pack("<qqqq", 1, 2, 3, 1)), 0, 32
    ).revoke


def test_should_ignore_bytes_after_the_last_known_field() -> None:
    buffer = _buffer(struct.pack("<qi", 9, 4) + b"future")
    assert c.decode_subscription_ready(buffer, 0, 18) == c.SubscriptionReady(9, 4)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
@settings(max_examples=60, deadline=None)
@given(data=st.data(), offset=st.integers(0, 64))
def test_should_round_trip_every_message(spec: Spec, data: st.DataObject, offset: int) -> None:
    values = {name: data.draw(strategy, label=name) for name, strategy in spec.fields.items()}
    buffer = AtomicBuffer.allocate(ENCODE_CAPACITY)
    length = spec.encode(buffer, offset, **values)
    decoded = spec.decode(buffer, offset, length)
    assert asdict(decoded) == values


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_should_reject_every_truncation_of_every_message(spec: Spec) -> None:
    values = sample_values(spec)
    buffer = AtomicBuffer.allocate(512)
    length = spec.encode(buffer, 0, **values)
    accepted = {24} if spec.name == "remove publication" else set()  # the pre-flags form
    for truncated in range(length):
        if truncated in accepted:
            continue
        with pytest.raises(MalformedCommandError, match=r"command='[a-z ]+' field='\w+'"):
            spec.decode(buffer, 0, truncated)


def test_should_name_field_offset_and_lengths_of_a_truncated_message() -> None:
    buffer = _buffer(struct.pack("<qqii", 1, 2, 1001, 9) + b"aeron:ip")
    with pytest.raises(MalformedCommandError) as caught:
        c.decode_publication_message(buffer, 0, 32)
    assert str(caught.value) == (
        "length field does not fit the message: command='publication message' "
        "field='channel' field_offset=20 field_length=9 length=32"
    )
    assert caught.value.field == "channel"


def test_should_reject_a_negative_string_length() -> None:
    buffer = _buffer(struct.pack("<qii", 1, 11, -4))
    with pytest.raises(
        MalformedCommandError, match="field='error_message' field_offset=12 field_length=-4"
    ):
        c.decode_error_response(buffer, 0, 16)


def test_should_reject_a_source_identity_that_overruns_the_padded_log_file_name() -> None:
    buffer = AtomicBuffer.allocate(128)
    length = c.encode_image_buffers_ready(
        buffer,
        0,
        correlation_id=1,
        session_id=2,
        stream_id=3,
        subscriber_registration_id=4,
        subscriber_position_id=5,
        log_file_name="abc",
        source_identity="src",
    )
    buffer.put_int32(36, 50)  # source identity length, after the name padded to 4
    with pytest.raises(MalformedCommandError, match="field='source_identity' field_offset=36"):
        c.decode_image_buffers_ready(buffer, 0, length)


def test_should_reject_a_channel_that_is_not_utf8() -> None:
    buffer = _buffer(struct.pack("<qqii", 1, 2, 3, 2) + b"\xc3\x28")
    with pytest.raises(MalformedCommandError, match=r"text is not UTF-8.*field=.channel."):
        c.decode_publication_message(buffer, 0, 26)


def test_should_replace_undecodable_bytes_in_free_text() -> None:
    buffer = _buffer(struct.pack("<qii", 1, 11, 2) + b"\xc3\x28")
    assert c.decode_error_response(buffer, 0, 18).error_message == "\ufffd("


@pytest.mark.parametrize(("offset", "length"), [(-1, 8), (0, -1), (500, 16), (0, 513)])
def test_should_reject_a_message_outside_its_buffer(offset: int, length: int) -> None:
    with pytest.raises(MalformedCommandError, match="message lies outside its buffer"):
        c.decode_client_timeout(AtomicBuffer.allocate(512), offset, length)


def test_should_refuse_to_encode_past_the_buffer_without_writing() -> None:
    buffer = AtomicBuffer.allocate(32)
    with pytest.raises(IndexOutOfBoundsError, match="buffer too small for message"):
        c.encode_publication_message(
            buffer, 0, client_id=1, correlation_id=2, stream_id=3, channel="aeron:ipc"
        )
    assert buffer.get_bytes(0, 32) == bytes(32)


def test_should_refuse_to_encode_text_that_has_no_utf8_form() -> None:
    with pytest.raises(ConfigurationError, match="text cannot be encoded: field='channel' at=5"):
        c.encode_publication_message(
            AtomicBuffer.allocate(64),
            0,
            client_id=1,
            correlation_id=2,
            stream_id=3,
            channel="aeron\ud800",
        )
