"""The term scanner (availability, blocks), the unblocker, the rebuilder and the gap scanner."""

from __future__ import annotations

import struct

import pytest

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import (
    BufferClaim,
    Header,
    HeaderWriter,
    TermAppender,
    UnblockStatus,
    term_reader,
)
from aeromq.transport.logbuffer import log_buffer_descriptor as d
from aeromq.transport.logbuffer.frame_descriptor import HDR_TYPE_DATA, HDR_TYPE_PAD, UNFRAGMENTED
from aeromq.transport.logbuffer.term_gap_scanner import scan_for_gap
from aeromq.transport.logbuffer.term_rebuilder import insert
from aeromq.transport.logbuffer.term_scanner import scan_for_availability, scan_for_block
from aeromq.transport.logbuffer.term_unblocker import unblock

TERM_LENGTH = 64 * 1024
TERM_ID = 12
SESSION_ID = 77
STREAM_ID = 5
HEADER = struct.Struct("<iBBHiiiiq")


class Term:
    def __init__(self) -> None:
        self.buffer = AtomicBuffer.allocate(TERM_LENGTH)
        self.meta = AtomicBuffer.allocate(d.LOG_META_DATA_LENGTH)
        d.fill_default_header(self.meta, SESSION_ID, STREAM_ID, TERM_ID)
        d.initialise_tail_with_term_id(self.meta, 0, TERM_ID)
        self.writer = HeaderWriter(d.default_frame_header(self.meta))
        self.appender = TermAppender(self.buffer, self.meta, 0)

    def append(self, length: int) -> int:
        payload = bytes([length % 251]) * length
        return self.appender.append_unfragmented_message(
            self.writer, payload, 0, length, None, TERM_ID
        )

    def pad(self, length: int) -> int:
        return self.appender.append_padding(self.writer, length, TERM_ID)

    def claim(self, length: int) -> BufferClaim:
        claim = BufferClaim()
        self.appender.claim(self.writer, length, claim, TERM_ID)
        return claim

    def tail(self) -> int:
        return d.term_offset(d.raw_tail_volatile(self.meta, 0), TERM_LENGTH)

    def payloads(self, offset: int = 0) -> list[bytes]:
        seen: list[bytes] = []

        def handler(buffer: AtomicBuffer, index: int, length: int, header: Header) -> None:
            seen.append(buffer.get_bytes(index, length))

        def on_error(exc: Exception) -> None:
            raise exc

        term_reader.read(self.buffer, offset, handler, 1000, Header(TERM_ID, 16), on_error)
        return seen


@pytest.fixture
def term() -> Term:
    return Term()


# --- scan_for_availability -------------------------------------------------------------------


def test_should_find_whole_frames_available_up_to_the_max_length(term: Term) -> None:
    for _ in range(4):
        term.append(100)  # 160 bytes each
    assert scan_for_availability(term.buffer, 0, 4096) == (640, 0)
    assert scan_for_availability(term.buffer, 0, 400) == (320, 0)  # never a partial frame
    assert scan_for_availability(term.buffer, 160, 4096) == (480, 0)
    assert scan_for_availability(term.buffer, 640, 4096) == (0, 0)


def test_should_stop_at_an_uncommitted_frame(term: Term) -> None:
    term.append(10)
    term.claim(10)
    term.append(10)
    assert scan_for_availability(term.buffer, 0, 4096) == (64, 0)


def test_should_report_padding_apart_with_only_its_header_available(term: Term) -> None:
    term.append(100)
    term.pad(1000)  # 1056 bytes of padding frame
    term.append(10)
    assert scan_for_availability(term.buffer, 0, 4096) == (160 + 32, 1024)
    assert scan_for_availability(term.buffer, 160, 4096) == (32, 1024)
    assert scan_for_availability(term.buffer, 0, 180) == (160, 0)


def test_should_scan_nothing_at_the_end_of_the_term(term: Term) -> None:
    assert scan_for_availability(term.buffer, TERM_LENGTH, 4096) == (0, 0)


# --- scan_for_block --------------------------------------------------------------------------


def test_should_scan_a_block_of_whole_frames_up_to_the_limit(term: Term) -> None:
    for _ in range(3):
        term.append(100)
    assert scan_for_block(term.buffer, 0, 4096) == 480
    assert scan_for_block(term.buffer, 0, 400) == 320
    assert scan_for_block(term.buffer, 320, 4096) == 480


def test_should_end_a_block_before_padding_or_make_padding_a_block_of_its_own(term: Term) -> None:
    term.append(100)
    term.pad(1000)
    term.append(10)
    assert scan_for_block(term.buffer, 0, 4096) == 160
    assert scan_for_block(term.buffer, 160, 200) == 160 + 1056  # past the limit: whole padding
    assert scan_for_block(term.buffer, 160 + 1056, 4096) == 160 + 1056 + 64


# --- unblock ---------------------------------------------------------------------------------


