"""Frame writing shared by the concurrent and the exclusive term appender.

Both appenders reserve the space first (a get-and-add on the tail, or a release store of the new
tail) and then fill it the same way, which is what lives here: a frame gathered from vectors,
and the fragments of a message longer than the maximum payload (a plain message is one vector).
The single-frame append and the claim stay inlined in the appenders, where one more function
call is a large share of the cost (measured: ~70-90 ns of ~500-600 ns an append or a claim).

Each frame is written in Aeron's order: the first header word with the length negated (release),
the other header words, the payload, the reserved value, then the positive length (release).

A frame's payload gathered from several vectors is one call of the C helper
(``transport/logbuffer/_gather.c``: plain copies, published by the release store of the length
after them), or the Python loop over the vectors where that module is not built (the reference
a test holds the C code to).
"""

from __future__ import annotations

import mmap
from collections.abc import Sequence

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.buffer_vector import DirectBufferVector
from aeromq.transport.logbuffer.frame_descriptor import (
    BEGIN_FLAG,
    END_FLAG,
    FRAME_ALIGNMENT,
    HDR_LENGTH,
    RESERVED_VALUE_FIELD_OFFSET,
    STREAM_ID_FIELD_OFFSET,
    TERM_OFFSET_FIELD_OFFSET,
)
from aeromq.transport.logbuffer.handlers import ReservedValueSupplier
from aeromq.transport.logbuffer.header import HeaderWriter
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_META_DATA_LENGTH,
    tail_counter_offset,
)

try:
    from aeromq.transport.logbuffer import _gather
except ImportError:  # not built: the Python loop of ``_copy_vectors_py``
    _gather = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = ["PartitionAppender", "write_fragmented", "write_unfragmented"]

_LOW_32 = 0xFFFF_FFFF
_PAGE = mmap.PAGESIZE
_FLAGS_SHIFT = 40  # the flags byte (offset 5) within the first 8-byte header word
_CLEAR_FLAGS = ~(0xFF << _FLAGS_SHIFT)


PREFAULT_STEP = 1024 * 1024
"""How far ahead ``PartitionAppender.prefault`` makes a fresh term's pages present at a time
(measured on 4 KiB shared-memory pages: 1 MiB steps cost ~25% less than a fault a page; larger
steps no less)."""


class PartitionAppender:
    """What both appenders hold: one partition's term buffer and the offset of its tail.

    ``prefault(end)`` makes the term's pages up to ``end`` present in this mapping ahead of the
    writes, a step (``PREFAULT_STEP``) at a time, from where it got to: a fresh log's first lap
    otherwise takes one page fault per 4 KiB page, the largest part of writing a big message
    into it (the broker's 1 MiB pull answers). Only the first lap of each partition asks the
    kernel anything; nothing is written (``transport/logbuffer/_gather.c``, ``prefault``)."""

    __slots__ = ("_faulted_to", "_meta", "_tail_offset", "_term_buffer", "_term_length")

    def __init__(
        self, term_buffer: AtomicBuffer, meta_data_buffer: AtomicBuffer, partition_index: int
    ) -> None:
        if meta_data_buffer.capacity < LOG_META_DATA_LENGTH:
            raise ConfigurationError(
                "metadata buffer shorter than the metadata page",
                capacity=meta_data_buffer.capacity,
                required=LOG_META_DATA_LENGTH,
            )
        self._term_buffer = term_buffer
        self._term_length = term_buffer.capacity
        self._meta = meta_data_buffer
        self._tail_offset = tail_counter_offset(partition_index)
        self._faulted_to = 0 if _gather is not None else self._term_length

    @property
    def term_buffer(self) -> AtomicBuffer:
        return self._term_buffer

    def prefault(self, end: int) -> None:
        """Make the term's pages below ``end`` present, a step ahead (see the class)."""
        start = self._faulted_to
        if end <= start:
            return
        term_length = self._term_length
        stop = min(max(end, start + PREFAULT_STEP), term_length)
        stop = min((stop + _PAGE - 1) & -_PAGE, term_length)
        if _gather.prefault(self._term_buffer, start, stop - start) != 0:
            stop = term_length  # not page-aligned, or a kernel without it: stop asking
        self._faulted_to = stop


