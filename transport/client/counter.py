"""``Counter``: a counter the media driver allocated for this client (``Aeron.add_counter``).

The driver owns the counters in cnc.dat; a client asks for one with ADD_COUNTER (type id, key,
label) and gets its id back in ON_COUNTER_READY. The value is then this client's to update,
through the same operations as :class:`~transport.concurrent.atomic_counter.AtomicCounter`
(one native call each). ``close()`` sends REMOVE_COUNTER so the driver frees it; the driver also
frees it when this client closes or times out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.atomic_counter import AtomicCounter

if TYPE_CHECKING:
    from aeromq.transport.client.client_conductor import ClientConductor

__all__ = ["Counter"]


class Counter(AtomicCounter):
    """A driver-allocated counter: ``registration_id`` is the ADD_COUNTER correlation id."""

    __slots__ = ("_conductor", "_counter_closed", "registration_id")

    def __init__(
        self,
        registration_id: int,
        conductor: ClientConductor,
        values_buffer: AtomicBuffer,
        counter_id: int,
    ) -> None:
        super().__init__(values_buffer, counter_id)
        self._conductor = conductor
        self._counter_closed = False
        self.registration_id = registration_id

    @property
    def is_closed(self) -> bool:
        """True once closed by the application, the client or the driver."""
        return self._counter_closed

    @property
    def label(self) -> str:
        """The label the driver wrote for the counter, read from cnc.dat."""
        return self._conductor.counters_reader.get_counter_label(self.id)

    def close(self) -> None:
        """Ask the driver to free the counter (REMOVE_COUNTER); idempotent."""
        if not self._counter_closed:
            self._conductor.release_counter(self)

    def internal_close(self) -> None:
        """Mark closed without telling the driver (the conductor's side of a close)."""
        self._counter_closed = True
        AtomicCounter.close(self)

    def __repr__(self) -> str:
        state = "closed" if self._counter_closed else f"value={self.get_weak()}"
        return f"Counter(id={self.id}, registration_id={self.registration_id}, {state})"
