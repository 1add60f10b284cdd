"""Test hosts on one machine: network namespaces joined by veth pairs, and partitions between
them by taking a link down.

A :class:`NetLab` makes one namespace per node (``aeromq-<run>-<node>``, ``<run>`` 4 random hex
digits, unique per run) and a veth pair between every two nodes (a full mesh), plus one pair
from the host's own namespace (where the test runs) to each node. Every node has one address,
``10.77.<subnet>.<n>`` on its loopback (the subnet drawn per run among those no route of the
host uses yet); each link carries a /32 route to the peer's address, so a node reaches each
other node over the link between them only. Taking that one link down (:meth:`NetLab.cut`)
cuts exactly that pair, both ways: "the leader cut off from etcd only" cuts one link, and a
side of a partition is every link across it (:meth:`NetLab.partition`). :meth:`NetLab.heal`
sets the links up again and puts their routes back (a link set down loses its routes).

The host reaches every node (its clients, the test's etcd client, the brokers' gRPC ports):
those links are never cut. Shared memory (``/dev/shm``, Aeron's IPC) is not a network: clients
in the host still reach a node's driver over IPC whatever the links do.

Processes run inside a node by :meth:`NetLab.inside`: the calling thread enters the node's
namespace (``setns``) for the duration of a ``with`` block, and processes it starts there
(``subprocess.Popen`` forks from the calling thread) stay in it for life.

These are the test suite's and the benchmarks' own hosts (the fault suite's partitions, the
Spark standalone cluster's workers of ``tests/pipeline`` and ``bench spark``; etcd inside a
node: ``tests/faults/netns.py``; a public module of ``bench`` since the tests import it), made
by :func:`netlab` and always removed at its end (the namespaces, hence their veth ends, and any
process still inside them), even after a failed test. Needs root and ``ip`` (iproute2); :func:`netns_unavailable` says why not when not.
There is no ``netem`` qdisc on the machines this runs on: loss and delay come from the
transport's loss generator instead (see ``docs/replication.md``, Fault testing).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

__all__ = ["HOST", "NetLab", "NetLabError", "netlab", "netns_unavailable"]

HOST: Final = "host"
"""The name of the test's own namespace among a lab's nodes (its links are never cut)."""
_PREFIX: Final = "aeromq-"
_CLONE_NEWNET: Final = 0x40000000
_HOST_OCTET: Final = 254
_CARRIER_TIMEOUT_S: Final = 5.0
"""How long a healed link may take to report a carrier on both ends."""
_libc = ctypes.CDLL(None, use_errno=True)


class NetLabError(Exception):
    """An ``ip`` command of the lab failed (its arguments and output in the message)."""


def netns_unavailable() -> str | None:
    """Why namespaces cannot be made here (not root, no ``ip``), or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "network namespaces need iproute2's ip"
    return None