def test_should_turn_a_claimed_frame_into_padding(term: Term) -> None:
    term.append(10)
    term.claim(100)  # its writer dies here
    term.append(20)
    assert term.payloads() == [bytes([10]) * 10]
    status = unblock(term.meta, term.buffer, 64, term.tail(), TERM_ID)
    assert status == UnblockStatus.UNBLOCKED
    assert HEADER.unpack(term.buffer.get_bytes(64, 32)) == (
        132,
        0,
        UNFRAGMENTED,
        HDR_TYPE_PAD,
        64,
        SESSION_ID,
        STREAM_ID,
        TERM_ID,
        0,
    )
    assert term.payloads() == [bytes([10]) * 10, bytes([20]) * 20]


def test_should_pad_a_zeroed_gap_up_to_the_next_committed_frame(term: Term) -> None:
    term.append(10)
    # a writer reserved 320 bytes and died before writing its header
    d.set_raw_tail(term.meta, 0, d.pack_tail(TERM_ID, term.tail() + 320))
    term.append(20)
    status = unblock(term.meta, term.buffer, 64, term.tail(), TERM_ID)
    assert status == UnblockStatus.UNBLOCKED
    assert term.buffer.get_int32(64) == 320
    assert term.buffer.get_uint16(64 + 6) == HDR_TYPE_PAD
    assert term.payloads() == [bytes([10]) * 10, bytes([20]) * 20]


def test_should_leave_a_gap_that_may_still_be_written(term: Term) -> None:
    term.append(10)
    d.set_raw_tail(term.meta, 0, d.pack_tail(TERM_ID, term.tail() + 320))
    assert unblock(term.meta, term.buffer, 64, term.tail(), TERM_ID) == UnblockStatus.NO_ACTION
    assert term.buffer.get_int32(64) == 0


def test_should_do_nothing_at_a_committed_frame(term: Term) -> None:
    term.append(10)
    assert unblock(term.meta, term.buffer, 0, term.tail(), TERM_ID) == UnblockStatus.NO_ACTION
    assert term.buffer.get_int32(0) == 42


def test_should_pad_to_the_end_of_the_term_when_the_tail_is_past_it(term: Term) -> None:
    term.append(10)
    d.set_raw_tail(term.meta, 0, d.pack_tail(TERM_ID, TERM_LENGTH + 500))
    status = unblock(term.meta, term.buffer, 64, TERM_LENGTH, TERM_ID)
    assert status == UnblockStatus.UNBLOCKED_TO_END
    assert term.buffer.get_int32(64) == TERM_LENGTH - 64
    assert scan_for_block(term.buffer, 64, TERM_LENGTH) == TERM_LENGTH


# --- rebuilder and gap scanner ---------------------------------------------------------------


def _frame(term_offset: int, payload: bytes) -> AtomicBuffer:
    """A received packet: one DATA frame for ``term_offset``, in a buffer at offset 64."""
    packet = AtomicBuffer.allocate(4096)
    frame_length = 32 + len(payload)
    packet.put_bytes(
        64,
        HEADER.pack(
            frame_length,
            0,
            UNFRAGMENTED,
            HDR_TYPE_DATA,
            term_offset,
            SESSION_ID,
            STREAM_ID,
            TERM_ID,
            9,
        ),
    )
    packet.put_bytes(96, payload)
    return packet


def test_should_rebuild_a_term_from_frames_received_out_of_order(term: Term) -> None:
    frames = {offset: bytes([i + 1]) * 60 for i, offset in enumerate(range(0, 5 * 96, 96))}
    gaps: list[tuple[int, int, int]] = []

    def on_gap(term_id: int, offset: int, length: int) -> None:
        gaps.append((term_id, offset, length))

    for offset in (0, 192, 384):
        insert(term.buffer, offset, _frame(offset, frames[offset]), 64, 92)
    assert scan_for_gap(term.buffer, TERM_ID, 0, 480, on_gap) == 96
    assert gaps == [(TERM_ID, 96, 96)]
    assert term.payloads() == [frames[0]]

    insert(term.buffer, 96, _frame(96, frames[96]), 64, 92)
    gaps.clear()
    assert scan_for_gap(term.buffer, TERM_ID, 96, 480, on_gap) == 288
    assert gaps == [(TERM_ID, 288, 96)]

    insert(term.buffer, 288, _frame(288, frames[288]), 64, 92)
    gaps.clear()
    assert scan_for_gap(term.buffer, TERM_ID, 288, 480, on_gap) == 480
    assert gaps == []
    assert term.payloads() == [frames[o] for o in sorted(frames)]
    assert HEADER.unpack(term.buffer.get_bytes(288, 32))[8] == 9  # reserved value copied


def test_should_ignore_a_duplicate_frame(term: Term) -> None:
    insert(term.buffer, 0, _frame(0, b"first"), 64, 37)
    insert(term.buffer, 0, _frame(0, b"again"), 64, 37)
    assert term.payloads() == [b"first"]


def test_should_report_a_gap_that_runs_to_the_limit(term: Term) -> None:
    insert(term.buffer, 0, _frame(0, b"a" * 28), 64, 60)
    gaps: list[tuple[int, int, int]] = []
    assert scan_for_gap(term.buffer, TERM_ID, 0, 1024, lambda *g: gaps.append(g)) == 64
    assert gaps == [(TERM_ID, 64, 1024 - 64)]
