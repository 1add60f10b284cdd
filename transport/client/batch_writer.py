"""``BatchWriter``: many unfragmented messages written to a term as one block (``offer_batch``).

Offering messages one by one costs a handful of native calls each (limit, term count, tail,
reservation, header, payload, commit). A batch instead builds the frames, headers included, in a
private scratch buffer, reserves their total length on the tail once, copies the block into the
term with one ``put_bytes`` and publishes it with one release store of the first frame's length:

1. build: each frame is a complete data frame (header with its positive length, term offset,
   session, stream and term id; payload; alignment padding zeroed), except the first, whose
   length is negated, as a claimed frame is;
2. the block is copied into the reserved region of the term; readers stop at the first frame,
   which still reads as claimed (negative), and so never see the frames behind it early;
3. the first frame's positive length is stored with release semantics: a reader that sees it
   sees every byte of the block.

The bytes in the term are exactly those a one-by-one offer would have written.

A batch of at least ``UNIFORM_BATCH_MIN`` messages of one length (the common case: fixed-size
records) is built with numpy over the scratch buffer, a handful of vector operations for the
whole batch instead of a header pack and a payload copy per message; other batches are built
frame by frame.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import numpy as np

from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import (
    FRAME_ALIGNMENT,
    HDR_LENGTH,
    RESERVED_VALUE_FIELD_OFFSET,
    SESSION_ID_FIELD_OFFSET,
    STREAM_ID_FIELD_OFFSET,
    TERM_OFFSET_FIELD_OFFSET,
    VERSION_FIELD_OFFSET,
)
from aeromq.transport.logbuffer.handlers import ReservedValueSupplier
from aeromq.transport.logbuffer.log_buffer_descriptor import LOG_DEFAULT_FRAME_HEADER_OFFSET

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from aeromq.transport.client.publication import Publication

__all__ = ["MAX_BATCH_LENGTH", "UNIFORM_BATCH_MIN", "BatchWriter"]

MAX_BATCH_LENGTH: Final = 256 * 1024
"""Most bytes of term one batch takes (so the scratch buffer stays small)."""
UNIFORM_BATCH_MIN: Final = 32
"""Fewest messages of one length for the vectorised build (below it the loop is cheaper)."""

_HEADER: Final = struct.Struct("<iiiiiiq")
"""frame length, version|flags|type word, term offset, session id, stream id, term id, reserved."""
_LENGTH: Final = struct.Struct("<i")
_ZERO_TAIL: Final = bytes(FRAME_ALIGNMENT)
_ALIGN_UP: Final = FRAME_ALIGNMENT - 1
_ALIGN_DOWN: Final = -FRAME_ALIGNMENT
_INT32: Final = np.dtype("<i4")
_STEPS: Final = np.arange(MAX_BATCH_LENGTH // FRAME_ALIGNMENT, dtype=_INT32)
_TERM_ID_WORD: Final = 5
_TERM_OFFSET_WORD: Final = 2


class BatchWriter:
    """The scratch block of one publication's batches (see module). Not thread-safe: a
    concurrent publication keeps one per thread."""

    __slots__ = (
        "_first_frame_length",
        "_header_template",
        "_max_payload_length",
        "_scratch",
        "_scratch_bytes",
        "_session_id",
        "_steps",
        "_steps_aligned_length",
        "_stream_id",
        "_term_length",
        "_version_flags_type",
        "length",
    )

    def __init__(self, publication: Publication) -> None:
        meta = publication.log_buffers.meta_data_buffer
        base = LOG_DEFAULT_FRAME_HEADER_OFFSET
        self._version_flags_type = meta.get_int32(base + VERSION_FIELD_OFFSET)
        self._session_id = meta.get_int32(base + SESSION_ID_FIELD_OFFSET)
        self._stream_id = meta.get_int32(base + STREAM_ID_FIELD_OFFSET)
        self._max_payload_length = publication.max_payload_length
        self._term_length = publication.term_buffer_length
        self._scratch = bytearray(0)
        self._scratch_bytes: np.ndarray[tuple[int], np.dtype[np.uint8]] | None = None
        self._header_template = np.array(
            [0, self._version_flags_type, 0, self._session_id, self._stream_id, 0, 0, 0],
            dtype=_INT32,
        )
        self._first_frame_length = 0
        self._steps = _STEPS
        """Term offsets of a uniform batch's frames from its start: multiples of
        ``_steps_aligned_length``."""
        self._steps_aligned_length = 1
        self.length = 0

    def build(
        self,
        messages: Sequence[Buffer],
        start: int,
        end: int,
        term_offset: int,
        term_id: int,
        position: int,
        limit: int,
    ) -> int:
        """Build frames for ``messages[start:end]`` to go at ``term_offset``.

        Returns the number built (> 0; :attr:`length` is their bytes of term), 0 when the
        first message is longer than the max payload (offer it alone), or -1 when the first
        one cannot go: the position is at the limit, or it does not fit in the term.
        """
        if position >= limit:
            return -1
        scratch = self._scratch
        if not scratch:
            scratch = self._scratch = bytearray(min(MAX_BATCH_LENGTH, self._term_length))
        room = min(self._term_length - term_offset, len(scratch))
        if end - start >= UNIFORM_BATCH_MIN:
            taken = self._build_uniform(
                messages, start, end, term_offset, term_id, limit - position, room
            )
            if taken > 0:
                return taken
        pack = _HEADER.pack_into
        version_flags_type = self._version_flags_type
        session_id = self._session_id
        stream_id = self._stream_id
        max_payload_length = self._max_payload_length
        total = 0
        index = start
        length = 0
        while index < end:
            message = messages[index]
            kind = type(message)
            if kind is not bytes and kind is not bytearray:
                message = _byte_view(message)
            length = len(message)  # type: ignore[arg-type]  # bytes, bytearray or a byte view: kind narrowed it, which mypy does not follow
            if length > max_payload_length:
                break
            frame_length = length + HDR_LENGTH
            frame_end = total + ((frame_length + _ALIGN_UP) & _ALIGN_DOWN)
            if frame_end > room or position + total >= limit:
                break
            if frame_end - total != frame_length:
                scratch[frame_end - FRAME_ALIGNMENT : frame_end] = _ZERO_TAIL
            pack(
                scratch,
                total,
                frame_length,
                version_flags_type,
                term_offset + total,
                session_id,
                stream_id,
                term_id,
                0,
            )
            scratch[total + HDR_LENGTH : total + frame_length] = message  # type: ignore[call-overload]  # as above
            total = frame_end
            index += 1
        taken = index - start
        if taken == 0:
            return 0 if length > max_payload_length else -1
        first_frame_length = _LENGTH.unpack_from(scratch, 0)[0]
        _LENGTH.pack_into(scratch, 0, -first_frame_length)
        self._first_frame_length = first_frame_length
        self.length = total
        return taken

    def _build_uniform(
        self,
        messages: Sequence[Buffer],
        start: int,
        end: int,
        term_offset: int,
        term_id: int,
        window: int,
        room: int,
    ) -> int:
        """The vectorised build of messages of one length (0 if they are not, or it is
        not worth it): header template rows, term offsets by arithmetic, payloads joined."""
        chunk = messages[start:end]
        length = len(chunk[0])  # type: ignore[arg-type]  # Buffer declares no __len__; the bytes-likes passed here have one (no check: hot path)
        if not 0 < length <= self._max_payload_length:
            return 0
        if list(map(len, chunk)).count(length) != len(chunk):  # type: ignore[arg-type]  # Buffer declares no __len__; the bytes-likes passed here have one (no check: hot path)
            return 0
        frame_length = length + HDR_LENGTH
        aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
        count = min(
            len(chunk), room // aligned_length, (window + aligned_length - 1) // aligned_length
        )
        if count < UNIFORM_BATCH_MIN:
            return 0
        if count < len(chunk):
            chunk = chunk[:count]
        joined = b"".join(chunk)
        if len(joined) != count * length:  # a buffer whose len() is not its byte count
            return 0
        scratch_bytes = self._scratch_bytes
        if scratch_bytes is None:
            scratch_bytes = self._scratch_bytes = np.frombuffer(self._scratch, dtype=np.uint8)
        total = count * aligned_length
        block = scratch_bytes[:total].reshape(count, aligned_length)
        block[:, HDR_LENGTH:frame_length] = np.frombuffer(joined, dtype=np.uint8).reshape(
            count, length
        )
        if aligned_length != frame_length:
            block[:, frame_length:] = 0
        template = self._header_template
        template[0] = frame_length
        template[_TERM_ID_WORD] = term_id
        words = block[:, :HDR_LENGTH].view(_INT32)
        words[:] = template
        if self._steps_aligned_length != aligned_length:
            self._steps = _STEPS * aligned_length
            self._steps_aligned_length = aligned_length
        np.add(self._steps[:count], term_offset, out=words[:, _TERM_OFFSET_WORD])
        words[0, 0] = -frame_length
        self._first_frame_length = frame_length
        self.length = total
        return count

    def move_to(self, term_offset: int) -> None:
        """Rewrite the frames' term offsets for a block that goes at ``term_offset`` instead."""
        scratch = self._scratch
        offset = 0
        total = self.length
        put = _LENGTH.pack_into
        frame_length = self._first_frame_length
        while offset < total:
            put(scratch, offset + TERM_OFFSET_FIELD_OFFSET, term_offset + offset)
            offset += (frame_length + _ALIGN_UP) & _ALIGN_DOWN
            if offset < total:
                frame_length = _LENGTH.unpack_from(scratch, offset)[0]

    def publish(
        self,
        term_buffer: AtomicBuffer,
        term_offset: int,
        reserved_value_supplier: ReservedValueSupplier | None,
    ) -> None:
        """Copy the block into the term at ``term_offset`` and publish it (see module)."""
        total = self.length
        term_buffer.put_bytes(term_offset, self._scratch, 0, total)
        first_frame_length = self._first_frame_length
        if reserved_value_supplier is not None:
            offset = 0
            frame_length = first_frame_length
            while offset < total:
                frame_offset = term_offset + offset
                value = reserved_value_supplier(term_buffer, frame_offset, frame_length)
                term_buffer.put_int64(frame_offset + RESERVED_VALUE_FIELD_OFFSET, value)
                offset += (frame_length + _ALIGN_UP) & _ALIGN_DOWN
                if offset < total:
                    frame_length = term_buffer.get_int32(term_offset + offset)
        term_buffer.put_int32_ordered(term_offset, first_frame_length)


def _byte_view(message: Buffer) -> memoryview:
    view = memoryview(message)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")
