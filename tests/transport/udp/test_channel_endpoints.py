"""Send and receive channel endpoints: every datagram validated first, then dispatched."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.udp.data_packet_dispatcher import DataPacketDispatcher
from aeromq.transport.driver.udp.receive_channel_endpoint import ReceiveChannelEndpoint
from aeromq.transport.driver.udp.send_channel_endpoint import SendChannelEndpoint
from aeromq.transport.driver.udp.udp_channel import UdpChannel
from aeromq.transport.driver.udp.udp_channel_transport import UdpChannelTransport
from aeromq.transport.protocol import (
    SM_EOS_FLAG,
    SM_SEND_SETUP_FLAG,
    ErrorFlyweight,
    NakFlyweight,
    RttmFlyweight,
    StatusMessageFlyweight,
)
from tests.transport.udp.support import data_frames, setup_frame, system_counters

SOURCE = ("127.0.0.1", 7)


class RecordingPublication:
    def __init__(self, session_id: int, stream_id: int) -> None:
        self.session_id = session_id
        self.stream_id = stream_id
        self.calls: list[tuple[Any, ...]] = []

    def trigger_send_setup(self) -> None:
        self.calls.append(("setup",))

    def on_status_message(self, *args: Any) -> None:
        self.calls.append(("sm", *args))

    def on_nak(self, *args: Any) -> None:
        self.calls.append(("nak", *args))

    def on_rttm(self, *args: Any) -> None:
        self.calls.append(("rttm", *args))


class RecordingCreator:
    def __init__(self) -> None:
        self.requests: list[tuple[Any, ...]] = []

    def create_publication_image(self, *args: Any) -> bool:
        self.requests.append(args)
        return True


@pytest.fixture
def counters() -> SystemCounters:
    return system_counters()[1]


@pytest.fixture
def send_endpoint(counters: SystemCounters) -> Iterator[SendChannelEndpoint]:
    channel = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:9")
    transport = UdpChannelTransport(family=socket.AF_INET, bind_address=("127.0.0.1", 0))
    endpoint = SendChannelEndpoint(
        channel,
        transport,
        status=counters.get(SystemCounter.ERRORS),  # any counter will do here
        invalid_packets=counters.get(SystemCounter.INVALID_PACKETS),
        status_messages_received=counters.get(SystemCounter.STATUS_MESSAGES_RECEIVED),
        naks_received=counters.get(SystemCounter.NAK_MESSAGES_RECEIVED),
        error_frames_received=counters.get(SystemCounter.ERROR_FRAMES_RECEIVED),
    )
    yield endpoint
    transport.close()


@pytest.fixture
def receive_endpoint(
    counters: SystemCounters,
) -> Iterator[tuple[ReceiveChannelEndpoint, RecordingCreator]]:
    channel = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:0")
    transport = UdpChannelTransport(family=socket.AF_INET, bind_address=("127.0.0.1", 0))
    creator = RecordingCreator()
    endpoint = ReceiveChannelEndpoint(
        channel,
        transport,
        DataPacketDispatcher(creator, 1_000_000_000),
        status=counters.get(SystemCounter.ERRORS),
        invalid_packets=counters.get(SystemCounter.INVALID_PACKETS),
        short_sends=counters.get(SystemCounter.SHORT_SENDS),
        receiver_id=1234,
    )
    yield endpoint, creator
    transport.close()


def _status_message(flags: int = 0) -> tuple[AtomicBuffer, int]:
    buffer = AtomicBuffer.allocate(64)
    length = StatusMessageFlyweight(buffer).put_status_message(
        session_id=1,
        stream_id=2,
        consumption_term_id=3,
        consumption_term_offset=64,
        receiver_window=4096,
        receiver_id=99,
        flags=flags,
    )
    return buffer, length


def test_should_dispatch_control_frames_to_their_publication(
    send_endpoint: SendChannelEndpoint, counters: SystemCounters
) -> None:
    publication = RecordingPublication(1, 2)
    send_endpoint.add_publication(publication)
    send_endpoint._now_ns = 77
    buffer, length = _status_message()
    send_endpoint.on_datagram(buffer, length, SOURCE)
    buffer, length = _status_message(SM_SEND_SETUP_FLAG)
    send_endpoint.on_datagram(buffer, length, SOURCE)
    buffer, length = _status_message(SM_EOS_FLAG)
    send_endpoint.on_datagram(buffer, length, SOURCE)
    nak = AtomicBuffer.allocate(64)
    NakFlyweight(nak).put_nak(session_id=1, stream_id=2, term_id=3, term_offset=64, length=128)
    send_endpoint.on_datagram(nak, 28, SOURCE)
    rttm = AtomicBuffer.allocate(64)
    RttmFlyweight(rttm).put_rttm(
        session_id=1,
        stream_id=2,
        echo_timestamp_ns=5,
        reception_delta_ns=0,
        receiver_id=9,
        flags=0x80,
    )
    send_endpoint.on_datagram(rttm, 40, SOURCE)
    error = AtomicBuffer.allocate(128)
    error_length = ErrorFlyweight(error).put_error(
        session_id=1, stream_id=2, receiver_id=9, error_code=1, error_message="bad"
    )
    send_endpoint.on_datagram(error, error_length, SOURCE)
    assert publication.calls == [
        ("sm", 99, 3, 64, 4096, False, 77),
        ("setup",),
        ("sm", 99, 3, 64, 4096, True, 77),
        ("nak", 3, 64, 128, 77),
        ("rttm", True, 5, 9),
    ]
    assert counters.get(SystemCounter.STATUS_MESSAGES_RECEIVED).get() == 3
    assert counters.get(SystemCounter.NAK_MESSAGES_RECEIVED).get() == 1
    assert counters.get(SystemCounter.ERROR_FRAMES_RECEIVED).get() == 1
    send_endpoint.remove_publication(publication)
    send_endpoint.on_datagram(nak, 28, SOURCE)
    assert counters.get(SystemCounter.NAK_MESSAGES_RECEIVED).get() == 1


def test_should_count_invalid_control_frames_and_ignore_other_types(
    send_endpoint: SendChannelEndpoint, counters: SystemCounters
) -> None:
    buffer, length = _status_message()
    send_endpoint.on_datagram(buffer, length - 4, SOURCE)  # truncated
    buffer.put_int8(4, 1)  # wrong version
    send_endpoint.on_datagram(buffer, length, SOURCE)
    data = AtomicBuffer.allocate(256)
    send_endpoint.on_datagram(
        data,
        data_frames(data, session_id=1, stream_id=2, term_id=3, term_offset=0, payloads=[b"x"]),
        SOURCE,
    )
    assert counters.get(SystemCounter.INVALID_PACKETS).get() == 2


def test_should_validate_every_datagram_before_the_dispatcher_sees_it(
    receive_endpoint: tuple[ReceiveChannelEndpoint, RecordingCreator], counters: SystemCounters
) -> None:
    endpoint, creator = receive_endpoint
    endpoint.dispatcher.add_subscription(2)
    buffer = AtomicBuffer.allocate(256)
    setup_length = setup_frame(buffer, session_id=1, stream_id=2)
    endpoint.on_datagram(buffer, setup_length, SOURCE)
    assert len(creator.requests) == 1
    bad = [
        (b"", 0),
        (b"\x00" * 7, 7),
        (b"\x20\x00\x00\x00\x01\xc0\x01\x00" + b"\x00" * 24, 32),  # version 1
        (b"\x20\x00\x00\x00\x00\xc0\x63\x00" + b"\x00" * 24, 32),  # unknown type 0x63
        (b"\x40\x00\x00\x00\x00\xc0\x01\x00" + b"\x00" * 24, 32),  # frame longer than datagram
    ]
    for data, length in bad:
        buffer.put_bytes(0, data + bytes(32))
        endpoint.on_datagram(buffer, length, SOURCE)
    assert counters.get(SystemCounter.INVALID_PACKETS).get() == len(bad)
    buffer2, sm_length = _status_message()
    endpoint.on_datagram(buffer2, sm_length, SOURCE)  # valid, not for a receiver: ignored
    assert counters.get(SystemCounter.INVALID_PACKETS).get() == len(bad)


def test_should_send_status_messages_naks_and_rttms_with_its_receiver_id(
    receive_endpoint: tuple[ReceiveChannelEndpoint, RecordingCreator],
) -> None:
    endpoint, _ = receive_endpoint
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        peer.settimeout(2.0)
        address = peer.getsockname()
        assert endpoint.send_status_message(address, 1, 2, 3, 64, 4096, SM_EOS_FLAG) == 36
        assert endpoint.send_nak(address, 1, 2, 3, 64, 128) == 28
        assert endpoint.send_rttm(address, 1, 2, 55) == 40
        sm = AtomicBuffer.allocate(64)
        sm.put_bytes(0, peer.recv(64))
        flyweight = StatusMessageFlyweight(sm)
        assert (flyweight.receiver_id, flyweight.receiver_window, flyweight.flags) == (
            1234,
            4096,
            SM_EOS_FLAG,
        )
        assert len(peer.recv(64)) == 28
        assert len(peer.recv(64)) == 40
    assert endpoint.control_address_for(SOURCE) == SOURCE


def test_should_count_stream_references(
    receive_endpoint: tuple[ReceiveChannelEndpoint, RecordingCreator],
) -> None:
    endpoint, _ = receive_endpoint
    assert endpoint.incref_to_stream(5) == 1
    assert endpoint.incref_to_stream(5) == 2
    assert endpoint.incref_to_stream_and_session(6, 9) == 1
    assert endpoint.decref_to_stream(5) == 1
    assert endpoint.decref_to_stream(5) == 0
    assert endpoint.has_subscriptions
    assert endpoint.decref_to_stream_and_session(6, 9) == 0
    assert not endpoint.has_subscriptions