def write_unfragmented(
    term_buffer: AtomicBuffer,
    frame_offset: int,
    header: HeaderWriter,
    term_id: int,
    vectors: Sequence[DirectBufferVector],
    frame_length: int,
    reserved_value_supplier: ReservedValueSupplier | None,
) -> None:
    """Write one frame of ``frame_length`` whose payload is the vectors one after the other."""
    header.write(term_buffer, frame_offset, frame_length, term_id)
    offset = frame_offset + HDR_LENGTH
    if _gather is not None and len(vectors) > 1:
        _gather.copy_vectors(term_buffer, offset, vectors, 0, 0, frame_length - HDR_LENGTH)
    else:
        put_bytes = term_buffer.put_bytes
        for buffer, vector_offset, vector_length in vectors:
            put_bytes(offset, buffer, vector_offset, vector_length)
            offset += vector_length
    if reserved_value_supplier is not None:
        value = reserved_value_supplier(term_buffer, frame_offset, frame_length)
        term_buffer.put_int64(frame_offset + RESERVED_VALUE_FIELD_OFFSET, value)
    term_buffer.put_int32_ordered(frame_offset, frame_length)


def write_fragmented(
    term_buffer: AtomicBuffer,
    frame_offset: int,
    header: HeaderWriter,
    term_id: int,
    vectors: Sequence[DirectBufferVector],
    length: int,
    max_payload_length: int,
    reserved_value_supplier: ReservedValueSupplier | None,
) -> None:
    """Write the vectors, ``length`` bytes in all, as fragments of ``max_payload_length``."""
    base_word = header.version_flags_type & _CLEAR_FLAGS
    session_word = header.session_id_high
    stream_word = header.stream_id_low | (term_id << 32)
    put_int64 = term_buffer.put_int64
    put_bytes = term_buffer.put_bytes
    flags = BEGIN_FLAG
    remaining = length
    vector_index = 0
    vector_offset = 0
    single_source, source_offset, _ = vectors[0] if len(vectors) == 1 else (None, 0, 0)
    copy = _gather.copy_vectors if _gather is not None else _copy_vectors_py
    while True:
        bytes_to_write = min(remaining, max_payload_length)
        frame_length = bytes_to_write + HDR_LENGTH
        if remaining <= max_payload_length:
            flags |= END_FLAG
        term_buffer.put_int64_ordered(
            frame_offset, base_word | (flags << _FLAGS_SHIFT) | (-frame_length & _LOW_32)
        )
        put_int64(frame_offset + TERM_OFFSET_FIELD_OFFSET, session_word | frame_offset)
        put_int64(frame_offset + STREAM_ID_FIELD_OFFSET, stream_word)
        payload_offset = frame_offset + HDR_LENGTH
        if single_source is not None:  # one vector: copy straight from where the message is
            put_bytes(payload_offset, single_source, source_offset, bytes_to_write)
            source_offset += bytes_to_write
        else:
            vector_index, vector_offset = copy(
                term_buffer, payload_offset, vectors, vector_index, vector_offset, bytes_to_write
            )
        if reserved_value_supplier is not None:
            value = reserved_value_supplier(term_buffer, frame_offset, frame_length)
            put_int64(frame_offset + RESERVED_VALUE_FIELD_OFFSET, value)
        term_buffer.put_int32_ordered(frame_offset, frame_length)
        remaining -= bytes_to_write
        if remaining <= 0:
            return
        flags = 0
        frame_offset += (frame_length + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT


def _copy_vectors_py(
    term_buffer: AtomicBuffer,
    offset: int,
    vectors: Sequence[DirectBufferVector],
    vector_index: int,
    vector_offset: int,
    count: int,
) -> tuple[int, int]:
    """Copy ``count`` bytes of the vectors, from ``vector_offset`` into vector ``vector_index``,
    to ``offset``; where the copy stopped (the C helper's ``copy_vectors``, in Python)."""
    put_bytes = term_buffer.put_bytes
    while count > 0:
        buffer, start, vector_length = vectors[vector_index]
        vector_remaining = vector_length - vector_offset
        taken = min(count, vector_remaining)
        put_bytes(offset, buffer, start + vector_offset, taken)
        count -= taken
        offset += taken
        if taken == vector_remaining:
            vector_index += 1
            vector_offset = 0
        else:
            vector_offset += taken
    return vector_index, vector_offset
