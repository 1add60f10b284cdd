from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.transport import protocol as p
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol import FrameStatus

CAPACITY = 2048


def _datagram(data: bytes, offset: int = 0) -> AtomicBuffer:
    buffer = AtomicBuffer.allocate(CAPACITY)
    buffer.put_bytes(offset, data)
    return buffer


def _data_frame(term_offset: int, payload: bytes, flags: int = 0xC0, term_id: int = 5) -> bytes:
    header = struct.pack(
        "<ibBhiiiiq", 32 + len(payload), 0, flags, 1, term_offset, 7, 1001, term_id, 0
    )
    frame = header + payload
    return frame + bytes(-len(frame) % 32)


def _pad_header(term_offset: int, pad_length: int) -> bytes:
    return struct.pack("<ibBhiiiiq", pad_length, 0, 0xC0, 0, term_offset, 7, 1001, 5, 0)


def _setup(**overrides: int) -> bytes:
    fields = {
        "frame_length": 40,
        "term_offset": 0,
        "term_length": 65536,
        "mtu": 1408,
    } | overrides
    return struct.pack(
        "<ibBhiiiiiiii",
        fields["frame_length"],
        0,
        0,
        5,
        fields["term_offset"],
        7,
        1001,
        5,
        5,
        fields["term_length"],
        fields["mtu"],
        0,
    )


def _sm(frame_length: int = 36, window: int = 65536, term_offset: int = 0) -> bytes:
    body = struct.pack("<ibBhiiiiiq", frame_length, 0, 0, 3, 7, 1001, 5, term_offset, window, 1)
    return body + (struct.pack("<q", 9) if frame_length >= 44 else b"")


def _nak(frame_length: int = 28, term_offset: int = 0, length: int = 1408) -> bytes:
    return struct.pack("<ibBhiiiii", frame_length, 0, 0, 2, 7, 1001, 5, term_offset, length)


def _rttm(frame_length: int = 40) -> bytes:
    return struct.pack("<ibBhiiqqq", frame_length, 0, 0, 6, 7, 1001, 1, 2, 3)


def _err(frame_length: int, text: bytes, error_length: int | None = None) -> bytes:
    length = len(text) if error_length is None else error_length
    header = struct.pack("<ibBhiiqqii", frame_length, 0, 0, 4, 7, 1001, 3, 0, 13, length)
    return header + text


VALID_DATAGRAMS = {
    "one data frame": _data_frame(0, b"hello"),
    "a batch of data frames": _data_frame(64, b"a" * 40)
    + _data_frame(160, b"")
    + _data_frame(192, b"b"),
    "an unaligned last frame": (_data_frame(0, b"x" * 8) + _data_frame(64, b"yz"))[: 64 + 34],
    "data then pad": _data_frame(65408, b"z" * 10) + _pad_header(65472, 64),
    "a lone pad": _pad_header(0, 65536),
    "a heartbeat": struct.pack("<ibBhiiiiq", 0, 0, 0xE0, 1, 4096, 7, 1001, 5, 0),
    "setup": _setup(),
    "setup at the end of its term": _setup(term_offset=65536),
    "status message": _sm(),
    "status message with group tag": _sm(44),
    "nak": _nak(),
    "rttm": _rttm(),
    "java error frame": _err(44, b"oops"),
    "c error frame": _err(40 + 1023, b"oops" + bytes(1019), error_length=4),
    "resolution": struct.pack("<ibBh", 16, 0, 0, 7) + bytes(8),
    "response setup": struct.pack("<ibBhiii", 20, 0, 0, 0x0B, 1, 2, 3),
    "extension": struct.pack("<ibBh", 8, 0, 0, -1),
}


@pytest.mark.parametrize("name", list(VALID_DATAGRAMS))
def test_should_accept_valid_datagrams(name: str) -> None:
    data = VALID_DATAGRAMS[name]
    assert p.validate_frame(_datagram(data, 100), 100, len(data)) is FrameStatus.VALID


