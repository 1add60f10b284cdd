"""Test stand-ins for the parts of a publication, a subscription and a driver that use a log.

``Publisher`` is the offer path of Aeron's ConcurrentPublication or ExclusivePublication (flow
control against a limit, rotation on FAILED); ``Subscriber`` is an image's poll that also does
the driver's cleaning (it zeroes each term once it has read past it, so the term can be reused).
They are here so that appenders and the reader can be tested across many term rotations without
the driver that will own these jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import (
    ExclusiveTermAppender,
    FragmentHandler,
    Header,
    HeaderWriter,
    LogBuffers,
    ReservedValueSupplier,
    TermAppender,
    term_reader,
)
from aeromq.transport.logbuffer import log_buffer_descriptor as d
from aeromq.transport.logbuffer.frame_descriptor import HDR_LENGTH

BACK_PRESSURED = -2
ADMIN_ACTION = -3
SESSION_ID = 0x1234_5678
STREAM_ID = 1001
MTU_LENGTH = 1408


def create_log(
    path: Path,
    term_length: int = d.TERM_MIN_LENGTH,
    initial_term_id: int = 7,
    session_id: int = SESSION_ID,
) -> LogBuffers:
    """A log set up as the driver sets one up for a new publication."""
    log = LogBuffers.create(path, term_length)
    init_log(log, initial_term_id, session_id)
    return log


def init_log(log: LogBuffers, initial_term_id: int, session_id: int = SESSION_ID) -> None:
    meta = log.meta_data_buffer
    log.metadata.initial_term_id = initial_term_id
    log.metadata.mtu_length = MTU_LENGTH
    d.fill_default_header(meta, session_id, STREAM_ID, initial_term_id)
    d.initialise_tails(meta, initial_term_id)


class Publisher:
    """Offers messages to a log: concurrent (shared tail) or exclusive (own tail)."""

    def __init__(
        self,
        log: LogBuffers,
        exclusive: bool = False,
        limit: Callable[[], int] | None = None,
        header_writer: HeaderWriter | None = None,
    ) -> None:
        meta = log.meta_data_buffer
        self.meta = meta
        self.term_length = log.term_length
        self.bits = d.position_bits_to_shift(log.term_length)
        self.initial_term_id = log.metadata.initial_term_id
        self.max_payload_length = log.metadata.mtu_length - HDR_LENGTH
        self.header = header_writer or HeaderWriter(d.default_frame_header(meta))
        self.limit = limit or (lambda: 1 << 62)
        self.exclusive = exclusive
        self.appenders = [TermAppender(t, meta, i) for i, t in enumerate(log.term_buffers)]
        self.exclusive_appenders = [
            ExclusiveTermAppender(t, meta, i) for i, t in enumerate(log.term_buffers)
        ]
        term_count = d.active_term_count(meta)
        raw_tail = d.raw_tail_volatile(meta, d.index_by_term_count(term_count))
        self.term_id = d.term_id(raw_tail)
        self.term_offset = d.term_offset(raw_tail, self.term_length)
        self.term_count = term_count

    def offer(self, payload: bytes, supplier: ReservedValueSupplier | None = None) -> int:
        """The new position, or BACK_PRESSURED / ADMIN_ACTION (then offer again)."""
        if self.exclusive:
            return self._offer_exclusive(payload, supplier)
        meta = self.meta
        term_count = d.active_term_count(meta)
        index = d.index_by_term_count(term_count)
        raw_tail = d.raw_tail_volatile(meta, index)
        term_offset = raw_tail & 0xFFFF_FFFF
        term_id = d.term_id(raw_tail)
        if term_count != d.compute_term_count(term_id, self.initial_term_id):
            return ADMIN_ACTION
        position = d.compute_term_begin_position(term_id, self.bits, self.initial_term_id)
        position += term_offset
        if position >= self.limit():
            return BACK_PRESSURED
        appender = self.appenders[index]
        length = len(payload)
        if length <= self.max_payload_length:
            result = appender.append_unfragmented_message(
                self.header, payload, 0, length, supplier, term_id
            )
        else:
            result = appender.append_fragmented_message(
                self.header, payload, 0, length, self.max_payload_length, supplier, term_id
            )
        if result > 0:
            return position - term_offset + result
        d.rotate_log(meta, term_count, term_id)
        return ADMIN_ACTION

    def _offer_exclusive(self, payload: bytes, supplier: ReservedValueSupplier | None) -> int:
        term_begin = d.compute_term_begin_position(self.term_id, self.bits, self.initial_term_id)
        position = term_begin + self.term_offset
        if position >= self.limit():
            return BACK_PRESSURED
        appender = self.exclusive_appenders[d.index_by_term_count(self.term_count)]
        length = len(payload)
        if length <= self.max_payload_length:
            result = appender.append_unfragmented_message(
                self.term_id, self.term_offset, self.header, payload, 0, length, supplier
            )
        else:
            result = appender.append_fragmented_message(
                self.term_id,
                self.term_offset,
                self.header,
                payload,
                0,
                length,
                self.max_payload_length,
                supplier,
            )
        if result > 0:
            self.term_offset = result
            return term_begin + result
        self.term_id = d.compute_term_id_from_position(
            term_begin + self.term_length, self.bits, self.initial_term_id
        )
        self.term_count += 1
        self.term_offset = 0
        next_index = d.index_by_term_count(self.term_count)
        d.initialise_tail_with_term_id(self.meta, next_index, self.term_id)
        d.set_active_term_count_ordered(self.meta, self.term_count)
        return ADMIN_ACTION

    def offer_until_done(
        self, payload: bytes, on_back_pressure: Callable[[], object], max_attempts: int = 100_000
    ) -> int:
        for _ in range(max_attempts):
            result = self.offer(payload)
            if result > 0:
                return result
            if result == BACK_PRESSURED:
                on_back_pressure()
        raise AssertionError(f"offer did not succeed in {max_attempts} attempts")


def _raise(exc: Exception) -> None:
    raise exc


class Subscriber:
    """Polls a log from position 0 and zeroes each term it has read to the end of."""

    def __init__(self, log: LogBuffers, position_buffer: AtomicBuffer | None = None) -> None:
        self.log = log
        self.term_length = log.term_length
        self.bits = d.position_bits_to_shift(log.term_length)
        self.header = Header(log.metadata.initial_term_id, self.bits)
        self.position = 0
        self.position_buffer = position_buffer

    def poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        index = d.index_by_position(self.position, self.bits)
        term_offset = self.position & (self.term_length - 1)
        term_buffer = self.log.term_buffers[index]
        fragments, offset = term_reader.read(
            term_buffer, term_offset, handler, fragment_limit, self.header, _raise
        )
        if offset == self.term_length:
            term_buffer.set_memory(0, self.term_length, 0)
        self.position += offset - term_offset
        if self.position_buffer is not None:
            self.position_buffer.put_int64_ordered(0, self.position)
        return fragments
