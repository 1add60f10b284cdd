"""``ExclusivePublication``: a publication with one writer, which needs no atomic reservation.

The log is this publication's alone, so the term id, term offset and term begin position live
here rather than being read back from the shared tail on every call: an append stores the new
tail with one release store (:class:`~transport.logbuffer.ExclusiveTermAppender`) and the
rotation at the end of a term is a plain update of the next tail and the active term count.
Only one thread may use it at a time.

That state is an :class:`~transport.logbuffer.term_io.ExclusiveTail`, whose ``offer`` appends a
message of one frame in one native call where the helper is built; everything else (a reserved
value supplier, fragments, back pressure, padding and rotation) and the fallback where the
helper is not built take the Python path below, the reference the native offer is tested
against.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from aeromq.transport.concurrent.counters_descriptor import checked_counter_offset
from aeromq.transport.logbuffer.buffer_claim import BufferClaim
from aeromq.transport.logbuffer.buffer_vector import validate_and_compute_length
from aeromq.transport.logbuffer.exclusive_term_appender import ExclusiveTermAppender
from aeromq.transport.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HDR_LENGTH
from aeromq.transport.logbuffer.handlers import ReservedValueSupplier
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    PARTITION_COUNT,
    active_term_count,
    compute_term_begin_position,
    initialise_tail_with_term_id,
    raw_tail_volatile,
    set_active_term_count_ordered,
    term_offset,
)
from aeromq.transport.logbuffer.term_io import NATIVE_TERM_IO, ExclusiveTail

if TYPE_CHECKING:
    from typing_extensions import Buffer


__all__ = ["ExclusivePublication"]

_LOW_32: Final = 0xFFFF_FFFF
_ALIGN_UP: Final = FRAME_ALIGNMENT - 1
_ALIGN_DOWN: Final = -FRAME_ALIGNMENT
_BYTES: Final = bytes
_BYTEARRAY: Final = bytearray
_INT32_SPAN: Final = 1 << 32
_INT32_MAX: Final = (1 << 31) - 1


class ExclusivePublication(Publication):
    """Single-writer appends to a log of its own (``Aeron.add_exclusive_publication``)."""

    __slots__ = ("_appenders", "_batch", "_native_offer", "_tail")

    def _init_appends(self) -> None:
        meta = self._meta
        self._appenders = tuple(
            ExclusiveTermAppender(term_buffer, meta, index)
            for index, term_buffer in enumerate(self._term_buffers)
        )
        index = active_term_count(meta) % PARTITION_COUNT
        raw_tail = raw_tail_volatile(meta, index)
        term_id = raw_tail >> 32
        values = self._conductor.counters_values_buffer
        self._tail = ExclusiveTail(
            self._term_buffers,
            meta,
            values,
            checked_counter_offset(values.capacity, self.position_limit_id),
            (self._version_flags_type, self._session_id_high, self._stream_id_low),
            self.term_buffer_length,
            self.max_payload_length,
            term_id,
            term_offset(raw_tail, self.term_buffer_length),
            index,
            compute_term_begin_position(term_id, self.position_bits_to_shift, self.initial_term_id),
        )
        self._native_offer = self._tail.offer if NATIVE_TERM_IO else None
        self._batch = BatchWriter(self)

    @property
    def position(self) -> int:
        """The position the next message will start at, or ``CLOSED``."""
        if self._is_closed:
            return CLOSED
        tail = self._tail
        return tail.term_begin_position + tail.term_offset

    @property
    def term_id(self) -> int:
        """The id of the term the next message goes into."""
        return self._tail.term_id

    @property
    def term_offset(self) -> int:
        """Where the next message starts in that term, in bytes."""
        return self._tail.term_offset

    def internal_close(self) -> None:
        """Mark closed without telling the driver (the conductor's side of a close)."""
        self._tail.close()
        super().internal_close()

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
        native_offer = self._native_offer
        if native_offer is not None and reserved_value_supplier is None:
            # one frame in one native call (transport/logbuffer/_term_io.c); 0: the Python path
            result = native_offer(buffer, offset, length)
            if result > 0:
                return result
        if self._is_closed:
            return CLOSED
        # These checks repeat ConcurrentPublication.offer's on purpose (a shared function:
        # ~90 ns more an offer).
        kind = type(buffer)
        capacity = len(buffer) if kind is _BYTES or kind is _BYTEARRAY else buffer_length(buffer)  # type: ignore[arg-type]  # len() of bytes or bytearray only: kind narrowed it, which mypy does not follow
        if length < 0:
            length = capacity - offset
        if offset < 0 or length < 0 or offset + length > capacity:
            raise region_error(offset, length, capacity)
        limit = self._position_limit()
        tail = self._tail
        term_offset = tail.term_offset
        position = tail.term_begin_position + term_offset
        if position >= limit:
            return self.back_pressure_status(position, length)
        if length <= self.max_payload_length and reserved_value_supplier is None:
            # the append (ExclusiveTermAppender) inlined on purpose, measured: offer ~815 -> ~765 ns
            frame_length = length + HDR_LENGTH
            resulting_offset = term_offset + ((frame_length + _ALIGN_UP) & _ALIGN_DOWN)
            term_id = tail.term_id
            index = tail.active_index
            self._meta.put_int64_ordered(index << 3, (term_id << 32) | resulting_offset)
            term_buffer = self._term_buffers[index]
            if resulting_offset <= self.term_buffer_length:
                term_buffer.put_int64_ordered(
                    term_offset, self._version_flags_type | (-frame_length & _LOW_32)
                )
                term_buffer.put_int64(term_offset + 8, self._session_id_high | term_offset)
                term_buffer.put_int64(term_offset + 16, self._stream_id_low | (term_id << 32))
                term_buffer.put_bytes(term_offset + HDR_LENGTH, buffer, offset, length)
                term_buffer.put_int32_ordered(term_offset, frame_length)
                tail.term_offset = resulting_offset
                return tail.term_begin_position + resulting_offset
            if term_offset < self.term_buffer_length:
                self._header_writer.write_padding(
                    term_buffer, term_offset, self.term_buffer_length - term_offset, term_id
                )
            return self._rotate()
        appender = self._appenders[tail.active_index]
        if length <= self.max_payload_length:
            result = appender.append_unfragmented_message(
                tail.term_id,
                term_offset,
                self._header_writer,
                buffer,
                offset,
                length,
                reserved_value_supplier,
            )
        else:
            self.check_max_message_length(length)
            result = appender.append_fragmented_message(
                tail.term_id,
                term_offset,
                self._header_writer,
                buffer,
                offset,
                length,
                self.max_payload_length,
                reserved_value_supplier,
            )
        if result > 0:
            tail.term_offset = result
            return tail.term_begin_position + result
        return self._rotate()

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
        tail = self._tail
        position = tail.term_begin_position + tail.term_offset
        if position >= limit:
            return self.back_pressure_status(position, length)
        appender = self._appenders[tail.active_index]
        if length <= self.max_payload_length:
            result = appender.append_unfragmented_vectors(
                tail.term_id,
                tail.term_offset,
                self._header_writer,
                vectors,
                length,
                reserved_value_supplier,
            )
        else:
            self.check_max_message_length(length)
            result = appender.append_fragmented_vectors(
                tail.term_id,
                tail.term_offset,
                self._header_writer,
                vectors,
                length,
                self.max_payload_length,
                reserved_value_supplier,
            )
        if result > 0:
            tail.term_offset = result
            return tail.term_begin_position + result
        return self._rotate()

    def try_claim(self, length: int, buffer_claim: BufferClaim) -> int:
        """Claim a frame for ``length`` bytes (<= ``max_payload_length``) to write in place."""
        if length > self.max_payload_length or length < 0:
            self.check_payload_length(length)
        if self._is_closed:
            return CLOSED
        limit = self._position_limit()
        tail = self._tail
        term_offset = tail.term_offset
        position = tail.term_begin_position + term_offset
        if position >= limit:
            return self.back_pressure_status(position, length)
        # ExclusiveTermAppender.claim inlined on purpose, measured: try_claim+commit ~690 -> ~620 ns
        frame_length = length + HDR_LENGTH
        resulting_offset = term_offset + ((frame_length + _ALIGN_UP) & _ALIGN_DOWN)
        term_id = tail.term_id
        index = tail.active_index
        self._meta.put_int64_ordered(index << 3, (term_id << 32) | resulting_offset)
        term_buffer = self._term_buffers[index]
        if resulting_offset <= self.term_buffer_length:
            term_buffer.put_int64_ordered(
                term_offset, self._version_flags_type | (-frame_length & _LOW_32)
            )
            term_buffer.put_int64(term_offset + 8, self._session_id_high | term_offset)
            term_buffer.put_int64(term_offset + 16, self._stream_id_low | (term_id << 32))
            buffer_claim.wrap(term_buffer, term_offset, frame_length)
            tail.term_offset = resulting_offset
            return tail.term_begin_position + resulting_offset
        if term_offset < self.term_buffer_length:
            self._header_writer.write_padding(
                term_buffer, term_offset, self.term_buffer_length - term_offset, term_id
            )
        return self._rotate()

    def offer_batch(
        self,
        messages: Sequence[Buffer],
        start: int = 0,
        count: int = -1,
        reserved_value_supplier: ReservedValueSupplier | None = None,
    ) -> int:
        """Append ``messages[start:start + count]`` as one block; see
        :meth:`ConcurrentPublication.offer_batch <transport.client.ConcurrentPublication.offer_batch>`
        for the contract (the number appended, or a negative code when none was)."""
        if self._is_closed:
            return CLOSED
        end = len(messages) if count < 0 else min(len(messages), start + count)
        if start >= end:
            return 0
        limit = self._position_limit()
        tail = self._tail
        term_offset = tail.term_offset
        position = tail.term_begin_position + term_offset
        batch = self._batch
        taken = batch.build(messages, start, end, term_offset, tail.term_id, position, limit)
        if taken <= 0:
            return self.offer_first_alone(
                messages[start], taken, position, limit, reserved_value_supplier
            )
        index = tail.active_index
        resulting_offset = term_offset + batch.length
        self._meta.put_int64_ordered(index << 3, (tail.term_id << 32) | resulting_offset)
        batch.publish(self._term_buffers[index], term_offset, reserved_value_supplier)
        tail.term_offset = resulting_offset
        return taken

    def _rotate(self) -> int:
        """The append did not fit in the term: move to the next term, or report the end."""
        term_length = self.term_buffer_length
        tail = self._tail
        if tail.term_begin_position + term_length >= self.max_possible_position:
            return MAX_POSITION_EXCEEDED
        next_index = (tail.active_index + 1) % PARTITION_COUNT
        next_term_id = tail.term_id + 1
        if next_term_id > _INT32_MAX:
            next_term_id -= _INT32_SPAN
        tail.active_index = next_index
        tail.term_offset = 0
        tail.term_id = next_term_id
        tail.term_begin_position += term_length
        meta = self._meta
        initialise_tail_with_term_id(meta, next_index, next_term_id)
        term_count = (next_term_id - self.initial_term_id) & 0xFFFF_FFFF
        set_active_term_count_ordered(meta, term_count)
        return ADMIN_ACTION
