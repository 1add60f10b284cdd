"""The media driver's wake socket: how a client in another process ends the driver's park.

A driver whose conductor parks in a ``poll`` (an embedded driver in ``SHARED`` threading mode,
parked on its network sockets) finds a client's command on the to-driver ring buffer only at
its next wake-up. Aeron's drivers park a millisecond at most; an idle Python driver that woke
so often would cost a few percent of a core, so it parks until its next timer instead, and the
client tells it a command is there: after writing a command that waits for an answer, it sends
one empty datagram to a Unix socket in the driver's directory (:data:`WAKE_SOCKET_FILE`), which
the driver's park polls on. A keepalive sends none (the driver notes it at its next wake-up,
seconds before it matters).

Users: the driver (:func:`bind_wake_socket`, ``transport.driver.media_driver``) and the
client's driver proxy (:class:`WakeSender`, ``transport.client.driver_proxy``). A client of a
driver without the socket (another kind of driver, or an older one) sends nothing and waits for
that driver's own park: the datagram is a hint, never needed for correctness.
"""

from __future__ import annotations

import contextlib
import os
import socket
from typing import Final

__all__ = ["WAKE_SOCKET_FILE", "WakeSender", "bind_wake_socket", "drain_wake_socket"]

WAKE_SOCKET_FILE: Final = "driver-wake.sock"
"""The wake socket's name in the driver's directory (see module)."""


def bind_wake_socket(aeron_dir: str, file_mode: int = 0o600) -> socket.socket | None:
    """A non-blocking Unix datagram socket bound at :data:`WAKE_SOCKET_FILE` in ``aeron_dir``
    (a stale file of a dead driver replaced) with the permission bits ``file_mode`` (the
    driver's, as its other files: only who may map ``cnc.dat`` may send to it), or None where
    that cannot be (no Unix sockets, a path too long for one): the driver then parks as
    before."""
    if not hasattr(socket, "AF_UNIX"):
        return None
    path = os.path.join(aeron_dir, WAKE_SOCKET_FILE)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        sock.bind(path)
        os.chmod(path, file_mode)
    except OSError:
        sock.close()
        return None
    return sock


def drain_wake_socket(sock: socket.socket) -> int:
    """Read every datagram waiting on ``sock`` (the driver, when its park's poll found it
    readable); how many there were."""
    count = 0
    with contextlib.suppress(OSError):  # BlockingIOError: drained
        while True:
            sock.recv(1)
            count += 1
    return count


class WakeSender:
    """Sends a driver's wake socket its datagrams (see module); one per client. Each wake opens
    a socket of its own and closes it (commands are the control path: a few a second at most),
    so a sender holds nothing to close."""

    __slots__ = ("_path",)

    def __init__(self, aeron_dir: str) -> None:
        self._path = os.path.join(aeron_dir, WAKE_SOCKET_FILE)

    def wake(self) -> bool:
        """Tell the driver a command waits; whether the datagram went (no socket there, or its
        queue full: it did not, and the driver finds the command at its own next wake-up)."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.setblocking(False)
                sock.sendto(b"", self._path)
        except (OSError, AttributeError):  # AttributeError: no Unix sockets on this platform
            return False
        return True
