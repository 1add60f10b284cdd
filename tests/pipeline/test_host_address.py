"""The UDP response host of the connector's sessions (``pipeline/_host_address.py``): the
loopback toward a broker on the loopback, else this host's address on the way to it (the
standalone cluster's test runs executors on other hosts)."""

from __future__ import annotations

import socket

from aeromq.pipeline._host_address import LOOPBACK, address_toward, response_host


def test_should_answer_on_the_loopback_toward_a_broker_on_the_loopback() -> None:
    assert address_toward("127.0.0.1") == LOOPBACK
    assert response_host("127.0.0.1:8081,10.0.0.1:8081") == LOOPBACK
    assert response_host(()) == LOOPBACK


def test_should_answer_on_an_address_of_this_host_toward_another_one() -> None:
    found = address_toward("192.0.2.1")  # TEST-NET-1: any route will do, nothing is sent
    if found != LOOPBACK:  # a host with a default route: the address it leaves from
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((found, 0))  # one of this host's own
