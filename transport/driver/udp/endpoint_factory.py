"""What a send or receive channel endpoint needs before it exists: channel, socket, counters.

The steps Aeron's ``aeron_driver_conductor_get_or_add_send_channel_endpoint`` and
``..._receive_channel_endpoint`` share, for ``udp_publications.py`` and
``udp_subscriptions.py``:

- :func:`open_udp_channel`: the channel parsed and resolved, or refused as Aeron refuses it
  (``UNKNOWN_HOST``, ``INVALID_CHANNEL``, ``NOT_SUPPORTED``);
- :func:`open_transport`: the endpoint's socket, with the channel's socket buffer lengths (the
  settings' when the channel names none) and the settings' loss generator; a socket error on it
  later counts on ``Errors`` and goes to the driver's error handler. A socket that cannot be
  opened refuses the command with GENERIC_ERROR naming the address and the reason, as Aeron does
  (CHANNEL_ENDPOINT_ERROR is for errors of an endpoint already in use, keyed by its status
  counter);
- :func:`allocate_endpoint_counters`: the ``snd-channel`` / ``rcv-channel`` status counter and
  the ``snd-local-sockaddr`` / ``rcv-local-sockaddr`` counter (ACTIVE), labelled with the bound
  address. The caller sets the status ACTIVE once the endpoint is built.

Which addresses a socket binds, connects and joins is the caller's: a send endpoint binds the
control address (or joins the control group), a receive endpoint binds the data address.
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.transport._errors import ChannelEndpointError, ChannelUriError, UnknownHostError
from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent import AtomicCounter
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.command_error import command_error
from aeromq.transport.driver.udp.network_counters import (
    CHANNEL_STATUS_ACTIVE,
    allocate_channel_status,
    allocate_local_sockaddr,
)
from aeromq.transport.driver.udp.udp_channel import Sockaddr, UdpChannel, format_sockaddr
from aeromq.transport.driver.udp.udp_channel_transport import UdpChannelTransport
from aeromq.transport.driver.udp.udp_settings import UdpSettings

__all__ = ["allocate_endpoint_counters", "open_transport", "open_udp_channel"]


def open_udp_channel(channel: str, settings: UdpSettings) -> UdpChannel:
    """Parse and resolve ``channel``; refuse it as Aeron would (a command error)."""
    try:
        udp_channel = UdpChannel.parse(channel, settings.multicast_ttl)
    except ChannelUriError as exc:
        code = (
            ErrorCode.UNKNOWN_HOST
            if isinstance(exc, UnknownHostError)
            else ErrorCode.INVALID_CHANNEL
        )
        raise command_error(code, f"invalid udp channel ({exc})", channel=channel) from exc
    if udp_channel.unsupported_reason is not None:
        raise command_error(
            ErrorCode.NOT_SUPPORTED,
            f"not supported by this driver: {udp_channel.unsupported_reason}",
            channel=channel,
        )
    return udp_channel


def open_transport(
    channel: UdpChannel,
    settings: UdpSettings,
    *,
    bind_address: Sockaddr,
    connect_address: Sockaddr | None,
    multicast_group: Sockaddr | None,
    errors: AtomicCounter,
    on_error: Callable[[BaseException], object],
) -> UdpChannelTransport:
    """The endpoint's socket (see module); a failure to open it is the command's error."""

    def on_socket_error(error: Exception) -> None:
        errors.increment()
        on_error(error)

    try:
        return UdpChannelTransport(
            family=channel.family,
            bind_address=bind_address,
            connect_address=connect_address,
            multicast_group=multicast_group,
            multicast_interface=channel.interface_address if channel.is_multicast else None,
            multicast_ttl=channel.multicast_ttl,
            socket_sndbuf_length=_or(channel.socket_sndbuf_length, settings.socket_sndbuf_length),
            socket_rcvbuf_length=_or(channel.socket_rcvbuf_length, settings.socket_rcvbuf_length),
            loss_generator=settings.loss_generator,
            error_handler=on_socket_error,
            channel=channel.original_uri,
        )
    except ChannelEndpointError as exc:
        raise command_error(
            ErrorCode.GENERIC_ERROR, str(exc), channel=channel.original_uri
        ) from exc


def allocate_endpoint_counters(
    counters: CountersManager,
    status_type_id: int,
    registration_id: int,
    channel: UdpChannel,
    transport: UdpChannelTransport,
) -> tuple[AtomicCounter, AtomicCounter]:
    """The endpoint's status counter and its local socket address counter (see module)."""
    local_address = format_sockaddr(transport.local_address)
    status_id = allocate_channel_status(
        counters, status_type_id, registration_id, channel.original_uri, local_address
    )
    sockaddr_id = allocate_local_sockaddr(
        counters, status_type_id, registration_id, status_id, local_address
    )
    counters.set_counter_value(sockaddr_id, CHANNEL_STATUS_ACTIVE)
    values = counters.values_buffer
    return (
        AtomicCounter(values, status_id, counters),
        AtomicCounter(values, sockaddr_id, counters),
    )


def _or(value: int | None, default: int) -> int:
    return default if value is None else value
