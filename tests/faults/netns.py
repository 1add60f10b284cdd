"""An etcd member inside a test host of the fault suite (:class:`LabEtcd`), and the test hosts
themselves (network namespaces joined by veth pairs, ``bench/netns.py``, shared with the
benchmarks' Spark cluster), re-exported for the fault and system tests."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Final

from aeromq.broker.etcd import EtcdClient, EtcdError, etcd_binary
from bench.netns import HOST, NetLab, NetLabError, netlab, netns_unavailable

__all__ = ["HOST", "LabEtcd", "NetLab", "NetLabError", "netlab", "netns_unavailable"]


class LabEtcd:
    """One etcd member inside ``node`` of ``lab``, serving ``<node address>:2379`` (its data in
    ``data_dir``); etcd's timings as the repository's ``EtcdServer`` sets them (leases from
    1 s)."""

    CLIENT_PORT: Final = 2379
    PEER_PORT: Final = 2380

    def __init__(self, lab: NetLab, node: str, data_dir: Path) -> None:
        self.lab = lab
        self.node = node
        self.data_dir = data_dir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """``ADDRESS:2379``, as ``EtcdClient`` takes it."""
        return f"{self.lab.address(self.node)}:{self.CLIENT_PORT}"

    def start(self, timeout_s: float = 30.0) -> None:
        """Start etcd in its node; returns once it answers a read."""
        address = self.lab.address(self.node)
        client, peer = f"http://{self.endpoint}", f"http://{address}:{self.PEER_PORT}"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        arguments = [
            etcd_binary(), "--name", "lab", "--data-dir", str(self.data_dir),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"lab={peer}", "--initial-cluster-state", "new",
            "--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "error",
        ]  # fmt: skip
        with self.lab.inside(self.node):
            self.process = subprocess.Popen(
                arguments, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        deadline = time.monotonic() + timeout_s
        with EtcdClient(self.endpoint) as probe:
            while True:
                try:
                    probe.get("/aeromq/probe")
                    return
                except EtcdError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL (etcd's write-ahead log keeps what it acknowledged)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
