"""Both term appenders, through one adapter, each result read back with the term reader."""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import pytest

from aeromq.transport import ConfigurationError, TransportStateError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import (
    BufferClaim,
    DirectBufferVector,
    ExclusiveTermAppender,
    Header,
    HeaderWriter,
    ReservedValueSupplier,
    TermAppender,
    _frame_writer,
    exclusive_term_appender,
    term_appender,
    term_reader,
)
from aeromq.transport.logbuffer import log_buffer_descriptor as d
from aeromq.transport.logbuffer.buffer_vector import validate_and_compute_length
from aeromq.transport.logbuffer.frame_descriptor import (
    BEGIN_FLAG,
    END_FLAG,
    HDR_TYPE_DATA,
    HDR_TYPE_PAD,
    UNFRAGMENTED,
)

TERM_LENGTH = 64 * 1024
TERM_ID = 5
SESSION_ID = -17
STREAM_ID = 1001
MAX_PAYLOAD = 1408 - 32
HEADER = struct.Struct("<iBBHiiiiq")


class RecordingBuffer(AtomicBuffer):
    """A term buffer that records every store, to check the order appenders write in."""

    def __init__(self, source: Any, stores: list[tuple[str, int, Any]] | None = None) -> None:
        super().__init__(source)
        self.stores: list[tuple[str, int, Any]] = [] if stores is None else stores

    def get_and_add_int64(self, index: int, delta: int, /) -> int:
        self.stores.append(("get_and_add_int64", index, delta))
        return super().get_and_add_int64(index, delta)

    def put_int64_ordered(self, index: int, value: int, /) -> None:
        self.stores.append(("put_int64_ordered", index, value))
        super().put_int64_ordered(index, value)

    def put_int64(self, index: int, value: int, /) -> None:
        self.stores.append(("put_int64", index, value))
        super().put_int64(index, value)

    def put_int32_ordered(self, index: int, value: int, /) -> None:
        self.stores.append(("put_int32_ordered", index, value))
        super().put_int32_ordered(index, value)

    def put_bytes(self, index: int, src: Any, src_offset: int = 0, length: int = -1, /) -> None:
        self.stores.append(("put_bytes", index, length))
        super().put_bytes(index, src, src_offset, length)


class Appender:
    """One interface over both appenders: the exclusive one is given its term offset."""

    def __init__(self, kind: str, term: AtomicBuffer, meta: AtomicBuffer) -> None:
        self.kind = kind
        self.term = term
        self.meta = meta
        self.header = HeaderWriter(d.default_frame_header(meta))
        self.term_offset = 0
        if kind == "concurrent":
            self.failed = term_appender.FAILED
            self.concurrent = TermAppender(term, meta, 1)
        else:
            self.failed = exclusive_term_appender.FAILED
            self.exclusive = ExclusiveTermAppender(term, meta, 1)

    def _track(self, result: int) -> int:
        if result > 0:
            self.term_offset = result
        return result

    def unfragmented(
        self, src: bytes, supplier: ReservedValueSupplier | None = None, src_offset: int = 0
    ) -> int:
        length = len(src) - src_offset
        if self.kind == "concurrent":
            return self.concurrent.append_unfragmented_message(
                self.header, src, src_offset, length, supplier, TERM_ID
            )
        return self._track(
            self.exclusive.append_unfragmented_message(
                TERM_ID, self.term_offset, self.header, src, src_offset, length, supplier
            )
        )

    def fragmented(self, src: bytes, supplier: ReservedValueSupplier | None = None) -> int:
        if self.kind == "concurrent":
            return self.concurrent.append_fragmented_message(
                self.header, src, 0, len(src), MAX_PAYLOAD, supplier, TERM_ID
            )
        return self._track(
            self.exclusive.append_fragmented_message(
                TERM_ID, self.term_offset, self.header, src, 0, len(src), MAX_PAYLOAD, supplier
            )
        )

    def unfragmented_vectors(self, vectors: Sequence[DirectBufferVector]) -> int:
        length = sum(v.length for v in vectors)
        if self.kind == "concurrent":
            return self.concurrent.append_unfragmented_vectors(
                self.header, vectors, length, None, TERM_ID
            )
        return self._track(
            self.exclusive.append_unfragmented_vectors(
                TERM_ID, self.term_offset, self.header, vectors, length, None
            )
        )

    def fragmented_vectors(
        self, vectors: Sequence[DirectBufferVector], supplier: ReservedValueSupplier | None = None
    ) -> int:
        length = sum(v.length for v in vectors)
        if self.kind == "concurrent":
            return self.concurrent.append_fragmented_vectors(
                self.header, vectors, length, MAX_PAYLOAD, supplier, TERM_ID
            )
        return self._track(
            self.exclusive.append_fragmented_vectors(
                TERM_ID, self.term_offset, self.header, vectors, length, MAX_PAYLOAD, supplier
            )
        )

    def claim(self, length: int, claim: BufferClaim) -> int:
        if self.kind == "concurrent":
            return self.concurrent.claim(self.header, length, claim, TERM_ID)
        return self._track(
            self.exclusive.claim(TERM_ID, self.term_offset, self.header, length, claim)
        )

    def padding(self, length: int) -> int:
        if self.kind == "concurrent":
            return self.concurrent.append_padding(self.header, length, TERM_ID)
        return self._track(
            self.exclusive.append_padding(TERM_ID, self.term_offset, self.header, length)
        )

    def raw_tail(self) -> int:
        return d.raw_tail_volatile(self.meta, 1)


