"""``AtomicCounter``: a view of one counter's value in the counters values buffer.

Agrona's ``AtomicCounter``. The value is the i64 at ``counter_id * COUNTER_LENGTH`` (see
``counters_descriptor``), shared with every process that maps the same cnc.dat.

The hot operations are ``functools.partial`` objects over the buffer's native methods, made
once per counter: a call costs one native call (about 35 ns), half of a Python method that
forwards to the buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.counters_descriptor import checked_counter_offset

if TYPE_CHECKING:
    from aeromq.transport.concurrent.counters_manager import CountersManager

__all__ = ["AtomicCounter"]


class AtomicCounter:
    """A counter's value with atomic and ordered operations.

    - ``get()``: acquire load. ``get_weak()``: plain load.
    - ``set(value)``: sequentially consistent store. ``set_ordered(value)``: release store.
      ``set_weak(value)``: plain store.
    - ``increment()`` / ``get_and_add(delta)``: atomic read-modify-write, safe with many writers;
      they return the value before.
    - ``increment_ordered()`` / ``add_ordered(delta)``: one writer only (plain read, release
      store); they return the value before.
    - ``get_and_set(value)``, ``compare_and_set(expected, update) -> bool``: atomic.
    - ``propose_max_ordered(value) -> bool``: one writer only; stores ``value`` if it is larger.

    ``close()`` frees the counter through the manager it came from (if any); it is idempotent.
    """

    __slots__ = (
        "_buffer",
        "_closed",
        "_id",
        "_manager",
        "_offset",
        "add_ordered",
        "compare_and_set",
        "get",
        "get_and_add",
        "get_and_set",
        "get_weak",
        "increment",
        "increment_ordered",
        "set",
        "set_ordered",
        "set_weak",
    )

    get: Callable[[], int]
    get_weak: Callable[[], int]
    set: Callable[[int], None]
    set_ordered: Callable[[int], None]
    set_weak: Callable[[int], None]
    increment: Callable[[], int]
    increment_ordered: Callable[[], int]
    get_and_add: Callable[[int], int]
    add_ordered: Callable[[int], int]
    get_and_set: Callable[[int], int]
    compare_and_set: Callable[[int, int], bool]

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
        self.get = partial(values_buffer.get_int64_volatile, offset)
        self.get_weak = partial(values_buffer.get_int64, offset)
        self.set = partial(values_buffer.put_int64_volatile, offset)
        self.set_ordered = partial(values_buffer.put_int64_ordered, offset)
        self.set_weak = partial(values_buffer.put_int64, offset)
        self.increment = partial(values_buffer.get_and_add_int64, offset, 1)
        self.increment_ordered = partial(values_buffer.add_int64_ordered, offset, 1)
        self.get_and_add = partial(values_buffer.get_and_add_int64, offset)
        self.add_ordered = partial(values_buffer.add_int64_ordered, offset)
        self.get_and_set = partial(values_buffer.get_and_set_int64, offset)
        self.compare_and_set = partial(values_buffer.compare_and_set_int64, offset)

    @property
    def id(self) -> int:
        """The counter id: its record's index in the values and metadata buffers."""
        return self._id

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def propose_max_ordered(self, value: int) -> bool:
        """Store ``value`` (release) if it is larger than the current value; one writer only."""
        if self._buffer.get_int64(self._offset) < value:
            self._buffer.put_int64_ordered(self._offset, value)
            return True
        return False

    def close(self) -> None:
        """Free the counter through its manager, if it has one; idempotent."""
        if not self._closed:
            self._closed = True
            if self._manager is not None:
                self._manager.free(self._id)

    def __enter__(self) -> AtomicCounter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"value={self.get_weak()}"
        return f"AtomicCounter(id={self._id}, {state})"
