"""``BroadcastReceiver``: follows a broadcast buffer, noticing when the transmitter laps it.

A receiver joins at the latest message and reads forward. Loss is not an error here: when the
transmitter has overwritten the receiver's next record (its cursor is a whole capacity behind
the tail intent), ``receive_next`` counts a lap and jumps to the latest message. The message
bytes can still be overwritten while the caller reads them, so a caller that copies them out
checks :meth:`BroadcastReceiver.validate` afterwards (``CopyBroadcastReceiver`` does this).
Layout in :mod:`transport.concurrent.broadcast_descriptor`.
"""

from __future__ import annotations

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.broadcast_descriptor import (
    HEADER_LENGTH,
    LATEST_COUNTER_OFFSET,
    PADDING_MSG_TYPE_ID,
    TAIL_COUNTER_OFFSET,
    TAIL_INTENT_COUNTER_OFFSET,
    check_capacity,
)

__all__ = ["BroadcastReceiver"]

_LOW_32 = 0xFFFFFFFF
_MAX_HEADER_ATTEMPTS = 8  # laps in a row while reading one header before giving up for now


class BroadcastReceiver:
    """Caller: one thread per receiver; any number of receivers per buffer, in any process."""

    __slots__ = (
        "_buffer",
        "_capacity",
        "_cursor",
        "_lapped_count",
        "_latest_index",
        "_length",
        "_mask",
        "_next_record",
        "_record_offset",
        "_tail_index",
        "_tail_intent_index",
        "_type_id",
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
        self._tail_intent_index = capacity + TAIL_INTENT_COUNTER_OFFSET
        self._tail_index = capacity + TAIL_COUNTER_OFFSET
        self._latest_index = capacity + LATEST_COUNTER_OFFSET
        latest = buffer.get_int64_volatile(self._latest_index)
        self._cursor = latest
        self._next_record = latest
        self._record_offset = latest & self._mask
        self._type_id = 0
        self._length = 0
        self._lapped_count = 0

    @property
    def capacity(self) -> int:
        """Bytes in the data region (the buffer's length minus the trailer)."""
        return self._capacity

    def lapped_count(self) -> int:
        """How many times the transmitter overtook this receiver (each time, messages were lost)."""
        return self._lapped_count

    def type_id(self) -> int:
        """Message type id of the message ``receive_next`` moved to."""
        return self._type_id

    def offset(self) -> int:
        """Index in :meth:`buffer` of the payload of the current message."""
        return self._record_offset + HEADER_LENGTH

    def length(self) -> int:
        """Payload length of the current message."""
        return self._length

    def buffer(self) -> AtomicBuffer:
        """The broadcast buffer, in which :meth:`offset` indexes the payload."""
        return self._buffer

    def receive_next(self) -> bool:
        """Move to the next message; False when there is none yet.

        If the transmitter has lapped this receiver, count it and move to the latest message.
        The header is checked against the tail intent after it is read (Agrona checks only
        before), so ``type_id`` and ``length`` always come from a header that was whole; the
        payload may still be overwritten afterwards: check :meth:`validate` after using it.
        """
        buffer = self._buffer
        tail = buffer.get_int64_volatile(self._tail_index)
        cursor = self._next_record
        if tail <= cursor:
            return False
        mask = self._mask
        if not self._valid_at(cursor):
            self._lapped_count += 1
            cursor = buffer.get_int64_volatile(self._latest_index)
        for _ in range(_MAX_HEADER_ATTEMPTS):
            header_cursor = cursor
            record_offset = cursor & mask
            header = buffer.get_int64(record_offset)
            next_record = cursor + (((header & _LOW_32) + 7) & -8)
            if header >> 32 == PADDING_MSG_TYPE_ID:
                record_offset = 0
                cursor = next_record
                header = buffer.get_int64(0)
                next_record += ((header & _LOW_32) + 7) & -8
            if self._valid_at(header_cursor):
                break
            # Overwritten while we read it: lapped after all.
            self._lapped_count += 1
            cursor = buffer.get_int64_volatile(self._latest_index)
        else:
            self._next_record = cursor
            return False
        self._cursor = cursor
        self._next_record = next_record
        self._record_offset = record_offset
        self._type_id = header >> 32
        self._length = (header & _LOW_32) - HEADER_LENGTH
        return True

    def validate(self) -> bool:
        """True while the current message has not been overwritten (check after reading it).

        On x86 loads are not reordered with older loads, which stands in for Agrona's load
        fence before the tail-intent check.
        """
        return self._valid_at(self._cursor)

    def _valid_at(self, cursor: int) -> bool:
        return cursor + self._capacity > self._buffer.get_int64_volatile(self._tail_intent_index)