def _new_meta() -> AtomicBuffer:
    meta = AtomicBuffer.allocate(d.LOG_META_DATA_LENGTH)
    d.fill_default_header(meta, SESSION_ID, STREAM_ID, 3)
    d.initialise_tail_with_term_id(meta, 1, TERM_ID)
    return meta


@pytest.fixture(params=["concurrent", "exclusive"])
def appender(request: pytest.FixtureRequest) -> Appender:
    return Appender(request.param, AtomicBuffer.allocate(TERM_LENGTH), _new_meta())


def _read_all(term: AtomicBuffer, offset: int = 0) -> list[tuple[bytes, tuple[Any, ...]]]:
    frames: list[tuple[bytes, tuple[Any, ...]]] = []

    def handler(buffer: AtomicBuffer, index: int, length: int, header: Header) -> None:
        frames.append(
            (buffer.get_bytes(index, length), HEADER.unpack(buffer.get_bytes(header.offset, 32)))
        )

    def on_error(exc: Exception) -> None:
        raise exc

    count, _ = term_reader.read(term, offset, handler, 1_000_000, Header(3, 16), on_error)
    assert count == len(frames)
    return frames


def test_should_append_an_unfragmented_message_with_the_default_header(
    appender: Appender,
) -> None:
    assert appender.unfragmented(b"hello") == 64
    assert appender.unfragmented(b"x" * 100) == 64 + 160
    frames = _read_all(appender.term)
    assert frames == [
        (b"hello", (37, 0, UNFRAGMENTED, HDR_TYPE_DATA, 0, SESSION_ID, STREAM_ID, TERM_ID, 0)),
        (b"x" * 100, (132, 0, UNFRAGMENTED, HDR_TYPE_DATA, 64, SESSION_ID, STREAM_ID, TERM_ID, 0)),
    ]
    assert d.term_offset(appender.raw_tail(), TERM_LENGTH) == 224
    assert d.term_id(appender.raw_tail()) == TERM_ID


def test_should_append_an_empty_message_and_part_of_a_source(appender: Appender) -> None:
    assert appender.unfragmented(b"") == 32
    assert appender.unfragmented(b"skipTHIS", src_offset=4) == 32 + 64
    assert [payload for payload, _ in _read_all(appender.term)] == [b"", b"THIS"]


def test_should_write_the_header_before_the_payload_and_publish_the_length_last() -> None:
    term = RecordingBuffer(bytearray(TERM_LENGTH))
    appender = Appender("concurrent", term, _new_meta())
    appender.unfragmented(b"abc", supplier=lambda buffer, offset, length: 7)
    kinds = [(kind, index) for kind, index, _ in term.stores]
    assert kinds == [
        ("put_int64_ordered", 0),
        ("put_int64", 8),
        ("put_int64", 16),
        ("put_bytes", 32),
        ("put_int64", 24),
        ("put_int32_ordered", 0),
    ]
    first_word = term.stores[0][2]
    assert first_word & 0xFFFF_FFFF == (-35) & 0xFFFF_FFFF  # claimed: negative length
    assert term.stores[-1][2] == 35


