"""``BroadcastTransmitter``: sends messages to any number of receivers through a broadcast buffer.

The transmitter never waits: when receivers fall behind by more than the buffer, it overwrites
what they have not read and they notice (see :mod:`transport.concurrent.broadcast_receiver`).
Layout in :mod:`transport.concurrent.broadcast_descriptor`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aeromq.transport._errors import ConfigurationError, IndexOutOfBoundsError, MessageTooLongError
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.broadcast_descriptor import (
    HEADER_LENGTH,
    LATEST_COUNTER_OFFSET,
    PADDING_MSG_TYPE_ID,
    TAIL_COUNTER_OFFSET,
    TAIL_INTENT_COUNTER_OFFSET,
    check_capacity,
    max_msg_length,
)
from aeromq.transport.concurrent.ring_buffer_descriptor import check_type_id

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["BroadcastTransmitter"]

_PADDING_HEADER = PADDING_MSG_TYPE_ID << 32


class BroadcastTransmitter:
    """Caller: one transmitter per buffer (it is the only writer), in any one process."""

    __slots__ = (
        "_buffer",
        "_capacity",
        "_latest_index",
        "_mask",
        "_max_msg_length",
        "_tail_index",
        "_tail_intent_index",
    )

    def __init__(self, buffer: AtomicBuffer) -> None:
        capacity = check_capacity(buffer.capacity)
        if buffer.address & 7:
            raise ConfigurationError(
                "broadcast buffer must be 8-byte aligned", address=buffer.address
            )
        self._buffer = buffer
        self._capacity = capacity
        self._mask = capacity - 1
        self._max_msg_length = max_msg_length(capacity)
        self._tail_intent_index = capacity + TAIL_INTENT_COUNTER_OFFSET
        self._tail_index = capacity + TAIL_COUNTER_OFFSET
        self._latest_index = capacity + LATEST_COUNTER_OFFSET

    @property
    def buffer(self) -> AtomicBuffer:
        """The whole broadcast buffer, trailer included."""
        return self._buffer

    @property
    def capacity(self) -> int:
        """Bytes in the data region (the buffer's length minus the trailer)."""
        return self._capacity

    @property
    def max_msg_length(self) -> int:
        """The longest payload :meth:`transmit` accepts, in bytes: capacity / 8."""
        return self._max_msg_length

    def transmit(
        self, msg_type_id: int, src: Buffer, src_offset: int = 0, length: int = -1
    ) -> None:
        """Broadcast ``length`` bytes of ``src`` from ``src_offset`` (``-1``: the rest of it)."""
        check_type_id(msg_type_id)
        src_length = len(src)  # type: ignore[arg-type]  # Buffer declares no __len__; the bytes-likes passed here have one (no check: hot path)
        if length == -1:
            length = src_length - src_offset
        if length < 0:
            raise IndexOutOfBoundsError(
                "invalid message length",
                length=length,
                src_offset=src_offset,
                src_length=src_length,
            )
        if length > self._max_msg_length:
            raise MessageTooLongError(
                "encoded message exceeds max_msg_length",
                length=length,
                max_msg_length=self._max_msg_length,
            )
        if not 0 <= src_offset <= src_length - length:
            raise IndexOutOfBoundsError(
                "source out of bounds", src_offset=src_offset, length=length, src_length=src_length
            )
        buffer = self._buffer
        current_tail = buffer.get_int64(self._tail_index)
        record_offset = current_tail & self._mask
        record_length = length + HEADER_LENGTH
        aligned_length = (record_length + 7) & -8
        to_end = self._capacity - record_offset
        if to_end < aligned_length:
            # Announce the tail first: a receiver reading what is about to be overwritten
            # then fails validation instead of taking torn bytes for a message.
            buffer.put_int64_volatile(
                self._tail_intent_index, current_tail + to_end + aligned_length
            )
            buffer.put_int64(record_offset, _PADDING_HEADER | to_end)
            current_tail += to_end
            record_offset = 0
        else:
            buffer.put_int64_volatile(self._tail_intent_index, current_tail + aligned_length)
        buffer.put_int64(record_offset, (msg_type_id << 32) | record_length)
        buffer.put_bytes(record_offset + HEADER_LENGTH, src, src_offset, length)
        buffer.put_int64_ordered(self._latest_index, current_tail)
        buffer.put_int64_ordered(self._tail_index, current_tail + aligned_length)
