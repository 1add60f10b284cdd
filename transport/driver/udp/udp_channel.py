"""``UdpChannel``: an ``aeron:udp`` channel URI resolved into the addresses sockets need.

Aeron's ``UdpChannel`` / ``aeron_udp_channel_t``. Parsing resolves host names (I/O: the
conductor does it when a channel is opened) and works out, from ``endpoint``, ``control`` and
``interface``:

==================  ====================================  =====================================
                    unicast                               multicast (``endpoint`` in 224/4)
==================  ====================================  =====================================
``remote_data``     ``endpoint``: where DATA goes, and    the data group (``endpoint``): where
                    what a subscription binds to          DATA goes, what subscriptions bind to
                                                          and join
``remote_control``  ``endpoint``                          the control group: the data group's
                                                          address + 1 (its last byte must be
                                                          odd), same port; publications bind to
                                                          and join it, receivers send to it
``local_control``   what a publication binds to:          the interface address, port 0
                    ``control``, else ``interface``,
                    else ``0.0.0.0:0``
``interface_...``   the local address used                the interface that joins and sends
                                                          (``interface``, default ``0.0.0.0``)
==================  ====================================  =====================================

Per-channel settings read here: ``mtu``, ``term-length``, ``session-id``, ``so-sndbuf``,
``so-rcvbuf``, ``rcv-wnd``, ``ttl``, ``fc`` (flow control), ``nak-delay``. The canonical form
(``UDP-<local hex>-<local port>-<remote hex>-<remote port>``) is what endpoints are shared by:
two URIs naming the same addresses share one socket.

Manual and dynamic control modes (multi-destination cast) and response channels are not
supported: :attr:`UdpChannel.unsupported_reason` says why, and the conductor refuses such a
channel with NOT_SUPPORTED.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

from aeromq.transport._errors import ChannelUriError, ConfigurationError
from aeromq.transport.channel_address import resolve_socket_address
from aeromq.transport.channel_uri import ChannelUri

__all__ = ["Sockaddr", "UdpChannel", "format_sockaddr"]

Sockaddr = tuple[str, int] | tuple[str, int, int, int]
"""A socket address as Python's socket module takes it: ``(host, port)`` or the IPv6 4-tuple."""


def format_sockaddr(address: Sockaddr) -> str:
    """``127.0.0.1:40123`` or ``[::1]:40123``: Aeron's source identity form."""
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class UdpChannel:
    """A resolved UDP channel (see module). Build it with :meth:`parse`."""

    original_uri: str
    uri: ChannelUri
    canonical_form: str
    family: socket.AddressFamily
    remote_data: Sockaddr
    remote_control: Sockaddr
    local_control: Sockaddr
    is_multicast: bool
    interface_address: str
    multicast_ttl: int
    has_explicit_control: bool
    mtu_length: int | None
    term_length: int | None
    session_id: int | None
    socket_sndbuf_length: int | None
    socket_rcvbuf_length: int | None
    receiver_window_length: int | None
    flow_control: str | None
    nak_delay_ns: int | None
    unsupported_reason: str | None

    @classmethod
    def parse(cls, channel: str | ChannelUri, default_multicast_ttl: int = 0) -> UdpChannel:
        """Parse and resolve; raise ChannelUriError (UnknownHostError for a bad host)."""
        uri = channel if isinstance(channel, ChannelUri) else ChannelUri.parse(channel)
        original = str(channel)
        if not uri.is_udp:
            raise ChannelUriError("not a udp channel", uri=original, media=uri.media)
        unsupported = _unsupported_reason(uri)
        endpoint = uri.endpoint
        control = uri.control
        interface = uri.interface
        if endpoint is None:
            if unsupported is None:
                unsupported = "a udp channel without an endpoint (multi-destination cast)"
            if control is None:
                raise ChannelUriError("a udp channel needs an endpoint", uri=original)
            endpoint_family, remote = resolve_socket_address(
                control.host, control.port, uri=original, key="control"
            )
        else:
            endpoint_family, remote = resolve_socket_address(
                endpoint.host, endpoint.port, uri=original, key="endpoint"
            )
        remote_ip = ipaddress.ip_address(remote[0].split("%")[0])
        is_multicast = remote_ip.is_multicast
        any_host = "::" if endpoint_family == socket.AF_INET6 else "0.0.0.0"

        if is_multicast:
            remote_control = _multicast_control_address(remote, original)
            if interface is not None:
                _, interface_sockaddr = resolve_socket_address(
                    interface.host, interface.port, uri=original, key="interface"
                )
                interface_address = interface_sockaddr[0]
            else:
                interface_address = any_host
            local_control: Sockaddr = (interface_address, 0)
        else:
            remote_control = remote
            if control is not None:
                _, local_control = resolve_socket_address(
                    control.host, control.port, uri=original, key="control"
                )
            elif interface is not None:
                _, local_control = resolve_socket_address(
                    interface.host, interface.port, uri=original, key="interface"
                )
            else:
                local_control = (any_host, 0)
            interface_address = local_control[0]

        ttl = uri.get_int("ttl")
        return cls(
            original_uri=original,
            uri=uri,
            canonical_form=uri.canonical_form(),
            family=endpoint_family,
            remote_data=remote,
            remote_control=remote_control,
            local_control=local_control,
            is_multicast=is_multicast,
            interface_address=interface_address,
            multicast_ttl=default_multicast_ttl if ttl is None else ttl,
            has_explicit_control=control is not None,
            mtu_length=_size(uri, "mtu"),
            term_length=_size(uri, "term-length"),
            session_id=None if uri.session_id_tag is not None else uri.get_int("session-id"),
            socket_sndbuf_length=_size(uri, "so-sndbuf"),
            socket_rcvbuf_length=_size(uri, "so-rcvbuf"),
            receiver_window_length=_size(uri, "rcv-wnd"),
            flow_control=uri.get("fc"),
            nak_delay_ns=uri.get_duration_ns("nak-delay"),
            unsupported_reason=unsupported,
        )

    @property
    def local_data(self) -> Sockaddr:
        """What a subscription's socket binds to: the endpoint (the data group for multicast)."""
        return self.remote_data

    def __str__(self) -> str:
        return self.original_uri


def _size(uri: ChannelUri, key: str) -> int | None:
    try:
        return uri.get_size(key)
    except ConfigurationError as exc:  # parse() checked it; keep the channel in the message
        raise ChannelUriError(str(exc), uri=str(uri), key=key) from exc


def _unsupported_reason(uri: ChannelUri) -> str | None:
    mode = uri.get("control-mode")
    if mode is not None:
        return f"control-mode={mode} (multi-destination cast and response channels)"
    if uri.get("response-correlation-id") is not None:
        return "response channels"
    return None


def _multicast_control_address(data: Sockaddr, uri: str) -> Sockaddr:
    """Aeron's rule: the control group is the data group + 1, and the data group is odd."""
    packed = bytearray(ipaddress.ip_address(data[0].split("%")[0]).packed)
    if packed[-1] & 1 == 0:
        raise ChannelUriError(
            "multicast data address must be odd", uri=uri, key="endpoint", value=data[0]
        )
    packed[-1] += 1
    control = str(ipaddress.ip_address(bytes(packed)))
    return (control, *data[1:])
