from __future__ import annotations

import re
import struct
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.transport import protocol as p
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol import (
    data_header_flyweight,
    error_flyweight,
    header_flyweight,
    nak_flyweight,
    rttm_flyweight,
    setup_flyweight,
    status_message_flyweight,
)

I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
FLAGS = st.integers(0, 255)


def _diagram_offsets(module: ModuleType) -> list[int]:
    assert module.__doc__ is not None
    return [int(m) for m in re.findall(r"^\s*(\d+) \|", module.__doc__, flags=re.MULTILINE)]


# Aeron's C structs in aeron_udp_protocol.h (#pragma pack(4)): the header is i32, i8, u8, i16.
@pytest.mark.parametrize(
    ("length", "c_struct"),
    [
        (p.MIN_HEADER_LENGTH, "<ibBh"),  # aeron_frame_header_t
        (p.DATA_HEADER_LENGTH, "<ibBhiiiiq"),  # aeron_data_header_t
        (p.SETUP_HEADER_LENGTH, "<ibBhiiiiiiii"),  # aeron_setup_header_t
        (p.SM_HEADER_LENGTH, "<ibBhiiiiiq"),  # aeron_status_message_header_t
        (p.SM_HEADER_LENGTH_WITH_GROUP_TAG, "<ibBhiiiiiqq"),  # + optional group tag
        (p.NAK_HEADER_LENGTH, "<ibBhiiiii"),  # aeron_nak_header_t
        (p.RTTM_HEADER_LENGTH, "<ibBhiiqqq"),  # aeron_rttm_header_t
        (p.ERR_HEADER_LENGTH, "<ibBhiiqqii"),  # aeron_error_t
        (p.RSP_SETUP_HEADER_LENGTH, "<ibBhiii"),  # aeron_response_setup_header_t
        (p.MAX_ERROR_FRAME_LENGTH, "<ibBhiiqqii1023s"),
    ],
)
def test_should_match_the_length_of_aerons_c_struct(length: int, c_struct: str) -> None:
    assert length == struct.calcsize(c_struct)


@pytest.mark.parametrize(
    ("module", "offsets"),
    [
        (header_flyweight, [0, 4, 8]),
        (data_header_flyweight, [0, 4, 8, 12, 16, 20, 24, 32]),
        (setup_flyweight, [0, 4, 8, 12, 16, 20, 24, 28, 32, 36]),
        (status_message_flyweight, [0, 4, 8, 12, 16, 20, 24, 28, 36]),
        (nak_flyweight, [0, 4, 8, 12, 16, 20, 24]),
        (rttm_flyweight, [0, 4, 8, 12, 16, 24, 32]),
        (error_flyweight, [0, 4, 8, 12, 16, 24, 32, 36, 40]),
    ],
)
def test_should_document_every_field_offset_in_the_diagram(
    module: ModuleType, offsets: list[int]
) -> None:
    assert _diagram_offsets(module) == offsets
    field_offsets = {
        value
        for name, value in vars(module).items()
        if name.endswith("FIELD_OFFSET") and isinstance(value, int)
    }
    # Flags and type share the row at 4 with the version: the only fields narrower than a row.
    assert field_offsets <= {*offsets, p.FLAGS_FIELD_OFFSET, p.TYPE_FIELD_OFFSET}


def test_should_write_a_setup_frame_as_aeron_lays_it_out() -> None:
    buffer = AtomicBuffer.allocate(64)
    length = p.SetupFlyweight(buffer, 8).put_setup(
        session_id=-17,
        stream_id=1001,
        initial_term_id=5,
        active_term_id=9,
        term_offset=4096,
        term_length=65536,
        mtu=1408,
        ttl=4,
        flags=p.SETUP_SEND_RESPONSE_FLAG,
    )
    expected = struct.pack("<ibBhiiiiiiii", 40, 0, 0x80, 5, 4096, -17, 1001, 5, 9, 65536, 1408, 4)
    assert buffer.get_bytes(8, length) == expected


