"""``HostilePeer``: a UDP peer that forges Aeron frames at a receiver, for security tests.

It speaks only the wire protocol, through the frame flyweights of ``transport/protocol/``
(:class:`~transport.protocol.SetupFlyweight`, :class:`~transport.protocol.DataHeaderFlyweight`):
no driver, no log, no handshake. What an attacker on the network can send with a few lines of
code, it sends:

- :meth:`HostilePeer.setup`: one SETUP for any session, stream and term length (the frame that
  makes an Aeron receiver create an image);
- :meth:`HostilePeer.setup_flood`: SETUPs for ``count`` random sessions (the issue's attack:
  20 sessions with 1 GiB terms, sent twice);
- :meth:`HostilePeer.heartbeat`: a DATA heartbeat of a session (keeps a forged image alive).

``bind`` picks the local address the frames come from (any loopback address works on Linux, so
a test can play several sources). Use it as a context manager (it closes its socket).
:func:`free_udp_port` finds a port for the receiver under attack.
"""

from __future__ import annotations

import secrets
import socket
from types import TracebackType

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol import (
    DATA_HEADER_LENGTH,
    SETUP_HEADER_LENGTH,
    DataHeaderFlyweight,
    SetupFlyweight,
)

__all__ = ["DEFAULT_MTU", "HostilePeer", "free_udp_port"]

DEFAULT_MTU = 1408
"""The MTU the forged SETUPs announce (Aeron's default)."""


def free_udp_port(host: str = "127.0.0.1") -> int:
    """A UDP port of ``host`` free now (bound and let go): for the receiver a test attacks."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


class HostilePeer:
    """Forged frames from ``bind`` (host, port; port 0 any) to ``target`` (see module)."""

    def __init__(self, target: tuple[str, int], bind: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self.target = target
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(bind)
        self._buffer = AtomicBuffer(bytearray(64))
        self._setup = SetupFlyweight(self._buffer)
        self._data = DataHeaderFlyweight(self._buffer)
        self.sent = 0
        """Datagrams sent so far."""

    @property
    def address(self) -> tuple[str, int]:
        """The address the frames come from."""
        host, port = self._socket.getsockname()[:2]
        return str(host), int(port)

    def setup(
        self,
        session_id: int,
        stream_id: int,
        term_length: int,
        *,
        initial_term_id: int = 0,
        mtu: int = DEFAULT_MTU,
    ) -> None:
        """Send one SETUP of ``session_id`` on ``stream_id`` announcing ``term_length``."""
        length = self._setup.put_setup(
            session_id=session_id,
            stream_id=stream_id,
            initial_term_id=initial_term_id,
            active_term_id=initial_term_id,
            term_offset=0,
            term_length=term_length,
            mtu=mtu,
        )
        assert length == SETUP_HEADER_LENGTH
        self._send(length)

    def setup_flood(
        self, stream_id: int, term_length: int, count: int, *, rounds: int = 1
    ) -> list[int]:
        """SETUPs of ``count`` random sessions, each sent ``rounds`` times; the session ids."""
        sessions = [secrets.randbits(31) + 1 for _ in range(count)]
        for _ in range(rounds):
            for session_id in sessions:
                self.setup(session_id, stream_id, term_length)
        return sessions

    def heartbeat(
        self, session_id: int, stream_id: int, *, term_id: int = 0, term_offset: int = 0
    ) -> None:
        """Send a DATA heartbeat (frame length 0) of ``session_id`` at the position given."""
        length = self._data.put_heartbeat(
            session_id=session_id, stream_id=stream_id, term_id=term_id, term_offset=term_offset
        )
        assert length == DATA_HEADER_LENGTH
        self._send(length)

    def _send(self, length: int) -> None:
        self._socket.sendto(self._buffer.get_bytes(0, length), self.target)
        self.sent += 1

    def close(self) -> None:
        """Close the socket."""
        self._socket.close()

    def __enter__(self) -> HostilePeer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
