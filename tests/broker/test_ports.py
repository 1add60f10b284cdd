"""``aeromq.broker.ports.free_ports``: the ports of one call differ and are free, and ``taken``
is kept out and grows; a broker asked for port 0 twice gets two ports."""

from __future__ import annotations

import socket
from pathlib import Path

from aeromq.broker.ports import free_ports
from aeromq.broker.testing import start_broker_process


def test_should_choose_distinct_free_ports_held_together_while_chosen() -> None:
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        ports = free_ports(kind, "127.0.0.1", 64)
        assert len(set(ports)) == 64
        with socket.socket(socket.AF_INET, kind) as again:
            again.bind(("127.0.0.1", ports[0]))  # let go once chosen: free to bind


def test_should_keep_taken_ports_out_and_add_the_chosen_ones() -> None:
    taken = set(free_ports(socket.SOCK_STREAM, "127.0.0.1", 8))
    before = set(taken)
    chosen = free_ports(socket.SOCK_STREAM, "127.0.0.1", 8, taken)
    assert not before & set(chosen) and taken == before | set(chosen)


def test_should_give_a_brokers_grpc_and_rocketmq_endpoints_two_ports(tmp_path: Path) -> None:
    broker = start_broker_process(tmp_path / "data", extra_args=["--ingress-udp-endpoint", "none"])
    try:
        grpc_port = int(broker.ready["grpc"].rsplit(":", 1)[1])
        rocketmq_port = int(broker.ready["rocketmq"].rsplit(":", 1)[1])
        assert grpc_port != rocketmq_port
    finally:
        assert broker.stop() == 0