def test_should_fragment_a_message_at_the_mtu_with_begin_and_end_flags(
    appender: Appender,
) -> None:
    message = bytes(range(256)) * 12  # 3072 bytes: 1376 + 1376 + 320
    expected_end = 1408 + 1408 + 352
    assert appender.fragmented(message) == expected_end
    frames = _read_all(appender.term)
    assert [len(p) for p, _ in frames] == [1376, 1376, 320]
    assert b"".join(p for p, _ in frames) == message
    assert [h[2] for _, h in frames] == [BEGIN_FLAG, 0, END_FLAG]
    assert [h[4] for _, h in frames] == [0, 1408, 2816]
    assert [h[0] for _, h in frames] == [1408, 1408, 352]


def test_should_fragment_an_exact_multiple_of_the_max_payload(appender: Appender) -> None:
    assert appender.fragmented(b"m" * (2 * MAX_PAYLOAD)) == 2 * 1408
    assert [h[2] for _, h in _read_all(appender.term)] == [BEGIN_FLAG, END_FLAG]


def test_should_call_the_reserved_value_supplier_before_publishing(appender: Appender) -> None:
    calls: list[tuple[int, int, int, bytes]] = []

    def checksum(buffer: AtomicBuffer, offset: int, length: int) -> int:
        calls.append((offset, length, buffer.get_int32_volatile(offset), b""))
        return zlib.crc32(buffer.get_bytes(offset + 32, length - 32))

    appender.unfragmented(b"first", checksum)
    appender.fragmented(b"z" * 2000, checksum)
    assert [(o, n, length) for o, n, length, _ in calls] == [
        (0, 37, -37),
        (64, 1408, -1408),
        (1472, 656, -656),
    ]
    reserved = [h[8] for _, h in _read_all(appender.term)]
    assert reserved == [zlib.crc32(b"first"), zlib.crc32(b"z" * 1376), zlib.crc32(b"z" * 624)]


def test_should_pad_the_rest_of_the_term_and_fail_when_a_message_does_not_fit(
    appender: Appender,
) -> None:
    filler = b"f" * 1024  # 1056-byte frames: 62 of them leave 64 bytes
    for i in range(62):
        assert appender.unfragmented(filler) == (i + 1) * 1056
    end = 62 * 1056
    assert appender.unfragmented(filler) == appender.failed
    assert len(_read_all(appender.term)) == 62  # the padding is not delivered
    assert HEADER.unpack(appender.term.get_bytes(end, 32)) == (
        TERM_LENGTH - end,
        0,
        UNFRAGMENTED,
        HDR_TYPE_PAD,
        end,
        SESSION_ID,
        STREAM_ID,
        TERM_ID,
        0,
    )
    assert d.term_id(appender.raw_tail()) == TERM_ID


def test_should_fill_the_term_exactly_without_padding(appender: Appender) -> None:
    payload = b"e" * (1024 - 32)
    for i in range(64):
        assert appender.unfragmented(payload) == (i + 1) * 1024
    assert appender.unfragmented(b"one more") == appender.failed
    assert len(_read_all(appender.term)) == 64


def test_should_fail_without_writing_once_the_tail_is_past_the_end() -> None:
    appender = Appender("concurrent", AtomicBuffer.allocate(TERM_LENGTH), _new_meta())
    d.set_raw_tail(appender.meta, 1, d.pack_tail(TERM_ID, TERM_LENGTH - 64))
    assert appender.unfragmented(b"q" * 100) == term_appender.FAILED  # pads 64 bytes
    assert appender.unfragmented(b"q") == term_appender.FAILED  # tail already past the end
    assert appender.term.get_int32(TERM_LENGTH - 64) == 64
    assert d.term_offset(appender.raw_tail(), 1 << 32) == TERM_LENGTH - 64 + 160 + 64