def test_should_write_a_status_message_with_and_without_group_tag() -> None:
    buffer = AtomicBuffer.allocate(64)
    flyweight = p.StatusMessageFlyweight(buffer)
    fields = {
        "session_id": 1,
        "stream_id": 2,
        "consumption_term_id": 3,
        "consumption_term_offset": 64,
        "receiver_window": 131072,
        "receiver_id": -5,
    }
    length = flyweight.put_status_message(**fields, flags=p.SM_EOS_FLAG)
    assert buffer.get_bytes(0, length) == struct.pack(
        "<ibBhiiiiiq", 36, 0, 0x40, 3, 1, 2, 3, 64, 131072, -5
    )
    assert flyweight.group_tag is None
    length = flyweight.put_status_message(**fields, group_tag=7)
    assert buffer.get_bytes(0, length) == struct.pack(
        "<ibBhiiiiiqq", 44, 0, 0, 3, 1, 2, 3, 64, 131072, -5, 7
    )
    assert flyweight.group_tag == 7


def test_should_write_nak_and_rttm_frames_as_aeron_lays_them_out() -> None:
    buffer = AtomicBuffer.allocate(64)
    length = p.NakFlyweight(buffer).put_nak(
        session_id=1, stream_id=2, term_id=3, term_offset=96, length=1408
    )
    assert buffer.get_bytes(0, length) == struct.pack("<ibBhiiiii", 28, 0, 0, 2, 1, 2, 3, 96, 1408)
    length = p.RttmFlyweight(buffer).put_rttm(
        session_id=1,
        stream_id=2,
        echo_timestamp_ns=10**12,
        reception_delta_ns=250,
        receiver_id=99,
        flags=p.RTTM_REPLY_FLAG,
    )
    assert buffer.get_bytes(0, length) == struct.pack(
        "<ibBhiiqqq", 40, 0, 0x80, 6, 1, 2, 10**12, 250, 99
    )


def test_should_write_an_error_frame_with_its_text_and_group_tag_flag() -> None:
    buffer = AtomicBuffer.allocate(2048)
    flyweight = p.ErrorFlyweight(buffer)
    length = flyweight.put_error(
        session_id=1, stream_id=2, receiver_id=3, error_code=13, error_message="no", group_tag=9
    )
    assert (
        buffer.get_bytes(0, length)
        == struct.pack("<ibBhiiqqii", 42, 0, 0x08, 4, 1, 2, 3, 9, 13, 2) + b"no"
    )
    assert (flyweight.group_tag, flyweight.error_code, flyweight.error_message) == (9, 13, "no")
    length = flyweight.put_error(
        session_id=1, stream_id=2, receiver_id=3, error_code=13, error_message="x" * 2000
    )
    assert length == p.MAX_ERROR_FRAME_LENGTH
    assert flyweight.group_tag is None
    assert flyweight.error_message == "x" * p.MAX_ERROR_MESSAGE_LENGTH


def test_should_write_the_default_header_and_heartbeats() -> None:
    buffer = AtomicBuffer.allocate(64)
    flyweight = p.DataHeaderFlyweight(buffer)
    flyweight.put_default_header(session_id=-3, stream_id=1001, term_id=77)
    assert buffer.get_bytes(0, 32) == struct.pack("<ibBhiiiiq", 0, 0, 0xC0, 1, 0, -3, 1001, 77, 0)
    flyweight.put_heartbeat(session_id=-3, stream_id=1001, term_id=78, term_offset=4096)
    assert buffer.get_bytes(0, 32) == struct.pack(
        "<ibBhiiiiq", 0, 0, 0xC0, 1, 4096, -3, 1001, 78, 0
    )
    assert flyweight.is_heartbeat(32)
    assert not flyweight.is_end_of_stream()
    flyweight.put_heartbeat(
        session_id=-3, stream_id=1001, term_id=78, term_offset=4096, end_of_stream=True
    )
    assert flyweight.flags == p.BEGIN_END_AND_EOS_FLAGS == 0xE0
    assert flyweight.is_end_of_stream()
    assert not flyweight.is_heartbeat(64)


