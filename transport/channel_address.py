"""Resolving a channel's addresses (I/O: it may ask DNS), and the canonical form of a channel.

Caller: the media driver's conductor when it opens a UDP channel
(:mod:`~transport.driver.udp.udp_channel`), and :class:`~transport.channel_uri.ChannelUri`'s
``resolve_endpoint`` and ``canonical_form``. Parsing an address is pure and lives with the
other parameter values in :mod:`~transport.channel_uri_params`; only here is a host resolved,
and a host that does not resolve raises :class:`~transport.UnknownHostError`.

The canonical form (Aeron's ``UdpChannel.canonicalForm``) is what the driver matches channels
by: ``UDP-<local address hex>-<local port>-<remote address hex>-<remote port>`` with resolved
addresses, so ``localhost`` and ``127.0.0.1`` give the same channel.
"""

from __future__ import annotations

import itertools
import socket
from typing import Any

from aeromq.transport._errors import UnknownHostError
from aeromq.transport.channel_uri_params import InterfaceAddress, SocketAddress

__all__ = ["resolve_socket_address", "udp_canonical_form"]

_UNIQUE_CANONICAL_SUFFIX = itertools.count()


def resolve_socket_address(
    host: str, port: int, *, uri: str = "", key: str = "endpoint"
) -> tuple[socket.AddressFamily, tuple[Any, ...]]:  # socket's address tuple, by family
    """Resolve a host for UDP: ``(family, sockaddr)``, IPv4 preferred; UnknownHostError if none.

    This is I/O (it may ask DNS): the driver's conductor calls it when it opens a channel.
    """
    last_error: socket.gaierror | None = None
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            infos = socket.getaddrinfo(host, port, family, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        except socket.gaierror as exc:
            last_error = exc
            continue
        if infos:
            info = infos[0]
            return info[0], info[4]
    raise UnknownHostError(
        "could not resolve host", uri=uri, key=key, host=host, reason=str(last_error)
    ) from last_error


def udp_canonical_form(
    uri: str,
    endpoint: SocketAddress | None,
    control: SocketAddress | None,
    interface: InterfaceAddress | None,
    channel_tag: int | None,
) -> str:
    """The canonical form of the UDP channel ``uri`` with these addresses; resolves hosts.

    A channel with neither an endpoint, a control address nor a tag matches no other: its form
    ends in a number unique in this process.
    """
    remote = _resolved_bytes(endpoint, uri, "endpoint")
    if control is not None:
        local = _resolved_bytes(control, uri, "control")
    elif interface is not None:
        local = _resolved_bytes(SocketAddress(interface.host, interface.port), uri, "interface")
    else:
        local = (bytes(4), 0)
    form = f"UDP-{local[0].hex()}-{local[1]}-{remote[0].hex()}-{remote[1]}"
    if endpoint is None and control is None and channel_tag is None:
        form += f"-{next(_UNIQUE_CANONICAL_SUFFIX)}"
    return form


def _resolved_bytes(address: SocketAddress | None, uri: str, key: str) -> tuple[bytes, int]:
    if address is None:
        return bytes(4), 0
    family, sockaddr = resolve_socket_address(address.host, address.port, uri=uri, key=key)
    return socket.inet_pton(family, sockaddr[0].split("%")[0]), sockaddr[1]
