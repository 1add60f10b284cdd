"""``BufferBuilder``: where the fragments of one session's message are put back together.

It grows as needed (by half again, from at least 4 KiB) and never shrinks unless compacted. It
also keeps a copy of the first fragment's header, from which it makes the header of the whole
message: same term id, term offset, session, stream and reserved value as the first fragment,
frame length of the whole message plus the header, flags BEGIN | END, and a fragmented frame
length so that ``position`` is the position after the last fragment.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport._errors import ConfigurationError, MessageTooLongError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import (
    FLAGS_FIELD_OFFSET,
    FRAME_LENGTH_FIELD_OFFSET,
    HDR_LENGTH,
)
from aeromq.transport.logbuffer.header import Header
from aeromq.transport.logbuffer.log_buffer_descriptor import compute_fragmented_frame_length

__all__ = ["BufferBuilder"]

MAX_CAPACITY: Final = 0x7FFF_FFFF - 8
INIT_MIN_CAPACITY: Final = 4096
_NULL_VALUE: Final = -1


def _find_suitable_capacity(capacity: int, required_capacity: int) -> int:
    new_capacity = max(capacity, INIT_MIN_CAPACITY)
    while new_capacity < required_capacity:
        new_capacity += new_capacity >> 1
        if new_capacity > MAX_CAPACITY:
            return MAX_CAPACITY
    return new_capacity


class BufferBuilder:
    """An append-only byte buffer for one message, with the message's assembled header."""

    __slots__ = (
        "_buffer",
        "_complete_header",
        "_first_frame_length",
        "_header_buffer",
        "_limit",
        "next_term_offset",
    )

    def __init__(self, initial_capacity: int = 0) -> None:
        if not 0 <= initial_capacity <= MAX_CAPACITY:
            raise ConfigurationError(
                "initial capacity outside range",
                initial_capacity=initial_capacity,
                max_capacity=MAX_CAPACITY,
            )
        self._buffer = AtomicBuffer(bytearray(max(initial_capacity, INIT_MIN_CAPACITY)))
        self._limit = 0
        self.next_term_offset = _NULL_VALUE
        """Term offset the next fragment must have to continue the message (-1: none expected)."""
        self._first_frame_length = 0
        self._header_buffer = AtomicBuffer(bytearray(HDR_LENGTH))
        self._complete_header = Header(0, 0)
        self._complete_header.buffer = self._header_buffer

    @property
    def buffer(self) -> AtomicBuffer:
        """The bytes appended so far are ``buffer[0:limit]``."""
        return self._buffer

    @property
    def capacity(self) -> int:
        """Bytes the buffer holds before it must grow (at least 4 KiB)."""
        return self._buffer.capacity

    @property
    def limit(self) -> int:
        """Bytes appended so far: the end of the message in :attr:`buffer`."""
        return self._limit

    @limit.setter
    def limit(self, limit: int) -> None:
        """Move the end back (or forward) within the capacity, e.g. to undo the last append."""
        if not 0 <= limit <= self._buffer.capacity:
            raise ConfigurationError(
                "limit outside range", limit=limit, capacity=self._buffer.capacity
            )
        self._limit = limit

    def reset(self) -> BufferBuilder:
        """Forget the message: empty, no fragment expected. The capacity stays."""
        self._limit = 0
        self.next_term_offset = _NULL_VALUE
        self._complete_header.context = None
        self._complete_header.fragmented_frame_length = _NULL_VALUE
        return self

    def compact(self) -> BufferBuilder:
        """Shrink the capacity to what is in use (at least the initial minimum)."""
        new_capacity = max(INIT_MIN_CAPACITY, self._limit)
        if new_capacity < self._buffer.capacity:
            self._resize(new_capacity)
        return self

    def append(self, src: AtomicBuffer, src_offset: int, length: int) -> BufferBuilder:
        """Append ``length`` bytes of ``src`` from ``src_offset``, growing if needed."""
        limit = self._limit
        if limit + length > self._buffer.capacity:
            self._ensure_capacity(limit + length)
        self._buffer.put_bytes(limit, src, src_offset, length)
        self._limit = limit + length
        return self

    def capture_header(self, header: Header) -> BufferBuilder:
        """Keep a copy of the first fragment's header for :meth:`complete_header`."""
        complete = self._complete_header
        complete.initial_term_id = header.initial_term_id
        complete.position_bits_to_shift = header.position_bits_to_shift
        complete.offset = 0
        self._first_frame_length = header.frame_length
        self._header_buffer.put_bytes(0, header.buffer, header.offset, HDR_LENGTH)
        return self

    def complete_header(self, header: Header) -> Header:
        """The header of the assembled message, given the header of its last fragment."""
        complete = self._complete_header
        complete.context = header.context
        complete.fragmented_frame_length = compute_fragmented_frame_length(
            self._limit, self._first_frame_length - HDR_LENGTH
        )
        header_buffer = self._header_buffer
        header_buffer.put_int32(FRAME_LENGTH_FIELD_OFFSET, HDR_LENGTH + self._limit)
        flags = header_buffer.get_uint8(FLAGS_FIELD_OFFSET) | header.flags
        header_buffer.put_int8(FLAGS_FIELD_OFFSET, flags)
        return complete

    def _ensure_capacity(self, required_capacity: int) -> None:
        if required_capacity > MAX_CAPACITY:
            raise MessageTooLongError(
                "insufficient capacity",
                max_capacity=MAX_CAPACITY,
                limit=self._limit,
                required_capacity=required_capacity,
            )
        self._resize(_find_suitable_capacity(self._buffer.capacity, required_capacity))

    def _resize(self, new_capacity: int) -> None:
        # The old buffer is dropped, not released: a handler may still hold it.
        new = AtomicBuffer(bytearray(new_capacity))
        new.put_bytes(0, self._buffer, 0, min(self._limit, new_capacity))
        self._buffer = new
