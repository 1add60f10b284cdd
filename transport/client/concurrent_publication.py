"""``ConcurrentPublication``: a publication any number of threads and processes may share.

Every append reserves its space with one atomic get-and-add on the active term's raw tail in the
log metadata (:class:`~transport.logbuffer.TermAppender`), so writers in this process and in
others never wait for each other. The append that crosses the end of a term pads it, rotates the
log (a compare-and-set race that exactly one writer wins) and returns ``ADMIN_ACTION``; so does
an offer that finds the tail already in the next term before the active term count moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from threading import get_ident
from typing import TYPE_CHECKING, Final

from aeromq.transport.client.batch_writer import BatchWriter
from aeromq.transport.client.publication import (
    ADMIN_ACTION,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    Publication,
    VectorPiece,
    buffer_length,
    region_error,
    to_vectors,
)
from aeromq.transport.logbuffer.buffer_claim import BufferClaim
from aeromq.transport.logbuffer.buffer_vector import validate_and_compute_length
from aeromq.transport.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HDR_LENGTH
from aeromq.transport.logbuffer.handlers import ReservedValueSupplier
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_ACTIVE_TERM_COUNT_OFFSET,
    LOG_META_DATA_LENGTH,
    PARTITION_COUNT,
    rotate_log,
)
from aeromq.transport.logbuffer.term_appender import TermAppender

if TYPE_CHECKING:
    from typing_extensions import Buffer


__all__ = ["ConcurrentPublication"]

_LOW_32: Final = 0xFFFF_FFFF
_ALIGN_UP: Final = FRAME_ALIGNMENT - 1
_ALIGN_DOWN: Final = -FRAME_ALIGNMENT
_BYTES: Final = bytes
_BYTEARRAY: Final = bytearray
assert LOG_META_DATA_LENGTH > LOG_ACTIVE_TERM_COUNT_OFFSET


class ConcurrentPublication(Publication):
    """Thread- and process-safe appends to a shared log (``Aeron.add_publication``)."""

    __slots__ = ("_appenders", "_batches")

    def _init_appends(self) -> None:
        meta = self._meta
        self._appenders = tuple(
            TermAppender(term_buffer, meta, index)
            for index, term_buffer in enumerate(self._term_buffers)
        )
        self._batches: dict[int, BatchWriter] = {}

    def offer(
        self,
        buffer: Buffer,
        offset: int = 0,
        length: int = -1,
        reserved_value_supplier: ReservedValueSupplier | None = None,
    ) -> int:
        """Append ``length`` bytes of ``buffer`` from ``offset`` (all of it by default).

        Returns the new position, or ``NOT_CONNECTED``, ``BACK_PRESSURED``, ``ADMIN_ACTION``,
        ``CLOSED`` or ``MAX_POSITION_EXCEEDED``.
        """
        if self._is_closed:
            return CLOSED
        # These checks repeat ExclusivePublication.offer's on purpose, measured: one shared
        # check function costs ~90 ns an offer (~915 -> ~1005 ns).
        kind = type(buffer)
        capacity = len(buffer) if kind is _BYTES or kind is _BYTEARRAY else buffer_length(buffer)  # type: ignore[arg-type]  # len() of bytes or bytearray only: kind narrowed it, which mypy does not follow
        if length < 0:
            length = capacity - offset
        if offset < 0 or length < 0 or offset + length > capacity:
            raise region_error(offset, length, capacity)
        limit = self._position_limit()
        # The tail read repeats in offer_vectored, try_claim and offer_batch on purpose,
        # measured: one shared method costs ~70 ns a try_claim (~1140 -> ~1210 ns with commit).
        meta = self._meta
        term_count = meta.get_int32_volatile(LOG_ACTIVE_TERM_COUNT_OFFSET)
        index = term_count % PARTITION_COUNT
        raw_tail = meta.get_int64_volatile(index << 3)
        term_id = raw_tail >> 32
        if (term_id - self.initial_term_id) & _LOW_32 != term_count:
            return ADMIN_ACTION
        term_offset = raw_tail & _LOW_32
        position = (term_count << self.position_bits_to_shift) + term_offset
        if position >= limit:
            return self.back_pressure_status(position, length)
        if length <= self.max_payload_length and reserved_value_supplier is None:
            # the append (TermAppender) inlined on purpose, measured: offer ~1070 -> ~1010 ns
            frame_length = length + HDR_LENGTH
            aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
            reserved_tail = meta.get_and_add_int64(index << 3, aligned_length)
            if reserved_tail >> 32 != term_id:
                # this writer was delayed while the log rotated all the way round: its
                # reservation landed in a later term of the partition. What of it lies in that
                # term is padded, so no reader waits there for the unblock timeout, and the
                # caller reports ADMIN_ACTION (its rotation is a no-op) and offers again, as
                # ``TermAppender``'s paths do (Aeron raises "action possibly delayed")
                self._appenders[index].pad_reserved(
                    reserved_tail & _LOW_32,
                    aligned_length,
                    self._header_writer,
                    reserved_tail >> 32,
                )
                return self.end_of_term(term_count, term_offset, term_id, position)
            frame_offset = reserved_tail & _LOW_32
            resulting_offset = frame_offset + aligned_length
            term_buffer = self._term_buffers[index]
            if resulting_offset <= self.term_buffer_length:
                term_buffer.put_int64_ordered(
                    frame_offset, self._version_flags_type | (-frame_length & _LOW_32)
                )
                term_buffer.put_int64(frame_offset + 8, self._session_id_high | frame_offset)
                term_buffer.put_int64(frame_offset + 16, self._stream_id_low | (term_id << 32))
                term_buffer.put_bytes(frame_offset + HDR_LENGTH, buffer, offset, length)
                term_buffer.put_int32_ordered(frame_offset, frame_length)
                return position - term_offset + resulting_offset
            if frame_offset < self.term_buffer_length:
                self._header_writer.write_padding(
                    term_buffer, frame_offset, self.term_buffer_length - frame_offset, term_id
                )
            return self.end_of_term(term_count, term_offset, term_id, position)
        appender = self._appenders[index]
        if length <= self.max_payload_length:
            resulting_offset = appender.append_unfragmented_message(
                self._header_writer, buffer, offset, length, reserved_value_supplier, term_id
            )
        else:
            self.check_max_message_length(length)
            resulting_offset = appender.append_fragmented_message(
                self._header_writer,
                buffer,
                offset,
                length,
                self.max_payload_length,
                reserved_value_supplier,
                term_id,
            )
        if resulting_offset > 0:
            return position - term_offset + resulting_offset
        return self.end_of_term(term_count, term_offset, term_id, position)

    def offer_vectored(
        self,
        pieces: Sequence[VectorPiece],
        reserved_value_supplier: ReservedValueSupplier | None = None,
    ) -> int:
        """Append one message gathered from ``pieces`` (buffers or ``DirectBufferVector``s)."""
        vectors = to_vectors(pieces)
        length = validate_and_compute_length(vectors)
        if self._is_closed:
            return CLOSED
        limit = self._position_limit()
        meta = self._meta
        term_count = meta.get_int32_volatile(LOG_ACTIVE_TERM_COUNT_OFFSET)
        index = term_count % PARTITION_COUNT
        raw_tail = meta.get_int64_volatile(index << 3)
        term_id = raw_tail >> 32
        if (term_id - self.initial_term_id) & _LOW_32 != term_count:
            return ADMIN_ACTION
        term_offset = raw_tail & _LOW_32
        position = (term_count << self.position_bits_to_shift) + term_offset
        if position >= limit:
            return self.back_pressure_status(position, length)
        appender = self._appenders[index]
        if length <= self.max_payload_length:
            resulting_offset = appender.append_unfragmented_vectors(
                self._header_writer, vectors, length, reserved_value_supplier, term_id
            )
        else:
            self.check_max_message_length(length)
            resulting_offset = appender.append_fragmented_vectors(
                self._header_writer,
                vectors,
                length,
                self.max_payload_length,
                reserved_value_supplier,
                term_id,
            )
        if resulting_offset > 0:
            return position - term_offset + resulting_offset
        return self.end_of_term(term_count, term_offset, term_id, position)

    def try_claim(self, length: int, buffer_claim: BufferClaim) -> int:
        """Claim a frame for ``length`` bytes (<= ``max_payload_length``) to write in place.

        On success (a position > 0) fill ``buffer_claim`` and call its ``commit()`` or
        ``abort()`` promptly: readers wait at the claimed frame until then.
        """
        self.check_payload_length(length)
        if self._is_closed:
            return CLOSED
        limit = self._position_limit()
        meta = self._meta
        term_count = meta.get_int32_volatile(LOG_ACTIVE_TERM_COUNT_OFFSET)
        index = term_count % PARTITION_COUNT
        raw_tail = meta.get_int64_volatile(index << 3)
        term_id = raw_tail >> 32
        if (term_id - self.initial_term_id) & _LOW_32 != term_count:
            return ADMIN_ACTION
        term_offset = raw_tail & _LOW_32
        position = (term_count << self.position_bits_to_shift) + term_offset
        if position >= limit:
            return self.back_pressure_status(position, length)
        resulting_offset = self._appenders[index].claim(
            self._header_writer, length, buffer_claim, term_id
        )
        if resulting_offset > 0:
            return position - term_offset + resulting_offset
        return self.end_of_term(term_count, term_offset, term_id, position)

    def offer_batch(
        self,
        messages: Sequence[Buffer],
        start: int = 0,
        count: int = -1,
        reserved_value_supplier: ReservedValueSupplier | None = None,
    ) -> int:
        """Append ``messages[start:start + count]`` (all from ``start`` by default) in order,
        reserving their space with one atomic add and publishing them with one release store.
        Safe from several threads (each has its own scratch block).

        Returns how many were appended (the first ones; call again from ``start + n`` for the
        rest), or a negative code when none was (``position`` gives the new position). Each
        message is appended only if the position before it is below the limit, as if offered one
        by one; a message longer than ``max_payload_length`` is offered by itself. Messages are
        bytes-like (``bytes``, ``bytearray``, ``AtomicBuffer``, byte memoryviews).
        """
        if self._is_closed:
            return CLOSED
        end = len(messages) if count < 0 else min(len(messages), start + count)
        if start >= end:
            return 0
        limit = self._position_limit()
        meta = self._meta
        term_count = meta.get_int32_volatile(LOG_ACTIVE_TERM_COUNT_OFFSET)
        index = term_count % PARTITION_COUNT
        raw_tail = meta.get_int64_volatile(index << 3)
        term_id = raw_tail >> 32
        if (term_id - self.initial_term_id) & _LOW_32 != term_count:
            return ADMIN_ACTION
        term_offset = raw_tail & _LOW_32
        position = (term_count << self.position_bits_to_shift) + term_offset
        batch = self._batches.get(get_ident())
        if batch is None:
            batch = self._batches[get_ident()] = BatchWriter(self)
        taken = batch.build(messages, start, end, term_offset, term_id, position, limit)
        if taken <= 0:
            return self.offer_first_alone(
                messages[start], taken, position, limit, reserved_value_supplier
            )
        total = batch.length
        raw_tail = meta.get_and_add_int64(index << 3, total)
        if raw_tail >> 32 != term_id:  # delayed past a full rotation: as in offer
            self._appenders[index].pad_reserved(
                raw_tail & _LOW_32, total, self._header_writer, raw_tail >> 32
            )
            return self.end_of_term(term_count, term_offset, term_id, position)
        actual_offset = raw_tail & _LOW_32
        term_length = self.term_buffer_length
        if actual_offset + total > term_length:
            if actual_offset < term_length:
                self._header_writer.write_padding(
                    self._term_buffers[index], actual_offset, term_length - actual_offset, term_id
                )
            actual_position = position - term_offset + actual_offset
            return self.end_of_term(term_count, actual_offset, term_id, actual_position)
        if actual_offset != term_offset:
            batch.move_to(actual_offset)
        batch.publish(self._term_buffers[index], actual_offset, reserved_value_supplier)
        return taken

    def end_of_term(self, term_count: int, term_offset: int, term_id: int, position: int) -> int:
        """The append went past the end of the term: rotate the log, or report the end."""
        if position + term_offset > self.max_possible_position:
            return MAX_POSITION_EXCEEDED
        rotate_log(self._meta, term_count, term_id)
        return ADMIN_ACTION
