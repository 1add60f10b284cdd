"""The network wakes of the media drivers running in this process, by driver directory.

A media driver's sender parks in a poll on its sockets
(``transport.driver.udp.socket_waiter.SocketWaiter``): a datagram ends the park at once, but a
publication's new data, written to shared memory by a client, does not; it waited for the
park's end (up to 1 ms under traffic, more once idle). A driver registers its network wake
here (:func:`register_network_wake`, ``MediaDriver``) while it runs; a client of the same
process finds it by the driver's directory (:func:`network_wake`, ``transport.client``) and
calls it after each offer to a network publication, so the frames go out at once. The wake a
driver registers sends them on the caller's thread while the thread that runs its sender parks
(``transport/driver/network_turn.py``), and otherwise ends that thread's park: one ``eventfd``
write while the thread parks or until its next park drains it, a flag check otherwise (the
waiter coalesces them).

Clients in other processes find nothing here and keep waiting for the park's end.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

__all__ = ["NetworkWake", "network_wake", "register_network_wake", "unregister_network_wake"]

NetworkWake = Callable[[], None]
"""Ends the park of a driver's sender thread (any thread, at any time)."""

_lock = threading.Lock()
_wakes: dict[str, NetworkWake] = {}


def register_network_wake(aeron_dir: str, wake: NetworkWake) -> None:
    """Offer ``wake`` to this process's clients of the driver in ``aeron_dir`` (see module)."""
    with _lock:
        _wakes[os.path.realpath(aeron_dir)] = wake


def unregister_network_wake(aeron_dir: str, wake: NetworkWake) -> None:
    """Stop offering ``wake`` (the driver closes); another driver's wake is left alone."""
    key = os.path.realpath(aeron_dir)
    with _lock:
        if _wakes.get(key) == wake:
            del _wakes[key]


def network_wake(aeron_dir: str) -> NetworkWake | None:
    """The wake of the driver running in ``aeron_dir`` in this process, if one is."""
    with _lock:
        return _wakes.get(os.path.realpath(aeron_dir))
