"""The fault suite's test hosts (``bench/netns.py``): namespaces that reach each other
over their own links, a cut that parts exactly one pair, a heal, and nothing left behind."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.faults.netns import HOST, NetLab, netlab, netns_unavailable

pytestmark = pytest.mark.skipif(netns_unavailable() is not None, reason=str(netns_unavailable()))


def _listen(lab: NetLab, node: str) -> tuple[socket.socket, int]:
    with lab.inside(node):
        server = socket.socket()
        server.bind((lab.address(node), 0))
        server.listen()
    return server, server.getsockname()[1]


def test_should_reach_every_node_and_part_exactly_the_pair_cut() -> None:
    with netlab(["a", "b", "c"]) as lab:
        servers = {node: _listen(lab, node) for node in lab.nodes}
        try:
            for node in lab.nodes:
                for peer in (*lab.nodes, HOST):
                    if peer != node and peer != HOST:
                        assert lab.reaches(peer, node, servers[node][1]), (peer, node)
                with socket.create_connection((lab.address(node), servers[node][1]), 2):
                    pass  # the host reaches each node
            lab.cut("a", "b")
            assert not lab.reaches("a", "b", servers["b"][1])
            assert not lab.reaches("b", "a", servers["a"][1])
            assert lab.reaches("a", "c", servers["c"][1])
            assert lab.reaches("c", "b", servers["b"][1])
            lab.heal("a", "b")
            assert lab.reaches("a", "b", servers["b"][1])
            assert lab.reaches("b", "a", servers["a"][1])
            lab.partition(["a"])
            assert not lab.reaches("b", "a", servers["a"][1])
            assert not lab.reaches("c", "a", servers["a"][1])
            assert lab.reaches("b", "c", servers["c"][1])
            lab.heal_all()
            assert lab.reaches("c", "a", servers["a"][1])
        finally:
            for server, _ in servers.values():
                server.close()


def test_should_start_processes_inside_a_node_and_remove_everything_at_the_end() -> None:
    with netlab(["a"]) as lab:
        namespace = lab.namespace("a")
        with lab.inside("a"):
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        pids = subprocess.run(
            ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=True
        ).stdout.split()
        assert str(child.pid) in pids
    assert child.wait(5) != 0  # killed by the lab's end
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert namespace not in names
    links = subprocess.run(["ip", "link", "show"], capture_output=True, text=True).stdout
    assert f"am{lab.run}" not in links
