"""DatagramReader (``transport/driver/udp/_datagram.c``, and its Python version
``PyDatagramReader``, held to the same behaviour): a UDP socket's non-blocking read that returns
None when empty, and the transport's poll over it."""

from __future__ import annotations

import errno
import select
import socket
import sys
from collections.abc import Iterator
from types import FrameType

import pytest

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.udp.datagram_reader import (
    NATIVE_DATAGRAM_READER,
    DatagramReader,
    PyDatagramReader,
)
from aeromq.transport.driver.udp.udp_channel import Sockaddr
from aeromq.transport.driver.udp.udp_channel_transport import UdpChannelTransport

READERS = pytest.mark.parametrize(
    "reader_type",
    [
        pytest.param(
            DatagramReader,
            id="native",
            marks=pytest.mark.skipif(not NATIVE_DATAGRAM_READER, reason="_datagram not built"),
        ),
        pytest.param(PyDatagramReader, id="python"),
    ],
)
Reader = type[DatagramReader] | type[PyDatagramReader]


def _pair(family: socket.AddressFamily, host: str) -> tuple[socket.socket, socket.socket]:
    receiver = socket.socket(family, socket.SOCK_DGRAM)
    receiver.bind((host, 0))
    receiver.setblocking(False)
    sender = socket.socket(family, socket.SOCK_DGRAM)
    sender.bind((host, 0))
    return receiver, sender


def _readable(sock: socket.socket) -> None:
    ready, _, _ = select.select([sock], [], [], 5.0)
    assert ready, "the datagram did not arrive within 5 s"


@pytest.fixture
def ipv4() -> Iterator[tuple[socket.socket, socket.socket]]:
    receiver, sender = _pair(socket.AF_INET, "127.0.0.1")
    yield receiver, sender
    receiver.close()
    sender.close()


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


@READERS
def test_should_return_none_for_an_empty_socket_and_take_a_datagram_sent_after(
    ipv4: tuple[socket.socket, socket.socket], reader_type: Reader
) -> None:
    receiver, sender = ipv4
    buffer = AtomicBuffer.allocate(1024)
    reader = reader_type(receiver.fileno(), buffer)
    assert reader.read() is None
    assert reader.read() is None
    sender.sendto(b"after", receiver.getsockname())
    _readable(receiver)
    assert reader.read() == (5, sender.getsockname())
    assert buffer.get_bytes(0, 5) == b"after"
    assert reader.read() is None


@pytest.mark.parametrize("family", [socket.AF_INET, socket.AF_INET6])
@READERS
def test_should_name_the_source_as_the_socket_module_does(
    family: socket.AddressFamily, reader_type: Reader
) -> None:
    if family == socket.AF_INET6 and not _ipv6_loopback():
        pytest.skip("no IPv6 loopback")
    receiver, sender = _pair(family, "127.0.0.1" if family == socket.AF_INET else "::1")
    try:
        reader = reader_type(receiver.fileno(), AtomicBuffer.allocate(64))
        sender.sendto(b"one", receiver.getsockname())
        sender.sendto(b"two", receiver.getsockname())
        _readable(receiver)
        first = reader.read()
        assert first is not None
        sender.sendto(b"three", receiver.getsockname())
        _readable(receiver)
        second = reader.read()
        assert second is not None
        _readable(receiver)
        expected = receiver.recvfrom(64)
        assert expected == (b"three", first[1])
        assert first[1] == sender.getsockname()
        assert second[1] is first[1]  # the same source: the same tuple
    finally:
        receiver.close()
        sender.close()


@READERS
def test_should_cut_a_datagram_longer_than_the_buffer(
    ipv4: tuple[socket.socket, socket.socket], reader_type: Reader
) -> None:
    receiver, sender = ipv4
    buffer = AtomicBuffer.allocate(8)
    reader = reader_type(receiver.fileno(), buffer)
    sender.sendto(b"0123456789", receiver.getsockname())
    _readable(receiver)
    assert reader.read() == (8, sender.getsockname())
    assert buffer.get_bytes(0, 8) == b"01234567"


@READERS
def test_should_raise_the_errors_subclass_for_a_refused_send_and_ebadf_once_released(
    reader_type: Reader,
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as closed:
        closed.bind(("127.0.0.1", 0))
        gone = closed.getsockname()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.connect(gone)
        reader = reader_type(sock.fileno(), AtomicBuffer.allocate(64))
        sock.send(b"to no one")  # loopback answers with ICMP port unreachable
        error: BaseException | None = None
        for _ in range(100):
            try:
                if reader.read() is None:
                    select.select([sock], [], [], 0.05)
                    continue
            except ConnectionRefusedError as refused:
                error = refused
                break
        assert isinstance(error, ConnectionRefusedError)
        assert reader.read() is None  # reported once, then the socket is empty again
        reader.release()
        reader.release()
        with pytest.raises(OSError) as released:
            reader.read()
        assert released.value.errno == errno.EBADF


@READERS
def test_should_refuse_a_negative_descriptor_and_a_read_only_buffer(reader_type: Reader) -> None:
    with pytest.raises(ValueError, match="fd must be >= 0"):
        reader_type(-1, AtomicBuffer.allocate(8))
    with pytest.raises(BufferError):
        reader_type(0, b"read only")


@pytest.mark.skipif(not NATIVE_DATAGRAM_READER, reason="the Python reads raise inside")
def test_should_poll_an_empty_socket_without_raising_and_take_what_comes_after() -> None:
    transport = UdpChannelTransport(family=socket.AF_INET, bind_address=("127.0.0.1", 0))
    raised: list[str] = []

    def trace(frame: FrameType, event: str, arg: object) -> object:
        if event == "exception":
            raised.append(repr(arg))
        return trace

    seen: list[tuple[bytes, Sockaddr]] = []

    def handler(buffer: AtomicBuffer, length: int, address: Sockaddr) -> None:
        seen.append((buffer.get_bytes(0, length), address))

    try:
        sys.settrace(trace)
        try:
            empty = transport.poll(handler, 16)
        finally:
            sys.settrace(None)
        assert (empty, seen, raised) == (0, [], [])
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
            peer.bind(("127.0.0.1", 0))
            peer.sendto(b"late", transport.local_address)
            _readable(transport.socket)
            assert transport.poll(handler, 16) == 4
            assert seen == [(b"late", peer.getsockname())]
    finally:
        transport.close()


def test_should_report_a_poll_after_close_to_the_error_handler() -> None:
    errors: list[Exception] = []
    transport = UdpChannelTransport(
        family=socket.AF_INET, bind_address=("127.0.0.1", 0), error_handler=errors.append
    )
    transport.close()
    assert transport.poll(lambda buffer, length, address: None, 16) == 0
    assert len(errors) == 1
    assert "errno=9" in str(errors[0])
