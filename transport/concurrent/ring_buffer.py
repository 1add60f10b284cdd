"""Agrona's ring buffers over shared memory: ``OneToOneRingBuffer`` and ``ManyToOneRingBuffer``.

Variable-length records (layout in :mod:`transport.concurrent.ring_buffer_descriptor`) pass from
producers to one consumer through an :class:`~transport.concurrent.AtomicBuffer`, usually a
file in /dev/shm mapped by several processes. The semantics are Agrona's:

- Producers claim space by moving the tail; a record whose length is <= 0 is not there yet.
  ``write`` copies a payload in; ``try_claim`` hands out the index to write at, then
  ``commit`` publishes the record or ``abort`` turns it into padding.
- When a record does not fit before the end of the buffer, a padding record fills the end and
  the record goes at index 0.
- The consumer (``read``, ``controlled_read``) walks committed records from the head up to the
  end of the buffer, hands each to a handler, zeroes the bytes it consumed and then moves the
  head (a release store), so producers always claim zeroed memory.
- ``ManyToOneRingBuffer`` producers claim with compare-and-set on the tail and write a negative
  length first, so a consumer can ``unblock`` a record left behind by a dead producer.
  ``OneToOneRingBuffer`` uses plain loads and ordered stores only, and pre-zeroes the header
  after each record it writes (as Agrona's does), so it also works with a consumer that does
  not zero.

Hot paths return codes (``False``, ``INSUFFICIENT_CAPACITY``); bad arguments raise typed errors.

Memory ordering: record headers are read with one 8-byte acquire load and published with one
8-byte release store (length and type together). Agrona puts a store fence between a
many-to-one producer's negative length and its payload; here that order comes from x86's
total store order (the native helper has no fence), so this module assumes x86-64.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from aeromq.transport._errors import (
    ConfigurationError,
    IllegalStateError,
    IndexOutOfBoundsError,
    MessageTooLongError,
)
from aeromq.transport.concurrent.action import Action
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.ring_buffer_descriptor import (
    CONSUMER_HEARTBEAT_OFFSET,
    CORRELATION_COUNTER_OFFSET,
    HEAD_CACHE_POSITION_OFFSET,
    HEAD_POSITION_OFFSET,
    HEADER_LENGTH,
    PADDING_MSG_TYPE_ID,
    TAIL_POSITION_OFFSET,
    check_capacity,
    check_type_id,
    make_header,
    max_msg_length,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "INSUFFICIENT_CAPACITY",
    "ControlledMessageHandler",
    "ManyToOneRingBuffer",
    "MessageHandler",
    "OneToOneRingBuffer",
]

INSUFFICIENT_CAPACITY = -2
"""``try_claim``'s answer when the ring has no room for the record now."""

MessageHandler = Callable[[int, AtomicBuffer, int, int], object]
"""``handler(msg_type_id, buffer, index, length)``: the payload is ``buffer[index:index+length]``."""

ControlledMessageHandler = Callable[[int, AtomicBuffer, int, int], Action]
"""Like :data:`MessageHandler`, returning what the reader does next (see ``controlled_read``)."""

_NO_LIMIT = 0x7FFFFFFF
_LOW_32 = 0xFFFFFFFF
_NEGATIVE_32 = 0x80000000
_PADDING_HEADER = PADDING_MSG_TYPE_ID << 32
_ABORT = Action.ABORT
_BREAK = Action.BREAK
_COMMIT = Action.COMMIT


