"""``ManyToOneRingBuffer``: Agrona's ring buffer for many producers and one consumer.

The producer side only (the consumer side, the counters and ``commit`` / ``abort`` are
:class:`~transport.concurrent.ring_buffer.RingBuffer`'s; the layout is
:mod:`~transport.concurrent.ring_buffer_descriptor`'s). Producers in any thread or process claim
space with compare-and-set on the tail and hold a claimed record with a negative length until
they commit it, so the consumer can :meth:`~ManyToOneRingBuffer.unblock` a record a dead
producer left behind, as Agrona's ``ManyToOneRingBuffer`` does.

Users: the to-driver buffer in ``cnc.dat`` (clients' :class:`~transport.client.driver_proxy.
DriverProxy` write commands, the media driver's conductor reads them), the fake driver and the
raw protocol client of :mod:`transport.testing`.
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

__all__ = ["ManyToOneRingBuffer"]

_LOW_32 = 0xFFFFFFFF
_PADDING_HEADER = PADDING_MSG_TYPE_ID << 32


class ManyToOneRingBuffer(RingBuffer):
    """A ring buffer for many producers (threads or processes) and one consumer.

    Producers claim space with compare-and-set on the tail. A claimed record holds a negative
    length until it is committed; if its producer dies, the consumer calls :meth:`unblock`
    (after a timeout of its choosing) to turn it into padding and carry on.
    """

    __slots__ = ()

    MIN_CAPACITY = HEADER_LENGTH

    def __init__(self, buffer: AtomicBuffer) -> None:
        super().__init__(buffer, self.MIN_CAPACITY)

    def write(self, msg_type_id: int, src: Buffer, src_offset: int = 0, length: int = -1) -> bool:
        """Copy ``length`` bytes of ``src`` from ``src_offset`` into one record.

        ``length=-1`` means the rest of ``src``. False when the ring has no room now.
        """
        # These checks repeat OneToOneRingBuffer.write's on purpose, measured: one shared
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
        record_length = length + HEADER_LENGTH
        index = self._claim((record_length + 7) & -8)
        if index == INSUFFICIENT_CAPACITY:
            return False
        buffer = self._buffer
        buffer.put_int64_ordered(index, (msg_type_id << 32) | (-record_length & _LOW_32))
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
        index = self._claim((record_length + 7) & -8)
        if index == INSUFFICIENT_CAPACITY:
            return index
        self._buffer.put_int64_ordered(index, make_header(-record_length, msg_type_id))
        return index + HEADER_LENGTH

    def unblock(self) -> bool:
        """Consumer side: turn a record a dead producer left at the head into padding.

        A negative length at the head becomes padding of that length. A zero length (the
        producer died between its compare-and-set and its first store) becomes padding up to
        the next non-zero header, if everything before it is still zero. Call it only after the
        head has not moved for longer than any live producer takes to commit.
        """
        buffer = self._buffer
        head = buffer.get_int64_volatile(self._head_index)
        tail = buffer.get_int64_volatile(self._tail_index)
        if head == tail:
            return False
        capacity = self._capacity
        consumer_index = head & self._mask
        producer_index = tail & self._mask
        length = buffer.get_int32_volatile(consumer_index)
        if length < 0:
            buffer.put_int64_ordered(consumer_index, _PADDING_HEADER | -length)
            return True
        if length == 0:
            limit = producer_index if producer_index > consumer_index else capacity
            i = consumer_index + HEADER_LENGTH
            while True:
                if buffer.get_int32_volatile(i) != 0:
                    if self._still_zeroed(i, consumer_index):
                        buffer.put_int64_ordered(
                            consumer_index, _PADDING_HEADER | (i - consumer_index)
                        )
                        return True
                    return False
                i += HEADER_LENGTH
                if i >= limit:
                    return False
        return False

    def _still_zeroed(self, start: int, limit: int) -> bool:
        get = self._buffer.get_int32_volatile
        i = start - HEADER_LENGTH
        while i >= limit:
            if get(i) != 0:
                return False
            i -= HEADER_LENGTH
        return True

    def _claim(self, required: int) -> int:
        """Agrona's ManyToOne claimCapacity: compare-and-set the tail, pad the end; the index."""
        buffer = self._buffer
        capacity = self._capacity
        mask = self._mask
        tail_index = self._tail_index
        get_tail = buffer.get_int64_volatile
        compare_and_set = buffer.compare_and_set_int64
        head = self._head_cache
        while True:
            tail = get_tail(tail_index)
            if required > capacity - (tail - head):
                head = self._refresh_head()
                if required > capacity - (tail - head):
                    return INSUFFICIENT_CAPACITY
            index = tail & mask
            to_end = capacity - index
            write_index = index
            padding = 0
            next_tail = tail + required
            if required > to_end:
                write_index = 0
                if required > head & mask:
                    head = self._refresh_head()
                    if required > head & mask:
                        write_index = INSUFFICIENT_CAPACITY
                        next_tail = tail  # claim only the padding to the end
                padding = to_end
                next_tail += padding
            if compare_and_set(tail_index, tail, next_tail):
                break
        if padding:
            buffer.put_int64_ordered(index, _PADDING_HEADER | padding)
        return write_index

    def _write_run(
        self, msg_type_id: int, records: Sequence[Buffer], lengths: list[int], first: int
    ) -> int:
        """Claim one contiguous block for records from ``first``, fill it, commit it.

        The run is claimed with one compare-and-set and held, until it is whole, by a negative
        length covering the run (so ``unblock`` skips all of it if this producer dies).
        """
        buffer = self._buffer
        capacity = self._capacity
        mask = self._mask
        tail_index = self._tail_index
        count = len(lengths)
        first_aligned = (lengths[first] + 15) & -8
        head = self._head_cache
        while True:
            tail = buffer.get_int64_volatile(tail_index)
            if first_aligned * (count - first) > capacity - (tail - head):
                head = self._refresh_head()
            free = capacity - (tail - head)
            if first_aligned > free:
                return 0
            index = tail & mask
            to_end = capacity - index
            padding = 0
            if first_aligned <= to_end:
                start = index
                end = index + min(to_end, free)
            else:
                if first_aligned > head & mask:
                    head = self._refresh_head()
                    if first_aligned > head & mask:
                        if buffer.compare_and_set_int64(tail_index, tail, tail + to_end):
                            buffer.put_int64_ordered(index, _PADDING_HEADER | to_end)
                            return 0
                        continue
                start = 0
                padding = to_end
                end = head & mask
            offset = start
            i = first
            while i < count:
                next_offset = offset + ((lengths[i] + 15) & -8)
                if next_offset > end:
                    break
                offset = next_offset
                i += 1
            if buffer.compare_and_set_int64(tail_index, tail, tail + padding + offset - start):
                break
        block_length = offset - start
        if padding:
            buffer.put_int64_ordered(index, _PADDING_HEADER | padding)
        buffer.put_int64_ordered(start, (msg_type_id << 32) | (-block_length & _LOW_32))
        put_bytes = buffer.put_bytes
        put = buffer.put_int64
        type_bits = msg_type_id << 32
        try:
            put_bytes(start + HEADER_LENGTH, records[first])
            offset = start + first_aligned
            for j in range(first + 1, i):
                record_length = lengths[j] + HEADER_LENGTH
                put_bytes(offset + HEADER_LENGTH, records[j])
                put(offset, type_bits | record_length)
                offset += (record_length + 7) & -8
        except BaseException:
            buffer.put_int64_ordered(start, _PADDING_HEADER | block_length)
            raise
        buffer.put_int64_ordered(start, type_bits | (lengths[first] + HEADER_LENGTH))
        return i - first
