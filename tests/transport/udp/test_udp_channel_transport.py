"""UdpChannelTransport: bound sockets, datagrams into one reusable buffer, losses, errors."""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator

import pytest

from aeromq.transport._errors import ChannelEndpointError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.udp.udp_channel import Sockaddr
from aeromq.transport.driver.udp.udp_channel_transport import (
    RECEIVE_BUFFER_LENGTH,
    UdpChannelTransport,
)
from aeromq.transport.testing.loss_generator import LossGenerator
from tests.transport.udp.support import MULTICAST_GROUP, loopback_multicast_works

LOOPBACK = ("127.0.0.1", 0)


@pytest.fixture
def receiver() -> Iterator[UdpChannelTransport]:
    transport = UdpChannelTransport(family=socket.AF_INET, bind_address=LOOPBACK)
    yield transport
    transport.close()


def _collect(transport: UdpChannelTransport, limit: int = 16) -> list[tuple[bytes, Sockaddr]]:
    seen: list[tuple[bytes, Sockaddr]] = []

    def handler(buffer: AtomicBuffer, length: int, address: Sockaddr) -> None:
        seen.append((buffer.get_bytes(0, length), address))

    for _ in range(200):
        transport.poll(handler, limit)
        if seen:
            break
    return seen


def test_should_send_and_receive_into_the_reusable_buffer(receiver: UdpChannelTransport) -> None:
    sender = UdpChannelTransport(
        family=socket.AF_INET, bind_address=LOOPBACK, connect_address=receiver.local_address
    )
    try:
        assert sender.send(memoryview(b"hello")) == 5
        assert sender.send_to(memoryview(b"world"), receiver.local_address) == 5
        seen = _collect(receiver)
        assert [data for data, _ in seen] == [b"hello", b"world"]
        assert seen[0][1] == sender.local_address
        assert receiver.receive_buffer.capacity == RECEIVE_BUFFER_LENGTH
    finally:
        sender.close()


def test_should_stop_at_the_poll_limit(receiver: UdpChannelTransport) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        for i in range(5):
            peer.sendto(bytes([i]), receiver.local_address)
        counts: list[int] = []
        handler = lambda buffer, length, address: counts.append(buffer.get_uint8(0))  # noqa: E731
        for _ in range(200):
            if receiver.poll(handler, 2) or counts:
                break
        assert len(counts) == 2
        for _ in range(200):
            receiver.poll(handler, 16)
            if len(counts) == 5:
                break
        assert counts == [0, 1, 2, 3, 4]
        assert receiver.poll(handler, 16) == 0


def test_should_drop_what_the_loss_generator_chooses() -> None:
    drop_all = LossGenerator(data_loss_rate=1.0)
    transport = UdpChannelTransport(
        family=socket.AF_INET, bind_address=LOOPBACK, loss_generator=drop_all
    )
    try:
        datagram = bytearray(32)
        datagram[6] = 1  # type DATA
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
            peer.sendto(datagram, transport.local_address)
            peer.sendto(b"not a frame", transport.local_address)
        seen: list[bytes] = []
        for _ in range(200):
            transport.poll(lambda b, n, a: seen.append(b.get_bytes(0, n)), 16)
            if seen:
                break
        assert seen == [b"not a frame"]
        assert drop_all.dropped["data"] == 1
    finally:
        transport.close()


def test_should_refuse_an_address_in_use_naming_it(receiver: UdpChannelTransport) -> None:
    with pytest.raises(ChannelEndpointError) as error:
        UdpChannelTransport(
            family=socket.AF_INET, bind_address=receiver.local_address, channel="aeron:udp?x"
        )
    assert error.value.values["address"] == receiver.local_address
    assert error.value.values["channel"] == "aeron:udp?x"


def test_should_report_a_would_block_or_refused_send_as_zero_and_others_as_errors() -> None:
    errors: list[Exception] = []
    transport = UdpChannelTransport(
        family=socket.AF_INET, bind_address=LOOPBACK, error_handler=errors.append
    )
    try:
        blocked = BlockingIOError(errno.EAGAIN, "would block")
        refused = ConnectionRefusedError(errno.ECONNREFUSED, "refused")
        assert transport._send_failed(blocked) == 0
        assert transport._send_failed(refused) == 0
        assert errors == []
        assert transport._send_failed(OSError(errno.EMSGSIZE, "too long")) == -1
        assert isinstance(errors[0], ChannelEndpointError)
        assert transport.send_to(memoryview(bytes(70_000)), ("127.0.0.1", 9)) == -1
        assert len(errors) == 2
    finally:
        transport.close()


def test_should_size_the_socket_buffers() -> None:
    transport = UdpChannelTransport(
        family=socket.AF_INET,
        bind_address=LOOPBACK,
        socket_sndbuf_length=256 * 1024,
        socket_rcvbuf_length=256 * 1024,
    )
    try:
        sndbuf, rcvbuf = transport.socket_buffer_lengths()
        assert sndbuf >= 256 * 1024 and rcvbuf >= 256 * 1024  # Linux doubles the request
    finally:
        transport.close()


@pytest.mark.skipif(not loopback_multicast_works(), reason="loopback does not carry multicast")
def test_should_carry_a_multicast_group_on_loopback() -> None:
    group = (MULTICAST_GROUP, 40711)
    members = [
        UdpChannelTransport(
            family=socket.AF_INET,
            bind_address=group,
            multicast_group=group,
            multicast_interface="127.0.0.1",
        )
        for _ in range(2)
    ]
    sender = UdpChannelTransport(
        family=socket.AF_INET, bind_address=LOOPBACK, multicast_interface="127.0.0.1"
    )
    try:
        assert sender.send_to(memoryview(b"to all"), group) == 6
        for member in members:
            assert [data for data, _ in _collect(member)] == [b"to all"]
    finally:
        for transport in (*members, sender):
            transport.close()
