"""The address brokers answer an executor's UDP sessions on: this host's address on the way to
the broker, not the loopback.

A UDP session with a broker on another host (an executor of a cluster) asks the broker to send
its answers to a response endpoint of this host; the clients' default, ``127.0.0.1``, is right
only on the broker's own host (where IPC is used anyway). :func:`address_toward` asks the
kernel which local address a datagram to the broker would leave from (a UDP socket
``connect``: a route lookup, nothing is sent), so an executor needs no per-host setting.

Caller: the readers' session pool (``_reader_sessions.py``) and the sink's producers
(``_arrow_writers.py``, ``_exactly_once.py``, ``_row_writers.py``).
"""

from __future__ import annotations

import functools
import socket

from aeromq.client.route import parse_endpoints

__all__ = ["LOOPBACK", "address_toward", "response_host"]

LOOPBACK = "127.0.0.1"
_DISCARD_PORT = 9


@functools.lru_cache(maxsize=64)
def address_toward(host: str) -> str:
    """This host's IPv4 address that datagrams to ``host`` leave from; the loopback for a
    loopback ``host`` or when no route leads there."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, _DISCARD_PORT))
            return str(probe.getsockname()[0])
    except OSError:
        return LOOPBACK


def response_host(endpoints: str | tuple[str, ...]) -> str:
    """The UDP response host of sessions with the brokers behind ``endpoints`` (gRPC
    ``host:port`` of brokers or name servers): this host's address toward the first one."""
    found = parse_endpoints(endpoints)
    if not found:
        return LOOPBACK
    host = found[0].rpartition(":")[0].strip("[]") or LOOPBACK
    return address_toward(host)