def test_should_pad_the_space_a_delayed_writer_got_in_a_later_term() -> None:
    appender = Appender("concurrent", AtomicBuffer.allocate(TERM_LENGTH), _new_meta())
    later_term_id = TERM_ID + 3  # the log went round while this writer was descheduled
    d.set_raw_tail(appender.meta, 1, d.pack_tail(later_term_id, 640))
    claim = BufferClaim()
    assert appender.unfragmented(b"late" * 10) == term_appender.FAILED
    assert appender.fragmented(b"f" * 2000) == term_appender.FAILED
    assert appender.claim(8, claim) == term_appender.FAILED
    assert appender.padding(8) == term_appender.FAILED
    vectors = [DirectBufferVector(b"v", 0, 1)]
    assert appender.unfragmented_vectors(vectors) == term_appender.FAILED
    assert appender.fragmented_vectors(vectors) == term_appender.FAILED
    lengths = [96, 1408 + 672, 64, 64, 64, 64]
    offset = 640
    for length in lengths:
        assert HEADER.unpack(appender.term.get_bytes(offset, 32)) == (
            length,
            0,
            UNFRAGMENTED,
            HDR_TYPE_PAD,
            offset,
            SESSION_ID,
            STREAM_ID,
            later_term_id,
            0,
        )
        offset += length
    appender.concurrent.append_unfragmented_message(
        appender.header, b"on time", 0, 7, None, later_term_id
    )
    assert [payload for payload, _ in _read_all(appender.term, 640)] == [b"on time"]


@pytest.mark.parametrize("kind", ["concurrent", "exclusive"])
def test_should_reserve_in_the_tail_before_writing_the_frame(kind: str) -> None:
    stores: list[tuple[str, int, Any]] = []
    meta = RecordingBuffer(bytearray(d.LOG_META_DATA_LENGTH), stores)
    meta.put_bytes(0, _new_meta())
    term = RecordingBuffer(bytearray(TERM_LENGTH), stores)
    appender = Appender(kind, term, meta)
    appender.term_offset = 4096
    if kind == "concurrent":
        d.set_raw_tail(meta, 1, d.pack_tail(TERM_ID, 4096))
    del stores[:]
    assert appender.unfragmented(b"m") == 4160
    assert d.raw_tail_volatile(meta, 1) == d.pack_tail(TERM_ID, 4160)
    first = (
        ("get_and_add_int64", 8, 64)
        if kind == "concurrent"
        else ("put_int64_ordered", 8, d.pack_tail(TERM_ID, 4160))
    )
    assert stores[0] == first
    assert stores[1][:2] == ("put_int64_ordered", 4096)
    assert stores[-1] == ("put_int32_ordered", 4096, 33)


def test_should_commit_a_claim_written_in_place(appender: Appender) -> None:
    claim = BufferClaim()
    assert appender.claim(10, claim) == 64
    assert claim.offset == 32
    assert claim.length == 10
    assert claim.buffer.get_int32(0) == -42  # claimed, not yet visible
    assert _read_all(appender.term) == []
    claim.buffer.put_bytes(claim.offset, b"0123")
    claim.put_bytes(b"abcdefghij")
    claim.flags = BEGIN_FLAG | END_FLAG
    claim.reserved_value = -99
    assert (claim.flags, claim.header_type, claim.reserved_value) == (0xC0, HDR_TYPE_DATA, -99)
    claim.commit()
    frames = _read_all(appender.term)
    assert frames == [
        (b"abcdefghij", (42, 0, 0xC0, HDR_TYPE_DATA, 0, SESSION_ID, STREAM_ID, TERM_ID, -99))
    ]


def test_should_skip_an_aborted_claim(appender: Appender) -> None:
    claim = BufferClaim()
    appender.claim(100, claim)
    appender.unfragmented(b"after")  # a later frame waits behind the claim
    assert _read_all(appender.term) == []
    claim.abort()
    assert [payload for payload, _ in _read_all(appender.term)] == [b"after"]
    assert appender.term.get_uint16(6) == HDR_TYPE_PAD


def test_should_end_a_claim_on_commit_or_abort(appender: Appender) -> None:
    claim = BufferClaim()
    with pytest.raises(TransportStateError):
        claim.commit()
    appender.claim(8, claim)
    with pytest.raises(Exception, match="source longer than the claimed payload"):
        claim.put_bytes(b"123456789")
    claim.commit()
    with pytest.raises(TransportStateError):
        claim.abort()
    with pytest.raises(TransportStateError):
        _ = claim.buffer


def test_should_fail_a_claim_at_the_end_of_the_term(appender: Appender) -> None:
    claim = BufferClaim()
    appender.padding(TERM_LENGTH - 32 - 64)
    assert appender.claim(100, claim) == appender.failed
    with pytest.raises(TransportStateError):
        claim.commit()


