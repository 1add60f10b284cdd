"""``OneToOneRingBuffer``: Agrona's ring buffer for one producer and one consumer.

The producer side only (the consumer side, the counters and ``commit`` / ``abort`` are
:class:`~transport.concurrent.ring_buffer.RingBuffer`'s; the layout is
:mod:`~transport.concurrent.ring_buffer_descriptor`'s). With one producer nothing races for the
tail: a claim is a plain load of the tail, a pre-zeroed next header and an ordered store of the
new tail, as Agrona's ``OneToOneRingBuffer`` does, so the ring also works with a consumer that
does not zero what it read.

Users: the benchmark's cross-process ring (``bench ringbuffer``) and the tests; any pair of
threads or processes that want a one-way queue over shared memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.ring_buffer import INSUFFICIENT_CAPACITY, RingBuffer
from aeromq.transport.concurrent.ring_buffer_descriptor import (
    HEADER_LENGTH,
    PADDING_MSG_TYPE_ID,
    check_type_id,
    make_header,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["OneToOneRingBuffer"]

_PADDING_HEADER = PADDING_MSG_TYPE_ID << 32


class OneToOneRingBuffer(RingBuffer):
    """A ring buffer for one producer and one consumer (each may be in its own process).

    Caller: exactly one producer thread and one consumer thread. The producer side uses only
    plain loads and ordered stores; the consumer side is shared with ``ManyToOneRingBuffer``.
    """

    __slots__ = ()

    MIN_CAPACITY = 2 * HEADER_LENGTH

    def __init__(self, buffer: AtomicBuffer) -> None:
        super().__init__(buffer, self.MIN_CAPACITY)

    def write(self, msg_type_id: int, src: Buffer, src_offset: int = 0, length: int = -1) -> bool:
        """Copy ``length`` bytes of ``src`` from ``src_offset`` into one record.

        ``length=-1`` means the rest of ``src``. False when the ring has no room now.
        """
        # These checks repeat ManyToOneRingBuffer.write's on purpose, measured: one shared
        # check method costs ~20 ns a write (a 64-byte write and its read ~650 -> ~670 ns).
        src_length = len(src)  # type: ignore[arg-type]  # Buffer declares no __len__; the bytes-likes passed here have one (no check: hot path)
        if length == -1:
            length = src_length - src_offset
        if not (
            0 <= length <= self._max_msg_length
            and 0 <= src_offset <= src_length - length
            and 0 < msg_type_id <= 0x7FFFFFFF
        ):
            self._reject(msg_type_id, src_length, src_offset, length)
        buffer = self._buffer
        tail_index = self._tail_index
        tail = buffer.get_int64(tail_index)
        aligned_length = (length + 15) & -8  # align(length + HEADER_LENGTH, ALIGNMENT)
        index = tail & self._mask
        next_index = index + aligned_length
        capacity = self._capacity
        # Fast path: the record and the next header fit before the end and before the cached
        # head. Written in an order that publishes nothing until the record is whole.
        if next_index + 8 <= capacity and tail + aligned_length + 8 <= self._head_cache + capacity:
            buffer.put_bytes(index + 8, src, src_offset, length)
            buffer.put_int64(next_index, 0)
            buffer.put_int64_ordered(index, (msg_type_id << 32) | (length + 8))
            buffer.put_int64_ordered(tail_index, tail + aligned_length)
            return True
        record_length = length + HEADER_LENGTH
        index = self._claim(record_length)
        if index == INSUFFICIENT_CAPACITY:
            return False
        try:
            buffer.put_bytes(index + HEADER_LENGTH, src, src_offset, length)
        except BaseException:
            buffer.put_int64_ordered(index, _PADDING_HEADER | record_length)
            raise
        buffer.put_int64_ordered(index, (msg_type_id << 32) | record_length)
        return True

    def try_claim(self, msg_type_id: int, length: int) -> int:
        """Claim a record of ``length`` payload bytes; return the index to write the payload at.

        Then call :meth:`commit` (or :meth:`abort`) with that index. ``INSUFFICIENT_CAPACITY``
        when the ring has no room now.
        """
        check_type_id(msg_type_id)
        self._check_length(length)
        record_length = length + HEADER_LENGTH
        index = self._claim(record_length)
        if index == INSUFFICIENT_CAPACITY:
            return index
        # Not published yet, so a plain store will do: the header was zero until now.
        self._buffer.put_int64(index, make_header(-record_length, msg_type_id))
        return index + HEADER_LENGTH

    def _claim(self, record_length: int) -> int:
        """Agrona's OneToOne claimCapacity: padding, pre-zeroed next header, tail; the index."""
        buffer = self._buffer
        capacity = self._capacity
        mask = self._mask
        aligned_length = (record_length + 7) & -8
        required = aligned_length + HEADER_LENGTH
        tail_index = self._tail_index
        tail = buffer.get_int64(tail_index)
        head = self._head_cache
        if required > capacity - (tail - head):
            head = self._refresh_head()
            if required > capacity - (tail - head):
                return INSUFFICIENT_CAPACITY
        index = tail & mask
        to_end = capacity - index
        write_index = index
        padding = 0
        next_tail = tail + aligned_length
        if aligned_length != to_end and required > to_end:
            write_index = 0
            if required > head & mask:
                head = self._refresh_head()
                if required > head & mask:
                    write_index = INSUFFICIENT_CAPACITY
                    next_tail = tail
            padding = to_end
            next_tail += padding
        if padding:
            buffer.put_int64(0, 0)
            buffer.put_int64_ordered(index, _PADDING_HEADER | padding)
        if write_index != INSUFFICIENT_CAPACITY:
            buffer.put_int64((write_index + aligned_length) & mask, 0)
        buffer.put_int64_ordered(tail_index, next_tail)
        return write_index

    def _write_run(
        self, msg_type_id: int, records: Sequence[Buffer], lengths: list[int], first: int
    ) -> int:
        """Write records from ``first`` into one contiguous block; return how many fit.

        The run becomes visible to the consumer at once: its first header is stored last.
        """
        buffer = self._buffer
        capacity = self._capacity
        mask = self._mask
        tail_index = self._tail_index
        tail = buffer.get_int64(tail_index)
        first_aligned = (lengths[first] + 15) & -8
        head = self._head_cache
        if first_aligned * (len(lengths) - first) + HEADER_LENGTH > capacity - (tail - head):
            head = self._refresh_head()
        free = capacity - (tail - head)
        if first_aligned + HEADER_LENGTH > free:
            return 0
        index = tail & mask
        to_end = capacity - index
        padding = 0
        if first_aligned <= to_end:
            start = index
            end = index + min(to_end, free - HEADER_LENGTH)
        else:
            if first_aligned + HEADER_LENGTH > head & mask:
                head = self._refresh_head()
                if first_aligned + HEADER_LENGTH > head & mask:
                    buffer.put_int64(0, 0)
                    buffer.put_int64_ordered(index, _PADDING_HEADER | to_end)
                    buffer.put_int64_ordered(tail_index, tail + to_end)
                    return 0
            start = 0
            padding = to_end
            end = (head & mask) - HEADER_LENGTH
        put_bytes = buffer.put_bytes
        put = buffer.put_int64
        type_bits = msg_type_id << 32
        first_length = lengths[first] + HEADER_LENGTH
        put_bytes(start + HEADER_LENGTH, records[first])
        offset = start + first_aligned
        i = first + 1
        count = len(lengths)
        while i < count:
            record_length = lengths[i] + HEADER_LENGTH
            next_offset = offset + ((record_length + 7) & -8)
            if next_offset > end:
                break
            put_bytes(offset + HEADER_LENGTH, records[i])
            put(offset, type_bits | record_length)
            offset = next_offset
            i += 1
        put(offset & mask, 0)
        buffer.put_int64_ordered(start, type_bits | first_length)
        if padding:
            buffer.put_int64_ordered(index, _PADDING_HEADER | padding)
        buffer.put_int64_ordered(tail_index, tail + padding + offset - start)
        return i - first
