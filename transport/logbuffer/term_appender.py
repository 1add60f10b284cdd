"""``TermAppender``: many writers, in threads or processes, appending frames to one term.

Each append reserves its space with one atomic get-and-add of the aligned frame length on the
partition's raw tail (``term_id << 32 | term_offset``), so writers never wait for each other;
then it writes the frame in the reserved space (see :mod:`transport.logbuffer._frame_writer` for
the order of the stores) and publishes its length.

The writer whose reservation crosses the end of the term writes a PAD frame over the rest of the
term (if any is left) and gets ``FAILED``; so does every writer after it in that term. The caller
(the publication) then rotates the log with
:func:`~transport.logbuffer.log_buffer_descriptor.rotate_log` and reports ``ADMIN_ACTION``.
Success returns the term offset just after what was appended.

Messages are never split across terms. A caller passes the term id it read from the tail with
the active term count. If the reservation lands in another term (the writer was delayed while
the log rotated all the way round to this partition), the space it got there is turned into
padding and the append returns ``FAILED``: the caller's rotation is then a no-op (its term count
is stale) and it offers again. Aeron raises "action possibly delayed" here and leaves the space
to the driver's unblocker, which stalls every reader until the unblock timeout; with small terms
and a GIL-bound writer that delay is not rare, so this appender repairs the term itself.
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

__all__ = ["FAILED", "TermAppender"]

FAILED: Final = -2
"""The append went past the end of the term: nothing was appended and the log must rotate."""

_LOW_32: Final = 0xFFFF_FFFF
_ALIGN_UP: Final = FRAME_ALIGNMENT - 1
_ALIGN_DOWN: Final = -FRAME_ALIGNMENT


class TermAppender(PartitionAppender):
    """Appends frames to one partition of a log, safely among concurrent writers."""

    __slots__ = ()

    def raw_tail_volatile(self) -> int:
        """The partition's raw tail (acquire load): term id << 32 | tail offset.

        The tail offset may run past the term length once the term is full.
        """
        return self._meta.get_int64_volatile(self._tail_offset)

    def claim(
        self, header: HeaderWriter, length: int, buffer_claim: BufferClaim, active_term_id: int
    ) -> int:
        """Reserve a frame for ``length`` bytes of payload and hand it to ``buffer_claim``."""
        # _reserve and HeaderWriter.write inlined on purpose, measured: ~585 -> ~500 ns a claim
        frame_length = length + HDR_LENGTH
        aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
        raw_tail = self._meta.get_and_add_int64(self._tail_offset, aligned_length)
        term_id = raw_tail >> 32
        term_offset = raw_tail & _LOW_32
        resulting_offset = term_offset + aligned_length
        if resulting_offset > self._term_length or term_id != active_term_id:
            return self.pad_reserved(term_offset, aligned_length, header, term_id)
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

    def append_padding(self, header: HeaderWriter, length: int, active_term_id: int) -> int:
        """Append a padding frame with room for ``length`` bytes (readers skip it)."""
        frame_length = length + HDR_LENGTH
        aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
        term_offset = self._reserve(aligned_length, header, active_term_id)
        if term_offset < 0:
            return FAILED
        header.write_padding(self._term_buffer, term_offset, frame_length, active_term_id)
        return term_offset + aligned_length

    def append_unfragmented_message(
        self,
        header: HeaderWriter,
        src: Buffer,
        src_offset: int,
        length: int,
        reserved_value_supplier: ReservedValueSupplier | None,
        active_term_id: int,
    ) -> int:
        """Append ``length`` bytes of ``src`` from ``src_offset`` as one frame (length <= MTU - 32)."""
        # _reserve and HeaderWriter.write inlined on purpose, measured: ~600 -> ~530 ns an append
        frame_length = length + HDR_LENGTH
        aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
        raw_tail = self._meta.get_and_add_int64(self._tail_offset, aligned_length)
        term_id = raw_tail >> 32
        term_offset = raw_tail & _LOW_32
        resulting_offset = term_offset + aligned_length
        if resulting_offset > self._term_length or term_id != active_term_id:
            return self.pad_reserved(term_offset, aligned_length, header, term_id)
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
        header: HeaderWriter,
        src: Buffer,
        src_offset: int,
        length: int,
        max_payload_length: int,
        reserved_value_supplier: ReservedValueSupplier | None,
        active_term_id: int,
    ) -> int:
        """Append a message longer than ``max_payload_length`` (MTU - 32) as fragments."""
        required_length = compute_fragmented_frame_length(length, max_payload_length)
        term_offset = self._reserve(required_length, header, active_term_id)
        if term_offset < 0:
            return FAILED
        vector = (DirectBufferVector(src, src_offset, length),)
        write_fragmented(
            self._term_buffer,
            term_offset,
            header,
            active_term_id,
            vector,
            length,
            max_payload_length,
            reserved_value_supplier,
        )
        return term_offset + required_length

    def append_unfragmented_vectors(
        self,
        header: HeaderWriter,
        vectors: Sequence[DirectBufferVector],
        length: int,
        reserved_value_supplier: ReservedValueSupplier | None,
        active_term_id: int,
    ) -> int:
        """Append the vectors, ``length`` bytes in all, as one frame."""
        frame_length = length + HDR_LENGTH
        aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
        term_offset = self._reserve(aligned_length, header, active_term_id)
        if term_offset < 0:
            return FAILED
        write_unfragmented(
            self._term_buffer,
            term_offset,
            header,
            active_term_id,
            vectors,
            frame_length,
            reserved_value_supplier,
        )
        return term_offset + aligned_length

    def append_fragmented_vectors(
        self,
        header: HeaderWriter,
        vectors: Sequence[DirectBufferVector],
        length: int,
        max_payload_length: int,
        reserved_value_supplier: ReservedValueSupplier | None,
        active_term_id: int,
    ) -> int:
        """Append the vectors, ``length`` bytes in all, as fragments of ``max_payload_length``."""
        required_length = compute_fragmented_frame_length(length, max_payload_length)
        term_offset = self._reserve(required_length, header, active_term_id)
        if term_offset < 0:
            return FAILED
        write_fragmented(
            self._term_buffer,
            term_offset,
            header,
            active_term_id,
            vectors,
            length,
            max_payload_length,
            reserved_value_supplier,
        )
        return term_offset + required_length

    def _reserve(self, length: int, header: HeaderWriter, active_term_id: int) -> int:
        """Reserve ``length`` bytes of the term: their offset, or ``FAILED``.

        The single-frame appends inline this (a call is a large share of their cost).
        """
        raw_tail = self._meta.get_and_add_int64(self._tail_offset, length)
        term_id = raw_tail >> 32
        term_offset = raw_tail & _LOW_32
        if term_offset + length > self._term_length or term_id != active_term_id:
            return self.pad_reserved(term_offset, length, header, term_id)
        return term_offset

    def pad_reserved(
        self, term_offset: int, length: int, header: HeaderWriter, term_id: int
    ) -> int:
        """Pad whatever part of the term a reservation of ``length`` bytes at ``term_offset`` of
        term ``term_id`` got, so no reader waits on it; returns ``FAILED``. Also for a writer
        that reserved without this appender (``ConcurrentPublication``'s inlined offers)."""
        term_length = self._term_length
        if term_offset + length <= term_length:  # a delayed writer's space in a later term
            header.write_padding(self._term_buffer, term_offset, length, term_id)
        elif term_offset < term_length:  # the reservation that crossed the end of the term
            header.write_padding(self._term_buffer, term_offset, term_length - term_offset, term_id)
        return FAILED
