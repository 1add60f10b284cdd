"""``UdpChannelTransport``: one non-blocking UDP socket of a channel endpoint.

Aeron's ``aeron_udp_channel_transport_t``. Opening binds the socket (with ``SO_REUSEADDR`` for a
multicast group, which several processes on one host may join), connects it to the remote
address when given (a unicast publication talks to one endpoint), joins a multicast group on an
interface, sets TTL and loopback for multicast sends, and sizes ``SO_SNDBUF`` / ``SO_RCVBUF``
(0 keeps the OS default; Linux caps the size at ``net.core.[rw]mem_max``). A failure raises
:class:`~transport.ChannelEndpointError` naming the address and the reason.

Receiving (:meth:`UdpChannelTransport.poll`) reads up to ``limit`` datagrams into one reusable
receive buffer (an :class:`~transport.concurrent.AtomicBuffer` sized for the largest UDP
payload) with a native non-blocking read (``transport/driver/udp/_datagram.c``; its Python
version when not built, :mod:`~transport.driver.udp.datagram_reader`) that returns
None when no datagram waits, where ``socket.recvfrom_into`` raised ``BlockingIOError`` (its
``OSError`` and errno text cost several times the read, and every poll that found data ended
with one); it returns the source address as the socket module does, the same tuple again for
the same source, and raises the same ``OSError`` subclasses for real errors. Nothing is
allocated per datagram but the result pair. A loss generator, when set, drops datagrams before
the handler sees them. Sending returns the bytes sent, 0 when the socket would block (or the kernel reports a
refused or unreachable peer, as Aeron does) and -1 on any other error, which goes to the error
handler; the hot path never raises.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable

from aeromq.transport._errors import ChannelEndpointError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.udp.datagram_reader import DatagramReader
from aeromq.transport.driver.udp.udp_channel import Sockaddr
from aeromq.transport.driver.udp.udp_settings import DatagramFilter
from aeromq.transport.protocol import MAX_UDP_PAYLOAD_LENGTH

__all__ = ["RECEIVE_BUFFER_LENGTH", "DatagramHandler", "UdpChannelTransport"]

RECEIVE_BUFFER_LENGTH = MAX_UDP_PAYLOAD_LENGTH + 32
"""The receive buffer holds the largest datagram Aeron sends (and a little more, so an
oversized one shows up as too long rather than silently cut to fit)."""

DatagramHandler = Callable[[AtomicBuffer, int, Sockaddr], None]
"""``handler(buffer, length, source_address)`` for one datagram at offset 0 of ``buffer``."""

_TRANSIENT_SEND_ERRNOS = frozenset(
    (errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS, errno.EINTR, errno.ECONNREFUSED)
)


class UdpChannelTransport:
    """A bound, non-blocking UDP socket with a reusable receive buffer (see module)."""

    __slots__ = (
        "_error_handler",
        "_loss_generator",
        "_read",
        "_reader",
        "_socket",
        "fd",
        "local_address",
        "receive_buffer",
    )

    def __init__(
        self,
        *,
        family: socket.AddressFamily,
        bind_address: Sockaddr,
        connect_address: Sockaddr | None = None,
        multicast_group: Sockaddr | None = None,
        multicast_interface: str | None = None,
        multicast_ttl: int = 0,
        socket_sndbuf_length: int = 0,
        socket_rcvbuf_length: int = 0,
        loss_generator: DatagramFilter | None = None,
        error_handler: Callable[[Exception], object] | None = None,
        channel: str = "",
    ) -> None:
        sock = socket.socket(family, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        try:
            if multicast_group is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if socket_sndbuf_length > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, socket_sndbuf_length)
            if socket_rcvbuf_length > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, socket_rcvbuf_length)
            _run(sock.bind, bind_address, "bind", channel)
            if multicast_group is not None:
                _join(sock, family, multicast_group, multicast_interface or "", channel)
            if multicast_interface is not None or multicast_group is not None:
                _multicast_send_options(sock, family, multicast_interface or "", multicast_ttl)
            if connect_address is not None:
                _run(sock.connect, connect_address, "connect", channel)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._socket = sock
        self.fd = sock.fileno()
        """The socket's descriptor, as a :class:`~transport.driver.udp.socket_waiter.SocketWaiter`
        names the readable ones (kept after ``close()``: the agents let go of it first)."""
        self.local_address: Sockaddr = sock.getsockname()
        self.receive_buffer = AtomicBuffer.allocate(RECEIVE_BUFFER_LENGTH)
        self._reader = DatagramReader(self.fd, self.receive_buffer)
        self._read = self._reader.read
        self._loss_generator = loss_generator
        self._error_handler = error_handler

    @property
    def socket(self) -> socket.socket:
        return self._socket

    def socket_buffer_lengths(self) -> tuple[int, int]:
        """``(SO_SNDBUF, SO_RCVBUF)`` as the kernel set them (Linux doubles the request)."""
        sock = self._socket
        return (
            sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
            sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
        )

    def poll(self, handler: DatagramHandler, limit: int) -> int:
        """Receive up to ``limit`` datagrams, each to ``handler``; return the bytes received."""
        read = self._read
        buffer = self.receive_buffer
        loss = self._loss_generator
        total = 0
        for _ in range(limit):
            try:
                received = read()  # None: nothing waits (no exception raised for it)
            except (ConnectionRefusedError, ConnectionResetError):
                continue  # an ICMP error from an earlier send on a connected socket
            except OSError as exc:
                self._on_error(exc)
                break
            if received is None:
                break
            length, address = received
            total += length
            if loss is not None and loss.should_drop(buffer, length):
                continue
            handler(buffer, length, address)
        return total

    def send(self, data: memoryview) -> int:
        """Send one datagram to the connected address: bytes sent, 0 if it would block, -1."""
        try:
            return self._socket.send(data)
        except OSError as exc:
            return self._send_failed(exc)

    def send_to(self, data: memoryview, address: Sockaddr) -> int:
        """Send one datagram to ``address``: bytes sent, 0 if it would block, -1 on error."""
        try:
            return self._socket.sendto(data, address)
        except OSError as exc:
            return self._send_failed(exc)

    def _send_failed(self, exc: OSError) -> int:
        if exc.errno in _TRANSIENT_SEND_ERRNOS or isinstance(exc, BlockingIOError):
            return 0
        self._on_error(exc)
        return -1

    def _on_error(self, exc: OSError) -> None:
        if self._error_handler is not None:
            self._error_handler(
                ChannelEndpointError(
                    "udp socket error",
                    local_address=self.local_address,
                    errno=exc.errno,
                    reason=exc.strerror,
                )
            )

    def close(self) -> None:
        """Close the socket (idempotent); the reader lets go of the receive buffer first."""
        self._reader.release()
        self._socket.close()

    def __repr__(self) -> str:
        return f"UdpChannelTransport(local_address={self.local_address!r})"


def _run(call: Callable[[Sockaddr], None], address: Sockaddr, what: str, channel: str) -> None:
    try:
        call(address)
    except OSError as exc:
        raise ChannelEndpointError(
            f"could not {what} udp socket",
            channel=channel,
            address=address,
            reason=exc.strerror or str(exc),
        ) from exc


def _join(
    sock: socket.socket,
    family: socket.AddressFamily,
    group: Sockaddr,
    interface: str,
    channel: str,
) -> None:
    try:
        if family == socket.AF_INET6:
            index = socket.if_nametoindex(interface) if interface and interface != "::" else 0
            request = socket.inet_pton(socket.AF_INET6, group[0]) + index.to_bytes(4, "little")
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, request)
        else:
            request = socket.inet_aton(group[0]) + socket.inet_aton(interface or "0.0.0.0")
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, request)
    except OSError as exc:
        raise ChannelEndpointError(
            "could not join multicast group",
            channel=channel,
            group=group[0],
            interface=interface,
            reason=exc.strerror or str(exc),
        ) from exc


def _multicast_send_options(
    sock: socket.socket, family: socket.AddressFamily, interface: str, ttl: int
) -> None:
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 1)
        if ttl > 0:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, ttl)
        return
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
    if interface and interface != "0.0.0.0":
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(interface))
    if ttl > 0:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
