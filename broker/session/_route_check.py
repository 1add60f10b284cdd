"""Where a session's answers may go: only back to the client that opened it.

A CONNECT names the client's response channel. The broker accepts it only when it points back
at the CONNECT's own source: an IPC CONNECT (source identity ``aeron:ipc``) must name an
``aeron:ipc`` channel; a UDP CONNECT, a unicast ``aeron:udp`` endpoint on the very address the
CONNECT came from (the image's source identity, ``host:port``; a name is not resolved, so a
remote client names its address as it is seen). Pure functions, no I/O.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport import ChannelUriError
from aeromq.transport.channel_uri import ChannelUri

__all__ = ["IPC_SOURCE", "route_refusal"]

IPC_SOURCE: Final = "aeron:ipc"
"""The source identity of an IPC image."""

_FORBIDDEN_UDP_PARAMS: Final = ("control", "control-mode", "interface")


def _host_of(endpoint: str) -> str:
    host = endpoint.rpartition(":")[0]
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def route_refusal(response_channel: str, source_identity: str) -> str | None:
    """Why ``response_channel`` may not take the answers of a CONNECT from
    ``source_identity``, or None when it may."""
    try:
        uri = ChannelUri.parse(response_channel)
    except ChannelUriError as exc:
        return f"bad response channel: {exc}"
    if source_identity == IPC_SOURCE:
        return None if uri.is_ipc else "an IPC client must answer on aeron:ipc"
    if not uri.is_udp:
        return "a UDP client must answer on aeron:udp"
    endpoint = uri.get("endpoint")
    if endpoint is None or any(uri.get(name) is not None for name in _FORBIDDEN_UDP_PARAMS):
        return "a UDP response channel must be a unicast endpoint"
    if _host_of(endpoint) != _host_of(source_identity):
        return f"the response endpoint is not the request's source: source={source_identity}"
    return None