class _RingBuffer:
    """What both ring buffers share: the consumer side, the trailer counters, commit and abort."""

    __slots__ = (
        "_buffer",
        "_capacity",
        "_correlation_index",
        "_head_cache",
        "_head_cache_index",
        "_head_index",
        "_heartbeat_index",
        "_mask",
        "_max_msg_length",
        "_tail_index",
    )

    def __init__(self, buffer: AtomicBuffer, min_capacity: int) -> None:
        capacity = check_capacity(buffer.capacity, min_capacity)
        if buffer.address & 7:
            raise ConfigurationError("ring buffer must be 8-byte aligned", address=buffer.address)
        self._buffer = buffer
        self._capacity = capacity
        self._mask = capacity - 1
        self._max_msg_length = max_msg_length(capacity, min_capacity)
        self._tail_index = capacity + TAIL_POSITION_OFFSET
        self._head_cache_index = capacity + HEAD_CACHE_POSITION_OFFSET
        self._head_index = capacity + HEAD_POSITION_OFFSET
        self._correlation_index = capacity + CORRELATION_COUNTER_OFFSET
        self._heartbeat_index = capacity + CONSUMER_HEARTBEAT_OFFSET
        # This producer's copy of the head: any value it holds is <= the real head, so stale
        # is safe; refreshed (and written through to the trailer) only when space runs short.
        self._head_cache = buffer.get_int64_volatile(self._head_cache_index)

    @property
    def buffer(self) -> AtomicBuffer:
        return self._buffer

    @property
    def capacity(self) -> int:
        """Bytes in the data region (the buffer's length minus the trailer)."""
        return self._capacity

    @property
    def max_msg_length(self) -> int:
        """The longest payload a record can carry."""
        return self._max_msg_length

    def next_correlation_id(self) -> int:
        """A number unique among all users of this ring (atomic increment of a counter)."""
        return self._buffer.get_and_add_int64(self._correlation_index, 1)

    @property
    def consumer_heartbeat_time(self) -> int:
        """Epoch milliseconds of the consumer's last heartbeat (producers check liveness)."""
        return self._buffer.get_int64_volatile(self._heartbeat_index)

    @consumer_heartbeat_time.setter
    def consumer_heartbeat_time(self, now_ms: int) -> None:
        self._buffer.put_int64_ordered(self._heartbeat_index, now_ms)

    def producer_position(self) -> int:
        return self._buffer.get_int64_volatile(self._tail_index)

    def consumer_position(self) -> int:
        return self._buffer.get_int64_volatile(self._head_index)

    def size(self) -> int:
        """Bytes claimed but not yet consumed (a consistent snapshot of tail - head)."""
        get = self._buffer.get_int64_volatile
        head_after = get(self._head_index)
        while True:
            head_before = head_after
            tail = get(self._tail_index)
            head_after = get(self._head_index)
            if head_after == head_before:
                break
        return min(max(tail - head_after, 0), self._capacity)

    def read(self, handler: MessageHandler, message_count_limit: int = _NO_LIMIT) -> int:
        """Hand up to ``message_count_limit`` records to ``handler``; return how many.

        Stops at the first record not yet committed or at the end of the buffer (the next call
        goes on from index 0). The head moves past everything read, even if the handler raises.
        """
        buffer = self._buffer
        head_index = self._head_index
        head = buffer.get_int64(head_index)
        capacity = self._capacity
        start = head & self._mask
        offset = start
        messages_read = 0
        get_header = buffer.get_int64_volatile
        try:
            while offset < capacity and messages_read < message_count_limit:
                header = get_header(offset)
                length = header & _LOW_32
                if not 0 < length < _NEGATIVE_32:
                    break
                record = offset
                offset += (length + 7) & -8
                msg_type_id = header >> 32
                if msg_type_id == PADDING_MSG_TYPE_ID:
                    continue
                messages_read += 1
                handler(msg_type_id, buffer, record + HEADER_LENGTH, length - HEADER_LENGTH)
        finally:
            if offset != start:
                buffer.set_memory(start, offset - start, 0)
                buffer.put_int64_ordered(head_index, head + offset - start)
        return messages_read

    def controlled_read(
        self, handler: ControlledMessageHandler, message_count_limit: int = _NO_LIMIT
    ) -> int:
        """Like :meth:`read`, with the handler's :class:`Action` steering the head (Agrona's).

        ========  ==============================================================================
        ABORT     this record is not consumed and not counted: the head stays before it (padding
                  read before it is consumed) and the read stops; it is delivered again next time.
        BREAK     this record is consumed and counted; the read stops.
        COMMIT    this record is consumed and counted; what was read so far is zeroed and the
                  head moves now (producers can reuse the space); the read goes on.
        CONTINUE  this record is consumed and counted; the read goes on and the head moves
                  when it ends (anything else the handler returns counts as CONTINUE).
        ========  ==============================================================================
        """
        buffer = self._buffer
        head_index = self._head_index
        head = buffer.get_int64(head_index)
        capacity = self._capacity
        start = head & self._mask
        offset = start
        messages_read = 0
        get_header = buffer.get_int64_volatile
        try:
            while offset < capacity and messages_read < message_count_limit:
                header = get_header(offset)
                length = header & _LOW_32
                if not 0 < length < _NEGATIVE_32:
                    break
                record = offset
                aligned_length = (length + 7) & -8
                offset += aligned_length
                msg_type_id = header >> 32
                if msg_type_id == PADDING_MSG_TYPE_ID:
                    continue
                action = handler(
                    msg_type_id, buffer, record + HEADER_LENGTH, length - HEADER_LENGTH
                )
                if action == _ABORT:
                    offset -= aligned_length
                    break
                messages_read += 1
                if action == _BREAK:
                    break
                if action == _COMMIT:
                    buffer.set_memory(start, offset - start, 0)
                    head += offset - start
                    buffer.put_int64_ordered(head_index, head)
                    start = offset
        finally:
            if offset > start:
                buffer.set_memory(start, offset - start, 0)
                buffer.put_int64_ordered(head_index, head + offset - start)
        return messages_read

    def commit(self, index: int) -> None:
        """Publish the record claimed at ``index`` (the value ``try_claim`` returned)."""
        record = self._record_index(index)
        length = self._claimed_length(record, index)
        self._buffer.put_int32_ordered(record, -length)

    def abort(self, index: int) -> None:
        """Give back the record claimed at ``index``: it becomes padding that readers skip."""
        record = self._record_index(index)
        length = self._claimed_length(record, index)
        self._buffer.put_int64_ordered(record, _PADDING_HEADER | -length)

    def unblock(self) -> bool:
        """Consumer side: free a record a dead producer left claimed. False when none was."""
        return False

    def _record_index(self, index: int) -> int:
        record = index - HEADER_LENGTH
        if record < 0 or record > self._capacity - HEADER_LENGTH or record & 7:
            raise IndexOutOfBoundsError(
                "invalid message index", index=index, capacity=self._capacity
            )
        return record

    def _claimed_length(self, record: int, index: int) -> int:
        length = self._buffer.get_int32(record)
        if length < 0:
            return length
        aborted = self._buffer.get_int32(record + 4) == PADDING_MSG_TYPE_ID
        raise IllegalStateError(
            "claimed space previously " + ("aborted" if aborted else "committed"), index=index
        )

    def _refresh_head(self) -> int:
        head = self._buffer.get_int64_volatile(self._head_index)
        self._head_cache = head
        self._buffer.put_int64_ordered(self._head_cache_index, head)
        return head

    def _check_length(self, length: int) -> None:
        if length < 0:
            raise IndexOutOfBoundsError("invalid message length", length=length)
        if length > self._max_msg_length:
            raise MessageTooLongError(
                "encoded message exceeds max_msg_length",
                length=length,
                max_msg_length=self._max_msg_length,
            )

    def _reject(self, msg_type_id: int, src_length: int, src_offset: int, length: int) -> None:
        """Raise the error a ``write`` with these arguments deserves."""
        check_type_id(msg_type_id)
        if length < 0:
            raise IndexOutOfBoundsError(
                "invalid message length",
                length=length,
                src_offset=src_offset,
                src_length=src_length,
            )
        self._check_length(length)
        raise IndexOutOfBoundsError(
            "source out of bounds", src_offset=src_offset, length=length, src_length=src_length
        )

    def _batch_lengths(self, msg_type_id: int, records: Sequence[Buffer]) -> list[int]:
        check_type_id(msg_type_id)
        lengths = [len(record) for record in records]  # type: ignore[arg-type]
        if lengths and max(lengths) > self._max_msg_length:
            longest = max(lengths)
            raise MessageTooLongError(
                "encoded message exceeds max_msg_length",
                index=lengths.index(longest),
                length=longest,
                max_msg_length=self._max_msg_length,
            )
        return lengths