def _ip(*args: str, netns: str | None = None, check: bool = True) -> str:
    command = ["ip", *args] if netns is None else ["ip", "-n", netns, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    if check and done.returncode != 0:
        raise NetLabError(f"{' '.join(command)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def _free_subnet() -> int:
    """A third octet of 10.77.x.0/24 that no route of the host uses."""
    used = {int(m) for m in re.findall(r"10\.77\.(\d+)\.", _ip("route", "show", "table", "all"))}
    free = [octet for octet in range(1, 250) if octet not in used]
    if not free:
        raise NetLabError("no free 10.77.x.0/24 subnet")
    return random.choice(free)


class NetLab:
    """Namespaces for ``nodes`` (short names: ``etcd``, ``b0``...) and their links (see module).

    Made by :meth:`create`, removed by :meth:`close` (both from :func:`netlab`)."""

    def __init__(self, nodes: Sequence[str]) -> None:
        if len(set(nodes)) != len(nodes) or HOST in nodes or len(nodes) > 9:
            raise ValueError(f"nodes must be unique, at most 9, none named {HOST!r}: {nodes}")
        self.run = f"{random.getrandbits(16):04x}"
        self.nodes = tuple(nodes)
        self.subnet = 0
        self._links: dict[frozenset[str], tuple[str, str]] = {}  # pair -> (dev of a, dev of b)
        self._made: list[str] = []
        self._host_devices: list[str] = []
        self._cut: set[frozenset[str]] = set()
        self._lock = threading.Lock()

    # -- names --------------------------------------------------------------------------------

    def namespace(self, node: str) -> str:
        """The namespace of ``node`` (``aeromq-<run>-<node>``)."""
        self._known(node)
        return f"{_PREFIX}{self.run}-{node}"

    def address(self, node: str) -> str:
        """The one address of ``node`` (the host's is where it reaches the nodes from)."""
        if node == HOST:
            return f"10.77.{self.subnet}.{_HOST_OCTET}"
        self._known(node)
        return f"10.77.{self.subnet}.{self.nodes.index(node) + 1}"

    def _known(self, node: str) -> None:
        if node not in self.nodes:
            raise ValueError(f"no node {node!r} in this lab: {self.nodes}")

    def _code(self, node: str) -> str:
        return "h" if node == HOST else str(self.nodes.index(node))

    def _device(self, node: str, peer: str) -> str:
        return f"am{self.run}{self._code(node)}{self._code(peer)}"  # 8 characters (max 15)

    # -- making and removing ------------------------------------------------------------------

    def create(self) -> None:
        """Make the namespaces, the links and the routes."""
        self.subnet = _free_subnet()
        for node in self.nodes:
            namespace = self.namespace(node)
            _ip("netns", "add", namespace)
            self._made.append(namespace)
            _ip("link", "set", "lo", "up", netns=namespace)
            _ip("addr", "add", f"{self.address(node)}/32", "dev", "lo", netns=namespace)
        for index, node in enumerate(self.nodes):
            for peer in self.nodes[index + 1 :]:
                self._link(node, peer)
            self._link(HOST, node)

    def _link(self, a: str, b: str) -> None:
        dev_a, dev_b = self._device(a, b), self._device(b, a)
        if a == HOST:
            _ip("link", "add", dev_a, "type", "veth", "peer", "name", dev_b)
            self._host_devices.append(dev_a)
            _ip("link", "set", dev_b, "netns", self.namespace(b))
        else:
            _ip(
                "link", "add", dev_a, "type", "veth", "peer", "name", dev_b,
                "netns", self.namespace(b), netns=self.namespace(a),
            )  # fmt: skip
        self._links[frozenset((a, b))] = (dev_a, dev_b) if a < b else (dev_b, dev_a)
        self._up(a, b)

    def _ends(self, a: str, b: str) -> Iterator[tuple[str, str, str]]:
        """(node, its device, the peer) for both ends of the link between ``a`` and ``b``."""
        yield a, self._device(a, b), b
        yield b, self._device(b, a), a

    def _netns_of(self, node: str) -> str | None:
        return None if node == HOST else self.namespace(node)

    def _up(self, a: str, b: str) -> None:
        for node, device, peer in self._ends(a, b):
            netns = self._netns_of(node)
            _ip("link", "set", device, "up", netns=netns)
            if node == HOST:  # the host's address on its end of each of its links
                _ip("addr", "replace", f"{self.address(HOST)}/32", "dev", device)
            route = ["route", "replace", f"{self.address(peer)}/32", "dev", device]
            _ip(*route, "src", self.address(node), netns=netns)
        self._wait_carrier(a, b)

    def _wait_carrier(self, a: str, b: str) -> None:
        """Until both ends of the link report a carrier (``LOWER_UP``), then forget the peers'
        link-layer addresses the cut left unresolved: a first packet meets a working link (a
        probe while the carrier was still coming up, or queued behind an ARP entry that failed
        during the cut, was dropped, and TCP's next SYN comes a second later)."""
        deadline = time.monotonic() + _CARRIER_TIMEOUT_S
        for node, device, _ in self._ends(a, b):
            netns = self._netns_of(node)
            while "LOWER_UP" not in _ip("-o", "link", "show", "dev", device, netns=netns):
                if time.monotonic() > deadline:
                    raise NetLabError(f"link {device} of {node} has no carrier after heal")
                time.sleep(0.01)
            _ip("neigh", "flush", "dev", device, netns=netns, check=False)

    def close(self) -> None:
        """Kill what still runs inside the namespaces, remove them (and so every link)."""
        for namespace in self._made:
            pids = _ip("netns", "pids", namespace, check=False).split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGCONT)
                    os.kill(int(pid), signal.SIGKILL)
        for namespace in reversed(self._made):
            _ip("netns", "delete", namespace, check=False)
        for device in self._host_devices:  # gone with their peers; left only on a failure
            _ip("link", "delete", device, check=False)
        self._made.clear()
        self._host_devices.clear()

    # -- running inside -----------------------------------------------------------------------

    @contextlib.contextmanager
    def inside(self, node: str) -> Iterator[None]:
        """The calling thread in ``node``'s namespace for the block (see module)."""
        with (
            open("/proc/thread-self/ns/net", "rb") as home,
            open(f"/run/netns/{self.namespace(node)}", "rb") as there,
        ):
            _setns(there.fileno())
            try:
                yield
            finally:
                _setns(home.fileno())

    # -- faults -------------------------------------------------------------------------------

    def cut(self, a: str, b: str) -> None:
        """Take the link between ``a`` and ``b`` down: they no longer reach each other."""
        if HOST in (a, b):
            raise ValueError("the host's links are not cut (the test's clients use them)")
        with self._lock:
            node, device, _ = next(self._ends(a, b))
            _ip("link", "set", device, "down", netns=self._netns_of(node))
            self._cut.add(frozenset((a, b)))

    def heal(self, a: str, b: str) -> None:
        """Set the link between ``a`` and ``b`` up again, with its routes."""
        with self._lock:
            self._up(a, b)
            self._cut.discard(frozenset((a, b)))

    def partition(self, side: Iterable[str]) -> None:
        """Cut every link between ``side`` and the other nodes (the host's excepted)."""
        inner = set(side)
        for node in inner:
            self._known(node)
        for node in inner:
            for peer in self.nodes:
                if peer not in inner:
                    self.cut(node, peer)

    def heal_all(self) -> None:
        """Heal every cut link."""
        for pair in list(self._cut):
            self.heal(*sorted(pair))

    def reaches(self, a: str, b: str, port: int) -> bool:
        """Whether a TCP connect from ``a`` to ``b``'s ``port`` gets an answer (accepted or
        refused) within a second: the link works."""
        with self.inside(a), socket.socket() as probe:
            probe.settimeout(1.0)
            try:
                probe.connect((self.address(b), port))
            except ConnectionRefusedError:
                return True
            except OSError:
                return False
            return True


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise NetLabError(f"setns: {os.strerror(error)}")


@contextlib.contextmanager
def netlab(nodes: Sequence[str]) -> Iterator[NetLab]:
    """A :class:`NetLab` of ``nodes``, created, and removed at the end whatever happened."""
    lab = NetLab(nodes)
    try:
        lab.create()
        yield lab
    finally:
        lab.close()
