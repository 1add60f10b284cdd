"""``ExclusiveTermAppender``: the single writer of a term (an exclusive publication).

With one writer there is nothing to race, so the appender needs no atomic read-modify-write: the
caller keeps the term id and offset, and each append stores the new raw tail with one release
store before it writes the frame (so the driver, which reads the tail, sees the reservation),
then writes and publishes the frame as the concurrent appender does. The vectored appends (the
broker's answers) prefault the term's pages a step ahead on its first lap
(``PartitionAppender.prefault``).

An append that does not fit in the rest of the term pads the rest (if any is left) and returns
``FAILED``; the caller rotates the log. Success returns the term offset after the append.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from aeromq.transport.logbuffer._frame_writer import (
    PartitionAppender,
    write_fragmented,
    write_unfragmented,
)
from aeromq.transport.logbuffer.buffer_claim import BufferClaim
from aeromq.transport.logbuffer.buffer_vector import DirectBufferVector
from aeromq.transport.logbuffer.frame_descriptor import (
    FRAME_ALIGNMENT,
    HDR_LENGTH,
    RESERVED_VALUE_FIELD_OFFSET,
    STREAM_ID_FIELD_OFFSET,
    TERM_OFFSET_FIELD_OFFSET,
)
from aeromq.transport.logbuffer.handlers import ReservedValueSupplier
from aeromq.transport.logbuffer.header import HeaderWriter
from aeromq.transport.logbuffer.log_buffer_descriptor import compute_fragmented_frame_length

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["FAILED", "ExclusiveTermAppender"]

FAILED: Final = -1
"""The append did not fit in the rest of the term: nothing was appended; rotate the log."""

_LOW_32: Final = 0xFFFF_FFFF
_ALIGN_UP: Final = FRAME_ALIGNMENT - 1
_ALIGN_DOWN: Final = -FRAME_ALIGNMENT


class ExclusiveTermAppender(PartitionAppender):
    """Appends frames to one partition of a log for its only writer."""

    __slots__ = ()

    def claim(
        self,
        term_id: int,
        term_offset: int,
        header: HeaderWriter,
        length: int,
        buffer_claim: BufferClaim,
    ) -> int:
        """Reserve a frame for ``length`` bytes of payload and hand it to ``buffer_claim``."""
        # _reserve and HeaderWriter.write inlined on purpose, measured: ~585 -> ~500 ns a claim
        frame_length = length + HDR_LENGTH
        resulting_offset = term_offset + ((frame_length + _ALIGN_UP) & _ALIGN_DOWN)
        self._meta.put_int64_ordered(self._tail_offset, (term_id << 32) | resulting_offset)
        if resulting_offset > self._term_length:
            return self._handle_end_of_log(term_offset, header, term_id)
        term_buffer = self._term_buffer
        term_buffer.put_int64_ordered(
            term_offset, header.version_flags_type | (-frame_length & _LOW_32)
        )
        term_buffer.put_int64(
            term_offset + TERM_OFFSET_FIELD_OFFSET, header.session_id_high | term_offset
        )
        term_buffer.put_int64(
            term_offset + STREAM_ID_FIELD_OFFSET, header.stream_id_low | (term_id << 32)
        )
        buffer_claim.wrap(term_buffer, term_offset, frame_length)
        return resulting_offset

    def append_padding(
        self, term_id: int, term_offset: int, header: HeaderWriter, length: int
    ) -> int:
        """Append a padding frame with room for ``length`` bytes (readers skip it)."""
        frame_length = length + HDR_LENGTH
        aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
        if self._reserve(term_id, term_offset, aligned_length, header) < 0:
            return FAILED
        header.write_padding(self._term_buffer, term_offset, frame_length, term_id)
        return term_offset + aligned_length

    def append_unfragmented_message(
        self,
        term_id: int,
        term_offset: int,
        header: HeaderWriter,
        src: Buffer,
        src_offset: int,
        length: int,
        reserved_value_supplier: ReservedValueSupplier | None,
    ) -> int:
        """Append ``length`` bytes of ``src`` from ``src_offset`` as one frame (length <= MTU - 32)."""
        # _reserve and HeaderWriter.write inlined on purpose, measured: ~575 -> ~500 ns an append
        frame_length = length + HDR_LENGTH
        resulting_offset = term_offset + ((frame_length + _ALIGN_UP) & _ALIGN_DOWN)
        self._meta.put_int64_ordered(self._tail_offset, (term_id << 32) | resulting_offset)
        if resulting_offset > self._term_length:
            return self._handle_end_of_log(term_offset, header, term_id)
        term_buffer = self._term_buffer
        term_buffer.put_int64_ordered(
            term_offset, header.version_flags_type | (-frame_length & _LOW_32)
        )
        term_buffer.put_int64(
            term_offset + TERM_OFFSET_FIELD_OFFSET, header.session_id_high | term_offset
        )
        term_buffer.put_int64(
            term_offset + STREAM_ID_FIELD_OFFSET, header.stream_id_low | (term_id << 32)
        )
        term_buffer.put_bytes(term_offset + HDR_LENGTH, src, src_offset, length)
        if reserved_value_supplier is not None:
            value = reserved_value_supplier(term_buffer, term_offset, frame_length)
            term_buffer.put_int64(term_offset + RESERVED_VALUE_FIELD_OFFSET, value)
        term_buffer.put_int32_ordered(term_offset, frame_length)
        return resulting_offset

    def append_fragmented_message(
        self,
        term_id: int,
        term_offset: int,
        header: HeaderWriter,
        src: Buffer,
        src_offset: int,
        length: int,
        max_payload_length: int,
        reserved_value_supplier: ReservedValueSupplier | None,
    ) -> int:
        """Append a message longer than ``max_payload_length`` (MTU - 32) as fragments."""
        required_length = compute_fragmented_frame_length(length, max_payload_length)
        if self._reserve(term_id, term_offset, required_length, header) < 0:
            return FAILED
        vector = (DirectBufferVector(src, src_offset, length),)
        write_fragmented(
            self._term_buffer,
            term_offset,
            header,
            term_id,
            vector,
            length,
            max_payload_length,
            reserved_value_supplier,
        )
        return term_offset + required_length

    def append_unfragmented_vectors(
        self,
        term_id: int,
        term_offset: int,
        header: HeaderWriter,
        vectors: Sequence[DirectBufferVector],
        length: int,
        reserved_value_supplier: ReservedValueSupplier | None,
    ) -> int:
        """Append the vectors, ``length`` bytes in all, as one frame."""
        frame_length = length + HDR_LENGTH
        aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
        if self._reserve(term_id, term_offset, aligned_length, header) < 0:
            return FAILED
        self.prefault(term_offset + aligned_length)
        write_unfragmented(
            self._term_buffer,
            term_offset,
            header,
            term_id,
            vectors,
            frame_length,
            reserved_value_supplier,
        )
        return term_offset + aligned_length

    def append_fragmented_vectors(
        self,
        term_id: int,
        term_offset: int,
        header: HeaderWriter,
        vectors: Sequence[DirectBufferVector],
        length: int,
        max_payload_length: int,
        reserved_value_supplier: ReservedValueSupplier | None,
    ) -> int:
        """Append the vectors, ``length`` bytes in all, as fragments of ``max_payload_length``."""
        required_length = compute_fragmented_frame_length(length, max_payload_length)
        if self._reserve(term_id, term_offset, required_length, header) < 0:
            return FAILED
        self.prefault(term_offset + required_length)
        write_fragmented(
            self._term_buffer,
            term_offset,
            header,
            term_id,
            vectors,
            length,
            max_payload_length,
            reserved_value_supplier,
        )
        return term_offset + required_length

    def _reserve(self, term_id: int, term_offset: int, length: int, header: HeaderWriter) -> int:
        """Move the tail past ``length`` bytes: ``term_offset``, or ``FAILED`` if they do not fit.

        The single-frame appends inline this (a call is a large share of their cost).
        """
        resulting_offset = term_offset + length
        self._meta.put_int64_ordered(self._tail_offset, (term_id << 32) | resulting_offset)
        if resulting_offset > self._term_length:
            return self._handle_end_of_log(term_offset, header, term_id)
        return term_offset

    def _handle_end_of_log(self, term_offset: int, header: HeaderWriter, term_id: int) -> int:
        term_length = self._term_length
        if term_offset < term_length:
            header.write_padding(self._term_buffer, term_offset, term_length - term_offset, term_id)
        return FAILED