class OneToOneRingBuffer(_RingBuffer):
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
        src_length = len(src)  # type: ignore[arg-type]
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

    def write_batch(self, msg_type_id: int, records: Sequence[Buffer]) -> int:
        """Write ``records`` (bytes-like payloads) in order with as few claims as possible.

        Each contiguous run of records becomes visible to the consumer at once. Returns how many
        records were written: all of them, or fewer when the ring filled up.
        """
        lengths = self._batch_lengths(msg_type_id, records)
        count = len(lengths)
        written = 0
        while written < count:
            run = self._write_run(msg_type_id, records, lengths, written)
            if run == 0:
                break
            written += run
        return written

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
        """Write records from ``first`` into one contiguous block; return how many fit."""
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


class ManyToOneRingBuffer(_RingBuffer):
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
        src_length = len(src)  # type: ignore[arg-type]
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

    def write_batch(self, msg_type_id: int, records: Sequence[Buffer]) -> int:
        """Write ``records`` (bytes-like payloads) in order with as few claims as possible.

        Each contiguous run is claimed with one compare-and-set and held, until it is whole, by
        a negative length covering the run (so ``unblock`` skips all of it if this producer
        dies). Returns how many records were written: all, or fewer when the ring filled up.
        """
        lengths = self._batch_lengths(msg_type_id, records)
        count = len(lengths)
        written = 0
        while written < count:
            run = self._write_run(msg_type_id, records, lengths, written)
            if run == 0:
                break
            written += run
        return written

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
        """Claim one contiguous block for records from ``first``, fill it, commit it."""
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