def test_should_append_padding_that_readers_skip(appender: Appender) -> None:
    assert appender.padding(100) == 160
    assert appender.unfragmented(b"next") == 224
    assert [payload for payload, _ in _read_all(appender.term)] == [b"next"]
    assert HEADER.unpack(appender.term.get_bytes(0, 32))[:4] == (132, 0, 0xC0, HDR_TYPE_PAD)


def test_should_gather_vectors_into_one_frame(appender: Appender) -> None:
    vectors = [
        DirectBufferVector(b"..head", 2, 4),
        DirectBufferVector(bytearray(b""), 0, 0),
        DirectBufferVector(AtomicBuffer(bytearray(b"body!")), 0, 5),
    ]
    assert appender.unfragmented_vectors(vectors) == 64
    assert _read_all(appender.term)[0][0] == b"headbody!"


def test_should_fragment_vectors_across_their_boundaries(appender: Appender) -> None:
    parts = [bytes([i]) * n for i, n in enumerate((1000, 500, 1, 1500, 0, 200))]
    vectors = [DirectBufferVector(p, 0, len(p)) for p in parts]
    assert appender.fragmented_vectors(vectors, lambda b, o, n: n) == 1408 * 2 + 512
    frames = _read_all(appender.term)
    assert b"".join(p for p, _ in frames) == b"".join(parts)
    assert [h[2] for _, h in frames] == [BEGIN_FLAG, 0, END_FLAG]
    assert [h[8] for _, h in frames] == [1408, 1408, 481]


@pytest.mark.parametrize("kind", ["concurrent", "exclusive"])
def test_should_write_the_same_frames_with_the_c_gather_as_with_the_python_loop(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pieces as a pull answer has them: views into one big buffer, many per frame, some
    # crossing frame boundaries, some empty, plus a head and a tail of their own
    if _frame_writer._gather is None:
        pytest.skip("transport/logbuffer/_gather.c is not built")
    source = bytes(random.Random(7).randrange(256) for _ in range(20_000))
    view = memoryview(source)
    sizes = [13, 0, 1500, 2900, 1, 0, 700, 4000, 2, 1376, 1377, 333]
    pieces: list[DirectBufferVector] = [DirectBufferVector(b"head", 0, 4)]
    position = 0
    for size in sizes:
        pieces.append(DirectBufferVector(view, position, size))
        position += size + 17
    pieces.append(DirectBufferVector(bytearray(b"tail!"), 1, 4))
    terms = []
    for gather in (_frame_writer._gather, None):
        monkeypatch.setattr(_frame_writer, "_gather", gather)
        appender = Appender(kind, AtomicBuffer.allocate(TERM_LENGTH), _new_meta())
        assert appender.fragmented_vectors(pieces) > 0
        assert appender.unfragmented_vectors(pieces[:4]) > 0
        terms.append(appender.term.get_bytes(0, TERM_LENGTH))
    assert terms[0] == terms[1]
    expected = b"".join(bytes(memoryview(b)[o : o + n]) for b, o, n in pieces)
    payloads = [payload for payload, _ in _read_all(appender.term)]
    assert b"".join(payloads[:-1]) == expected
    assert payloads[-1] == expected[: 4 + 13 + 1500]


def test_should_name_the_vector_outside_its_buffer_with_or_without_the_c_check() -> None:
    good = DirectBufferVector(b"abcd", 0, 4)
    for bad in (DirectBufferVector(b"abcd", 2, 3), DirectBufferVector(b"abcd", -1, 1)):
        with pytest.raises(ConfigurationError, match="index=1"):
            validate_and_compute_length([good, bad, good])
    assert validate_and_compute_length([good, DirectBufferVector(bytearray(9), 5, 4)]) == 8
    with pytest.raises(ValueError, match="outside"):
        if _frame_writer._gather is None:
            raise ValueError("vector outside its buffer")  # the C helper is not built
        _frame_writer._gather.copy_vectors(AtomicBuffer.allocate(8), 4, [good], 0, 0, 5)


def test_should_refuse_a_metadata_buffer_shorter_than_a_page() -> None:
    for cls in (TermAppender, ExclusiveTermAppender):
        with pytest.raises(ConfigurationError, match="capacity=64"):
            cls(AtomicBuffer.allocate(TERM_LENGTH), AtomicBuffer.allocate(64), 0)
