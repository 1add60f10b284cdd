from __future__ import annotations

import pytest

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import BufferClaim, Header, HeaderWriter, TermAppender, term_reader
from aeromq.transport.logbuffer import log_buffer_descriptor as d

TERM_LENGTH = 64 * 1024
INITIAL_TERM_ID = 3
BITS = 16


class Log:
    def __init__(self) -> None:
        self.term = AtomicBuffer.allocate(TERM_LENGTH)
        self.meta = AtomicBuffer.allocate(d.LOG_META_DATA_LENGTH)
        d.fill_default_header(self.meta, 9, 10, INITIAL_TERM_ID)
        d.initialise_tail_with_term_id(self.meta, 0, INITIAL_TERM_ID + 3)
        self.header = HeaderWriter(d.default_frame_header(self.meta))
        self.appender = TermAppender(self.term, self.meta, 0)

    def append(self, payload: bytes) -> int:
        return self.appender.append_unfragmented_message(
            self.header, payload, 0, len(payload), None, INITIAL_TERM_ID + 3
        )


class Collector:
    def __init__(self) -> None:
        self.seen: list[tuple[bytes, int, int, int, int]] = []
        self.errors: list[Exception] = []

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        self.seen.append(
            (
                buffer.get_bytes(offset, length),
                header.offset,
                header.term_offset,
                header.position,
                header.next_term_offset,
            )
        )

    def on_error(self, exc: Exception) -> None:
        self.errors.append(exc)


@pytest.fixture
def log() -> Log:
    return Log()


def test_should_deliver_fragments_in_order_with_a_moving_header(log: Log) -> None:
    for payload in (b"a", b"b" * 40, b"c" * 3):
        log.append(payload)
    collector = Collector()
    header = Header(INITIAL_TERM_ID, BITS)
    assert term_reader.read(log.term, 0, collector, 10, header, collector.on_error) == (3, 224)
    begin = 3 << BITS
    assert collector.seen == [
        (b"a", 0, 0, begin + 64, 64),
        (b"b" * 40, 64, 64, begin + 160, 160),
        (b"c" * 3, 160, 160, begin + 224, 224),
    ]
    assert header.buffer is log.term


def test_should_stop_at_the_fragment_limit_and_resume_from_the_offset(log: Log) -> None:
    for i in range(5):
        log.append(bytes([i]))
    collector = Collector()
    header = Header(INITIAL_TERM_ID, BITS)
    count, offset = term_reader.read(log.term, 0, collector, 2, header, collector.on_error)
    assert (count, offset) == (2, 128)
    assert term_reader.read(log.term, offset, collector, 10, header, collector.on_error) == (3, 320)
    assert [p for p, *_ in collector.seen] == [bytes([i]) for i in range(5)]


def test_should_stop_at_a_claimed_but_uncommitted_frame(log: Log) -> None:
    log.append(b"before")
    claim = BufferClaim()
    log.appender.claim(log.header, 8, claim, INITIAL_TERM_ID + 3)
    log.append(b"after")
    collector = Collector()
    header = Header(INITIAL_TERM_ID, BITS)
    assert term_reader.read(log.term, 0, collector, 10, header, collector.on_error) == (1, 64)
    claim.commit()
    assert term_reader.read(log.term, 64, collector, 10, header, collector.on_error) == (2, 192)


def test_should_step_over_padding_without_counting_it(log: Log) -> None:
    log.appender.append_padding(log.header, 200, INITIAL_TERM_ID + 3)
    log.append(b"x")
    collector = Collector()
    header = Header(INITIAL_TERM_ID, BITS)
    assert term_reader.read(log.term, 0, collector, 1, header, collector.on_error) == (1, 320)
    assert collector.seen[0][:2] == (b"x", 256)


def test_should_read_nothing_at_the_end_of_the_term_or_on_an_empty_one(log: Log) -> None:
    collector = Collector()
    header = Header(INITIAL_TERM_ID, BITS)
    assert term_reader.read(log.term, 0, collector, 10, header, collector.on_error) == (0, 0)
    end = (0, TERM_LENGTH)
    assert term_reader.read(log.term, TERM_LENGTH, collector, 10, header, collector.on_error) == end


def test_should_report_a_failing_handler_and_count_its_fragment_as_read(log: Log) -> None:
    for payload in (b"ok", b"bad", b"later"):
        log.append(payload)
    errors: list[Exception] = []
    seen: list[bytes] = []

    def handler(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        payload = buffer.get_bytes(offset, length)
        seen.append(payload)
        if payload == b"bad":
            raise ValueError("cannot handle")

    header = Header(INITIAL_TERM_ID, BITS)
    assert term_reader.read(log.term, 0, handler, 10, header, errors.append) == (2, 128)
    assert [str(e) for e in errors] == ["cannot handle"]
    assert term_reader.read(log.term, 128, handler, 10, header, errors.append) == (1, 192)
    assert seen == [b"ok", b"bad", b"later"]


def test_should_let_an_error_handler_that_raises_propagate(log: Log) -> None:
    log.append(b"boom")

    def handler(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        raise KeyError("boom")

    def rethrow(exc: Exception) -> None:
        raise RuntimeError("stop") from exc

    with pytest.raises(RuntimeError, match="stop"):
        term_reader.read(log.term, 0, handler, 10, Header(INITIAL_TERM_ID, BITS), rethrow)
