"""``DatagramReader``: a UDP socket's non-blocking read that returns None when no datagram waits.

The native one (``transport/driver/udp/_datagram.c``, which says why it exists) when built; else
:class:`PyDatagramReader`, the same reads in Python, the reference its tests hold it to (a source
checkout used without ``pip install``): its empty read still raises and catches
``BlockingIOError`` inside, as ``UdpChannelTransport.poll`` once did, but returns None as the
native one does. :data:`NATIVE_DATAGRAM_READER` says which runs.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import TYPE_CHECKING, Final, TypeAlias

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["NATIVE_DATAGRAM_READER", "DatagramReader", "PyDatagramReader"]

Received: TypeAlias = "tuple[int, tuple[str, int] | tuple[str, int, int, int]] | None"
"""``(length, source address)``, or None when no datagram waits."""


class PyDatagramReader:
    """The native ``DatagramReader`` in Python (see module): reads ``fd`` through a duplicate of
    its descriptor (closed by :meth:`release`), into ``buffer``."""

    __slots__ = ("_last", "_recvfrom_into", "_socket", "_view")

    def __init__(self, fd: int, buffer: Buffer) -> None:
        self._view: memoryview | None = None  # set last: release() (and __del__) close then
        if fd < 0:
            raise ValueError(f"fd must be >= 0, got {fd}")
        view = memoryview(buffer)
        if view.readonly:
            view.release()
            raise BufferError("Object is not writable.")
        self._socket = socket.socket(fileno=os.dup(fd))
        self._recvfrom_into = self._socket.recvfrom_into
        self._view = view
        self._last: object = None
        """The last datagram's source address: returned again for the same source."""

    def read(self) -> Received:
        """One datagram: ``(length, address)``, None when none waits (EAGAIN, EINTR); other
        errors raise their ``OSError``; EBADF once released."""
        view = self._view
        if view is None:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))  # released with its socket
        try:
            length, address = self._recvfrom_into(view, 0, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return None
        if address == self._last:
            address = self._last  # the same source: the same tuple, as the native one
        else:
            self._last = address
        return length, address

    def release(self) -> None:
        """Let go of the buffer and the duplicate descriptor (idempotent)."""
        if self._view is not None:
            self._view.release()
            self._view = None
            self._socket.close()

    def __del__(self) -> None:
        self.release()


try:
    from aeromq.transport.driver.udp._datagram import DatagramReader

    NATIVE_DATAGRAM_READER: Final = True
except ImportError:  # not built (see transport/driver/udp/_datagram.c): the Python reads
    DatagramReader = PyDatagramReader  # type: ignore[assignment,misc]  # the same reads
    NATIVE_DATAGRAM_READER = False  # type: ignore[misc]  # Final on the import's branch