@settings(max_examples=50, deadline=None)
@given(
    offset=st.integers(0, 64),
    frame_length=I32,
    flags=FLAGS,
    term_offset=I32,
    session_id=I32,
    stream_id=I32,
    term_id=I32,
    reserved_value=I64,
)
def test_should_read_back_every_data_header_field(
    offset: int,
    frame_length: int,
    flags: int,
    term_offset: int,
    session_id: int,
    stream_id: int,
    term_id: int,
    reserved_value: int,
) -> None:
    flyweight = p.DataHeaderFlyweight(AtomicBuffer.allocate(128), offset)
    flyweight.put_data_header(
        frame_length=frame_length,
        flags=flags,
        header_type=p.HDR_TYPE_DATA,
        term_offset=term_offset,
        session_id=session_id,
        stream_id=stream_id,
        term_id=term_id,
        reserved_value=reserved_value,
    )
    assert (
        flyweight.frame_length,
        flyweight.version,
        flyweight.flags,
        flyweight.header_type,
        flyweight.term_offset,
        flyweight.session_id,
        flyweight.stream_id,
        flyweight.term_id,
        flyweight.reserved_value,
        flyweight.data_offset,
    ) == (
        frame_length,
        0,
        flags,
        p.HDR_TYPE_DATA,
        term_offset,
        session_id,
        stream_id,
        term_id,
        reserved_value,
        offset + 32,
    )


@settings(max_examples=50, deadline=None)
@given(values=st.tuples(I32, I32, I32, I32, I32, I32, I32, I32), flags=FLAGS)
def test_should_read_back_every_setup_field_through_its_setters(
    values: tuple[int, ...], flags: int
) -> None:
    flyweight = p.SetupFlyweight(AtomicBuffer.allocate(64), 16)
    names = (
        "term_offset",
        "session_id",
        "stream_id",
        "initial_term_id",
        "active_term_id",
        "term_length",
        "mtu",
        "ttl",
    )
    for name, value in zip(names, values, strict=True):
        setattr(flyweight, name, value)
    flyweight.flags = flags
    assert tuple(getattr(flyweight, name) for name in names) == values
    assert flyweight.flags == flags


@settings(max_examples=50, deadline=None)
@given(ints=st.tuples(I32, I32, I32, I32, I32), receiver_id=I64, longs=st.tuples(I64, I64))
def test_should_read_back_every_control_frame_field_through_its_setters(
    ints: tuple[int, ...], receiver_id: int, longs: tuple[int, int]
) -> None:
    buffer = AtomicBuffer.allocate(128)
    sm = p.StatusMessageFlyweight(buffer, 4)
    sm.session_id, sm.stream_id, sm.consumption_term_id = ints[:3]
    sm.consumption_term_offset, sm.receiver_window = ints[3:]
    sm.receiver_id = receiver_id
    assert (
        sm.session_id,
        sm.stream_id,
        sm.consumption_term_id,
        sm.consumption_term_offset,
        sm.receiver_window,
    ) == ints
    assert sm.receiver_id == receiver_id
    nak = p.NakFlyweight(buffer, 8)
    nak.session_id, nak.stream_id, nak.term_id, nak.term_offset, nak.length = ints
    assert (nak.session_id, nak.stream_id, nak.term_id, nak.term_offset, nak.length) == ints
    rttm = p.RttmFlyweight(buffer, 16)
    rttm.session_id, rttm.stream_id = ints[:2]
    rttm.echo_timestamp_ns, rttm.reception_delta_ns = longs
    rttm.receiver_id = receiver_id
    assert (rttm.session_id, rttm.stream_id) == ints[:2]
    assert (rttm.echo_timestamp_ns, rttm.reception_delta_ns, rttm.receiver_id) == (
        *longs,
        receiver_id,
    )
    err = p.ErrorFlyweight(buffer, 24)
    err.session_id, err.stream_id, err.error_code = ints[:3]
    err.receiver_id = receiver_id
    assert (err.session_id, err.stream_id, err.error_code, err.receiver_id) == (
        *ints[:3],
        receiver_id,
    )


def test_should_move_to_another_frame_on_wrap() -> None:
    first = AtomicBuffer.allocate(64)
    second = AtomicBuffer.allocate(64)
    p.NakFlyweight(second, 32).put_nak(
        session_id=5, stream_id=6, term_id=7, term_offset=0, length=32
    )
    flyweight = p.NakFlyweight(first)
    assert flyweight.wrap(second, 32) is flyweight
    assert (flyweight.session_id, flyweight.header_type, flyweight.offset) == (
        5,
        p.HDR_TYPE_NAK,
        32,
    )
    assert "NakFlyweight(offset=32, frame_length=28" in repr(flyweight)


def test_should_export_a_sorted_all_of_importable_names() -> None:
    # ruff's isort-style order (RUF022): CONSTANTS, then Classes, then functions.
    def order(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert p.__all__ == sorted(p.__all__, key=order)
    assert all(hasattr(p, name) for name in p.__all__)
