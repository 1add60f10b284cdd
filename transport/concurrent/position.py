"""``Position`` and ``ReadablePosition``: stream positions kept in counters.

Aeron's ``UnsafeBufferPosition`` / ``ReadablePosition``: a position (publisher limit, subscriber
position, receiver high-water mark, ...) is the value of a counter in cnc.dat, written by one
agent and read by others, in this process or another. A position has a single writer, so
``propose_max`` needs no compare-and-set.

As in ``AtomicCounter``, the accessors are ``functools.partial`` objects over the buffer's
native methods: one native call each.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.counters_descriptor import checked_counter_offset

if TYPE_CHECKING:
    from aeromq.transport.concurrent.counters_manager import CountersManager

__all__ = ["Position", "ReadablePosition"]


class ReadablePosition:
    """A position that this side only reads: ``id``, ``get_volatile()`` (acquire), ``close()``.

    ``close()`` frees the counter through ``manager`` when one is given; it is idempotent.
    """

    __slots__ = ("_buffer", "_closed", "_id", "_manager", "_offset", "get_volatile")

    get_volatile: Callable[[], int]

    def __init__(
        self,
        values_buffer: AtomicBuffer,
        counter_id: int,
        manager: CountersManager | None = None,
    ) -> None:
        offset = checked_counter_offset(values_buffer.capacity, counter_id)
        self._buffer = values_buffer
        self._id = counter_id
        self._offset = offset
        self._manager = manager
        self._closed = False
        self.get_volatile = partial(values_buffer.get_int64_volatile, offset)

    @property
    def id(self) -> int:
        """The id of the counter that holds the position."""
        return self._id

    @property
    def values_buffer(self) -> AtomicBuffer:
        """The counters values buffer the position lives in (for native readers of it)."""
        return self._buffer

    @property
    def offset(self) -> int:
        """Where the position's 8 bytes are in :attr:`values_buffer`."""
        return self._offset

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Free the counter through its manager, if it has one; idempotent."""
        if not self._closed:
            self._closed = True
            if self._manager is not None:
                self._manager.free(self._id)

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"value={self._buffer.get_int64(self._offset)}"
        return f"{type(self).__name__}(id={self._id}, {state})"


class Position(ReadablePosition):
    """A position this side writes: adds ``get()`` (plain), ``set(value)`` (plain),
    ``set_ordered(value)`` (release), ``propose_max(value)`` and ``propose_max_ordered(value)``.

    ``propose_max*`` store ``value`` only if it is larger than the current value and say whether
    they did.
    """

    __slots__ = ("get", "set", "set_ordered")

    get: Callable[[], int]
    set: Callable[[int], None]
    set_ordered: Callable[[int], None]

    def __init__(
        self,
        values_buffer: AtomicBuffer,
        counter_id: int,
        manager: CountersManager | None = None,
    ) -> None:
        super().__init__(values_buffer, counter_id, manager)
        offset = self._offset
        self.get = partial(values_buffer.get_int64, offset)
        self.set = partial(values_buffer.put_int64, offset)
        self.set_ordered = partial(values_buffer.put_int64_ordered, offset)

    def propose_max(self, value: int) -> bool:
        """Store ``value`` (plain) if it is larger than the position; return whether it did."""
        if self._buffer.get_int64(self._offset) < value:
            self._buffer.put_int64(self._offset, value)
            return True
        return False

    def propose_max_ordered(self, value: int) -> bool:
        """Store ``value`` (release) if it is larger than the position; return whether it did."""
        if self._buffer.get_int64(self._offset) < value:
            self._buffer.put_int64_ordered(self._offset, value)
            return True
        return False
