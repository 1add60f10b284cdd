"""``RingBuffer``: what Agrona's two ring buffers over shared memory share (the consumer side).

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
- ``ManyToOneRingBuffer`` (:mod:`~transport.concurrent.many_to_one_ring_buffer`) producers
  claim with compare-and-set on the tail and write a negative length first, so a consumer can
  ``unblock`` a record left behind by a dead producer. ``OneToOneRingBuffer``
  (:mod:`~transport.concurrent.one_to_one_ring_buffer`) uses plain loads and ordered stores
  only, and pre-zeroes the header after each record it writes (as Agrona's does), so it also
  works with a consumer that does not zero.

This module holds the base class both extend (Agrona's ``RingBuffer``): the consumer side
(``read``, ``controlled_read``), the trailer's counters, ``commit`` / ``abort`` of a claim and
the argument checks. Users: the two ring buffers; the media driver and the client use them
through the package (``aeromq.transport.concurrent``).

Hot paths return codes (``False``, ``INSUFFICIENT_CAPACITY``); bad arguments raise typed errors.

Memory ordering: record headers are read with one 8-byte acquire load and published with one
8-byte release store (length and type together). Agrona puts a store fence between a
many-to-one producer's negative length and its payload; here that order comes from x86's
total store order (the native helper has no fence), so this module assumes x86-64.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from aeromq.transport._errors import (
    ConfigurationError,
    IndexOutOfBoundsError,
    MessageTooLongError,
    TransportStateError,
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
    max_msg_length,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "INSUFFICIENT_CAPACITY",
    "ControlledMessageHandler",
    "MessageHandler",
    "RingBuffer",
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


class RingBuffer:
    """What both ring buffers share: the consumer side, the trailer counters, commit and abort.

    Not made directly: :class:`~transport.concurrent.OneToOneRingBuffer` and
    :class:`~transport.concurrent.ManyToOneRingBuffer` add the producer side.
    """

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
        """The whole ring buffer, trailer included."""
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

    def heartbeat_stamper(self) -> Callable[[int], None]:
        """The :attr:`consumer_heartbeat_time` setter as one call of the buffer's ordered store
        (a partial): for a consumer that stamps it each millisecond (the driver's conductor)."""
        return functools.partial(self._buffer.put_int64_ordered, self._heartbeat_index)

    def producer_position(self) -> int:
        """The tail: bytes ever claimed by producers (acquire load)."""
        return self._buffer.get_int64_volatile(self._tail_index)

    def consumer_position(self) -> int:
        """The head: bytes ever consumed (acquire load)."""
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
        # The loop repeats controlled_read's on purpose, measured: read made of controlled_read
        # with a handler adapter costs ~50 ns a record (a 64-byte write and read ~565 -> ~615 ns).
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

    def write_batch(self, msg_type_id: int, records: Sequence[Buffer]) -> int:
        """Write ``records`` (bytes-like payloads) in order with as few claims as possible.

        Each contiguous run of records is claimed once and becomes visible to the consumer at
        once (how, each ring's ``_write_run`` says). Returns how many records were written: all
        of them, or fewer when the ring filled up.
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

    def _write_run(
        self, msg_type_id: int, records: Sequence[Buffer], lengths: list[int], first: int
    ) -> int:
        """Write records from ``first`` as one contiguous run; return how many fit (0: none)."""
        raise NotImplementedError

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
        raise TransportStateError(
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
        lengths = [len(record) for record in records]  # type: ignore[arg-type]  # Buffer declares no __len__; the bytes-likes passed here have one (no check: hot path)
        if lengths and max(lengths) > self._max_msg_length:
            longest = max(lengths)
            raise MessageTooLongError(
                "encoded message exceeds max_msg_length",
                index=lengths.index(longest),
                length=longest,
                max_msg_length=self._max_msg_length,
            )
        return lengths