INVALID_DATAGRAMS: dict[str, tuple[bytes, FrameStatus]] = {
    "empty": (b"", FrameStatus.TRUNCATED),
    "shorter than the common header": (b"\x08\x00\x00\x00\x00\x00\x03", FrameStatus.TRUNCATED),
    "version 1": (struct.pack("<ibBh", 8, 1, 0, 7), FrameStatus.BAD_VERSION),
    "an ATS type": (struct.pack("<ibBh", 8, 0, 0, 0x08), FrameStatus.UNKNOWN_TYPE),
    "type 0x0C": (struct.pack("<ibBh", 8, 0, 0, 0x0C), FrameStatus.UNKNOWN_TYPE),
    "data shorter than its header": (_data_frame(0, b"")[:31], FrameStatus.TRUNCATED),
    "data longer than the datagram": (_data_frame(0, b"x" * 40)[:64], FrameStatus.TRUNCATED),
    "data frame length under 32": (
        struct.pack("<ibBhiiiiq", 16, 0, 0xC0, 1, 0, 7, 1001, 5, 0),
        FrameStatus.BAD_FRAME_LENGTH,
    ),
    "data frame length negative": (
        struct.pack("<ibBhiiiiq", -64, 0, 0xC0, 1, 0, 7, 1001, 5, 0),
        FrameStatus.BAD_FRAME_LENGTH,
    ),
    "misaligned term offset": (_data_frame(33, b"x"), FrameStatus.BAD_FIELD),
    "negative term offset": (_data_frame(-32, b"x"), FrameStatus.BAD_FIELD),
    "frames at term offsets that do not follow": (
        _data_frame(0, b"x") + _data_frame(96, b"y"),
        FrameStatus.BAD_FIELD,
    ),
    "a frame of another version after the first": (
        _data_frame(0, b"x") + b"\x20\x00\x00\x00\x01" + _data_frame(32, b"")[5:],
        FrameStatus.BAD_VERSION,
    ),
    "a setup frame after a data frame": (_data_frame(0, b"x") + _setup(), FrameStatus.WRONG_TYPE),
    "trailing bytes after the last frame": (
        _data_frame(0, b"x") + b"\x00" * 8,
        FrameStatus.TRUNCATED,
    ),
    "pad that is not last": (
        _pad_header(0, 64) + _data_frame(64, b"x"),
        FrameStatus.BAD_FRAME_LENGTH,
    ),
    "pad of a misaligned length": (_pad_header(0, 70), FrameStatus.BAD_FRAME_LENGTH),
    "heartbeat with bytes after it": (
        struct.pack("<ibBhiiiiq", 0, 0, 0xC0, 1, 0, 7, 1001, 5, 0) + bytes(32),
        FrameStatus.BAD_FRAME_LENGTH,
    ),
    "setup of 39 bytes": (_setup()[:39], FrameStatus.TRUNCATED),
    "setup frame length under 40": (_setup(frame_length=36), FrameStatus.BAD_FRAME_LENGTH),
    "setup frame length over the datagram": (_setup(frame_length=48), FrameStatus.TRUNCATED),
    "setup term length not a power of two": (
        _setup(term_length=65536 + 4096),
        FrameStatus.BAD_FIELD,
    ),
    "setup term length under 64 KiB": (_setup(term_length=32768), FrameStatus.BAD_FIELD),
    "setup term length over 1 GiB": (_setup(term_length=-(2**31)), FrameStatus.BAD_FIELD),
    "setup mtu not a multiple of 32": (_setup(mtu=1400), FrameStatus.BAD_FIELD),
    "setup mtu of 32": (_setup(mtu=32), FrameStatus.BAD_FIELD),
    "setup mtu over 65504": (_setup(mtu=65536), FrameStatus.BAD_FIELD),
    "setup term offset past the term": (_setup(term_offset=65536 + 32), FrameStatus.BAD_FIELD),
    "setup term offset misaligned": (_setup(term_offset=100), FrameStatus.BAD_FIELD),
    "status message of 35 bytes": (_sm()[:35], FrameStatus.TRUNCATED),
    "status message between the two lengths": (_sm(40) + bytes(4), FrameStatus.BAD_FRAME_LENGTH),
    "status message frame length over the datagram": (_sm(44)[:40], FrameStatus.TRUNCATED),
    "status message with a negative window": (_sm(window=-1), FrameStatus.BAD_FIELD),
    "status message with a negative term offset": (_sm(term_offset=-32), FrameStatus.BAD_FIELD),
    "nak of 27 bytes": (_nak()[:27], FrameStatus.TRUNCATED),
    "nak frame length under 28": (_nak(frame_length=20), FrameStatus.BAD_FRAME_LENGTH),
    "nak with a negative length": (_nak(length=-1), FrameStatus.BAD_FIELD),
    "nak with a negative term offset": (_nak(term_offset=-1), FrameStatus.BAD_FIELD),
    "rttm of 39 bytes": (_rttm()[:39], FrameStatus.TRUNCATED),
    "rttm frame length under 40": (_rttm(32), FrameStatus.BAD_FRAME_LENGTH),
    "rttm frame length over the datagram": (_rttm(48), FrameStatus.TRUNCATED),
    "error of 39 bytes": (_err(40, b"")[:39], FrameStatus.TRUNCATED),
    "error frame length under 40": (_err(36, b""), FrameStatus.BAD_FRAME_LENGTH),
    "error text past its frame": (_err(42, b"oops"), FrameStatus.BAD_FRAME_LENGTH),
    "error frame length past the datagram": (_err(50, b"oops"), FrameStatus.TRUNCATED),
    "error text length negative": (_err(44, b"oops", error_length=-4), FrameStatus.BAD_FIELD),
    "error text over 1023 bytes": (_err(1064, bytes(1024)), FrameStatus.BAD_FIELD),
    "resolution without an entry": (struct.pack("<ibBh", 8, 0, 0, 7), FrameStatus.TRUNCATED),
    "response setup of 16 bytes": (
        struct.pack("<ibBhii", 16, 0, 0, 0x0B, 1, 2),
        FrameStatus.TRUNCATED,
    ),
}


