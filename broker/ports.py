"""Choosing free ports for servers asked for on port 0 whose port must be known before they bind
(the broker names its gRPC and RocketMQ ports in its routes and its store host; ``aeromq
cluster up`` hands each member its ports).

:func:`free_ports` binds one probe socket per port and holds them all until every port is
chosen, so the ports of one call differ: a probe closed before the next is bound lets the
kernel hand the same port out twice (two servers of one broker were once given one port and
the second could not bind). A port is free when chosen, not reserved: another process may take
it before its server binds.
"""

from __future__ import annotations

import socket

__all__ = ["free_ports"]


def free_ports(
    kind: socket.SocketKind, host: str, count: int, taken: set[int] | None = None
) -> list[int]:
    """``count`` distinct ports of ``host`` free now for sockets of ``kind``, none in ``taken``
    (which gets them added); held together while chosen."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            probe = socket.socket(socket.AF_INET, kind)
            held.append(probe)
            probe.bind((host, 0))
            port = int(probe.getsockname()[1])
            if taken is None or port not in taken:
                ports.append(port)
    finally:
        for probe in held:
            probe.close()
    if taken is not None:
        taken.update(ports)
    return ports
