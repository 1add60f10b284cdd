"""A publication whose offers are sent at once by their driver's sender, or by the offering thread.

A network (UDP) publication's frames are sent by the media driver's sender, which parks in a
poll on its sockets between duty cycles and finds a publication's new data only when the park
ends (``transport.driver.udp.socket_waiter``). When that driver runs in this process, the client
conductor makes an exclusive publication (a client session's ingress) a
:class:`WakingExclusivePublication` (``resources_registry.py``): after each offer that
appended something (``offer``, ``offer_vectored``, ``offer_batch``) it calls the driver's
network wake (``transport.concurrent.network_wakes``), so a one-at-a-time request goes out at
once rather than after up to a millisecond's park: while the driver's network thread parks,
the offering thread sends the frame itself, taking the thread's turn
(``transport/driver/network_turn.py``: no wake-up of the driver's thread); while that thread
runs a cycle, the call ends its park instead. A claim (``try_claim``) wakes nothing: its
frame is written after the call, and the sender finds it at its park's end as before; so do a
:class:`ConcurrentPublication`'s offers (not made to wake yet). IPC publications and network
publications of a driver in another process are the plain classes: their offers pay nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from aeromq.transport.client.exclusive_publication import ExclusivePublication
from aeromq.transport.client.publication import VectorPiece
from aeromq.transport.concurrent.network_wakes import NetworkWake
from aeromq.transport.logbuffer.handlers import ReservedValueSupplier

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["WakingExclusivePublication"]


def _no_wake() -> None:
    return None


class WakingExclusivePublication(ExclusivePublication):
    """An :class:`ExclusivePublication` whose offers wake the driver's sender (see module)."""

    __slots__ = ("wake_sender",)

    def _init_appends(self) -> None:
        super()._init_appends()
        self.wake_sender: NetworkWake = _no_wake
        """The driver's network wake (the client conductor sets it)."""

    def offer(
        self,
        buffer: Buffer,
        offset: int = 0,
        length: int = -1,
        reserved_value_supplier: ReservedValueSupplier | None = None,
    ) -> int:
        """:meth:`ExclusivePublication.offer`, then the wake if it appended."""
        result = super().offer(buffer, offset, length, reserved_value_supplier)
        if result > 0:
            self.wake_sender()
        return result

    def offer_vectored(
        self,
        pieces: Sequence[VectorPiece],
        reserved_value_supplier: ReservedValueSupplier | None = None,
    ) -> int:
        """:meth:`ExclusivePublication.offer_vectored`, then the wake if it appended."""
        result = super().offer_vectored(pieces, reserved_value_supplier)
        if result > 0:
            self.wake_sender()
        return result

    def offer_batch(
        self,
        messages: Sequence[Buffer],
        start: int = 0,
        count: int = -1,
        reserved_value_supplier: ReservedValueSupplier | None = None,
    ) -> int:
        """:meth:`ExclusivePublication.offer_batch`, then the wake if it appended."""
        result = super().offer_batch(messages, start, count, reserved_value_supplier)
        if result > 0:
            self.wake_sender()
        return result