@pytest.mark.parametrize("name", list(INVALID_DATAGRAMS))
def test_should_reject_invalid_datagrams_with_the_reason(name: str) -> None:
    data, status = INVALID_DATAGRAMS[name]
    assert p.validate_frame(_datagram(data, 3), 3, len(data)) is status


@pytest.mark.parametrize(("offset", "length"), [(-1, 32), (CAPACITY - 16, 32), (0, CAPACITY + 1)])
def test_should_reject_a_datagram_outside_the_buffer_as_truncated(offset: int, length: int) -> None:
    buffer = _datagram(_data_frame(0, b"x") * 2)
    assert p.validate_frame(buffer, offset, length) is FrameStatus.TRUNCATED
    assert p.DataHeaderFlyweight(buffer, max(offset, 0)).validate(length) is FrameStatus.TRUNCATED


FLYWEIGHTS: list[tuple[Any, bytes]] = [
    (p.DataHeaderFlyweight, VALID_DATAGRAMS["one data frame"]),
    (p.SetupFlyweight, VALID_DATAGRAMS["setup"]),
    (p.StatusMessageFlyweight, VALID_DATAGRAMS["status message"]),
    (p.NakFlyweight, VALID_DATAGRAMS["nak"]),
    (p.RttmFlyweight, VALID_DATAGRAMS["rttm"]),
    (p.ErrorFlyweight, VALID_DATAGRAMS["java error frame"]),
]


@pytest.mark.parametrize(("kind", "data"), FLYWEIGHTS, ids=[k.__name__ for k, _ in FLYWEIGHTS])
def test_should_validate_through_the_flyweight_and_refuse_another_type(
    kind: Any, data: bytes
) -> None:
    flyweight = kind(_datagram(data, 64), 64)
    assert flyweight.validate(len(data)) is FrameStatus.VALID
    flyweight.header_type = p.HDR_TYPE_RES
    assert flyweight.validate(len(data)) is FrameStatus.WRONG_TYPE


VALIDATORS = [
    p.validate_frame,
    p.validate_data_frames,
    p.validate_setup_frame,
    p.validate_status_message_frame,
    p.validate_nak_frame,
    p.validate_rttm_frame,
    p.validate_error_frame,
]


@settings(max_examples=500, deadline=None)
@given(
    data=st.binary(min_size=8, max_size=256),
    frame_type=st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 0x0B, 0xFFFF, 0x42]),
    offset=st.integers(-2, 8),
    extra=st.integers(-8, 8),
)
def test_should_return_a_status_and_never_raise_on_random_datagrams(
    data: bytes, frame_type: int, offset: int, extra: int
) -> None:
    buffer = AtomicBuffer.allocate(272)
    buffer.put_bytes(8, data)
    buffer.put_int8(8 + 4, 0)  # mostly version 0, so the type-specific checks run
    buffer.put_int16(8 + 6, frame_type)
    for validate in VALIDATORS:
        status = validate(buffer, 8 + offset, len(data) + extra)
        assert isinstance(status, FrameStatus)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(list(VALID_DATAGRAMS)),
    position=st.integers(0, 2000),
    value=st.integers(-128, 127),
)
def test_should_return_a_status_for_valid_datagrams_with_one_byte_changed(
    name: str, position: int, value: int
) -> None:
    data = VALID_DATAGRAMS[name]
    buffer = _datagram(data)
    buffer.put_int8(position % len(data), value)
    assert isinstance(p.validate_frame(buffer, 0, len(data)), FrameStatus)
