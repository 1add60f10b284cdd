"""UDP streams end to end in one process: two nodes (a driver's UDP side each) over loopback."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.transport._errors import RegistrationError
from aeromq.transport.command import ErrorCode
from aeromq.transport.driver.system_counters import SystemCounter
from aeromq.transport.driver.udp.network_counters import CHANNEL_STATUS_ACTIVE
from aeromq.transport.driver.udp.network_publication import NetworkPublicationState
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.testing.loss_generator import LossGenerator
from tests.transport.udp.harness import LogReader, LogWriter, Node, pump_until
from tests.transport.udp.support import loopback_multicast_works


@pytest.fixture
def nodes(shm_dir: Path) -> Iterator[tuple[Node, Node]]:
    sender, receiver = Node(shm_dir / "tx"), Node(shm_dir / "rx")
    yield sender, receiver
    sender.close()
    receiver.close()


def _subscribe(node: Node, stream_id: int = 1001, extra: str = "") -> str:
    """Subscribe on an ephemeral port; return the channel a publisher should use."""
    node.add_subscription(f"aeron:udp?endpoint=127.0.0.1:0{extra}", stream_id)
    endpoint = next(iter(node.streams.subscriptions.endpoints.values()))
    return f"aeron:udp?endpoint=127.0.0.1:{endpoint.local_address[1]}|term-length=64k"


def _transfer(
    sender: Node, receiver: Node, channel: str, payloads: list[bytes], timeout_s: float = 20.0
) -> LogReader:
    publication = sender.add_publication(channel)
    pump_until([sender, receiver], lambda: receiver.images(), what="an image")
    image = receiver.images()[-1]
    ready = receiver.available_images[-1]
    reader = LogReader(image.log, receiver.sub_pos(ready.subscriber_position_id))
    writer = LogWriter(publication)
    sent = 0

    def step() -> None:
        nonlocal sent
        while sent < len(payloads) and writer.offer(payloads[sent]):
            sent += 1
        reader.poll(500)

    pump_until(
        [sender, receiver],
        lambda: len(reader.messages) >= len(payloads),
        timeout_s,
        "every message",
        step,
    )
    return reader


def _payloads(count: int, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randint(0, 400)) for _ in range(count)]


def test_should_deliver_every_message_in_order(nodes: tuple[Node, Node]) -> None:
    sender, receiver = nodes
    channel = _subscribe(receiver)
    payloads = _payloads(3000)
    reader = _transfer(sender, receiver, channel, payloads)
    assert reader.messages == payloads
    ready = receiver.available_images[0]
    assert ready.source_identity.startswith("127.0.0.1:")
    assert ready.log_file_name.startswith(receiver.context.images_dir())
    assert sender.counter(SystemCounter.STATUS_MESSAGES_RECEIVED) > 0
    assert receiver.counter(SystemCounter.BYTES_RECEIVED) >= sum(32 + len(p) for p in payloads)
    assert (
        sender.counter(SystemCounter.BYTES_SENT)
        >= receiver.counter(SystemCounter.BYTES_RECEIVED) - 10_000
    )
    assert sender.errors == [] and receiver.errors == []


def test_should_label_the_stream_and_endpoint_counters(nodes: tuple[Node, Node]) -> None:
    sender, receiver = nodes
    channel = _subscribe(receiver)
    _transfer(sender, receiver, channel, _payloads(10))
    labels = {
        sender.counters.get_counter_label(i)
        for i in range(sender.counters.capacity)
        if sender.counters.get_counter_state(i) == 1
    }
    labels |= {
        receiver.counters.get_counter_label(i)
        for i in range(receiver.counters.capacity)
        if receiver.counters.get_counter_state(i) == 1
    }
    for prefix in (
        "snd-pos:",
        "snd-lmt:",
        "snd-bpe:",
        "pub-pos (",
        "pub-lmt:",
        "rcv-hwm:",
        "rcv-pos:",
        "sub-pos:",
        "snd-channel:",
        "rcv-channel:",
        "snd-local-sockaddr:",
        "rcv-local-sockaddr:",
    ):
        assert any(label.startswith(prefix) for label in labels), prefix
    endpoint = next(iter(receiver.streams.subscriptions.endpoints.values()))
    assert endpoint.status.get() == CHANNEL_STATUS_ACTIVE


def test_should_give_stream_counters_the_owners_aerons_driver_gives(
    nodes: tuple[Node, Node],
) -> None:
    # As Aeron 1.53's C driver (checked with pyaeron in tests/interop/): the publishing client
    # owns the snd-* counters, the subscribing client the image's rcv-* counters.
    sender, receiver = nodes
    channel = _subscribe(receiver)
    _transfer(sender, receiver, channel, _payloads(3))
    for node, names in (
        (sender, ("snd-pos", "snd-lmt", "snd-bpe")),
        (receiver, ("rcv-hwm", "rcv-pos")),
    ):
        owners = {
            node.counters.get_counter_label(i).partition(":")[
                0
            ]: node.counters.get_counter_owner_id(i)
            for i in range(node.counters.capacity)
            if node.counters.get_counter_state(i) == 1
            and node.counters.get_counter_label(i).startswith(names)
        }
        assert owners == dict.fromkeys(names, node.client.client_id)


def test_should_recover_lost_data_and_naks(shm_dir: Path) -> None:
    loss = LossGenerator(data_loss_rate=0.1, nak_loss_rate=0.1, seed=5)
    sender = Node(shm_dir / "tx", UdpSettings(loss_generator=loss))
    receiver = Node(shm_dir / "rx", UdpSettings(loss_generator=loss))
    try:
        channel = _subscribe(receiver)
        payloads = _payloads(2000, seed=2)
        reader = _transfer(sender, receiver, channel, payloads, timeout_s=30)
        assert reader.messages == payloads
        assert loss.dropped["data"] > 0 and loss.dropped["nak"] > 0
        assert receiver.counter(SystemCounter.NAK_MESSAGES_SENT) > 0
        assert sender.counter(SystemCounter.NAK_MESSAGES_RECEIVED) > 0
        assert sender.counter(SystemCounter.RETRANSMITS_SENT) > 0
        # Aeron 1.53's per-stream counters (checked with pyaeron in tests/interop/): one
        # stream here, so they agree with the system counters.
        assert _stream_counter(receiver, "rcv-naks-sent") == receiver.counter(
            SystemCounter.NAK_MESSAGES_SENT
        )
        assert _stream_counter(sender, "snd-naks-received") == sender.counter(
            SystemCounter.NAK_MESSAGES_RECEIVED
        )
    finally:
        sender.close()
        receiver.close()


def _stream_counter(node: Node, name: str) -> int:
    (value,) = [
        node.counters.get_counter_value(i)
        for i in range(node.counters.capacity)
        if node.counters.get_counter_state(i) == 1
        and node.counters.get_counter_label(i).startswith(f"{name}: ")
    ]
    return value


def test_should_end_the_stream_and_free_both_sides(shm_dir: Path) -> None:
    sender = Node(shm_dir / "tx")
    receiver = Node(shm_dir / "rx", UdpSettings(image_liveness_timeout_ns=300_000_000))
    try:
        _end_the_stream(sender, receiver)
    finally:
        sender.close()
        receiver.close()


def _end_the_stream(sender: Node, receiver: Node) -> None:
    channel = _subscribe(receiver)
    _transfer(sender, receiver, channel, _payloads(50))
    publication = sender.streams.publications.publications[0]
    image = receiver.images()[0]
    publication.decref()
    pump_until(
        [sender, receiver],
        lambda: receiver.unavailable_images and not sender.streams.publications.publications,
        timeout_s=10,
        what="the end of the stream on both sides",
    )
    assert image.is_end_of_stream
    assert receiver.unavailable_images[0].correlation_id == image.correlation_id
    pump_until([sender, receiver], lambda: not receiver.images(), what="the image freed")
    pump_until(
        [sender, receiver], lambda: not sender.streams.publications.endpoints, what="endpoint"
    )
    assert not os.path.exists(image.log_file_name)
    assert not os.path.exists(publication.log_file_name)
    assert publication.state is NetworkPublicationState.DONE


def test_should_give_a_new_subscription_a_new_image(nodes: tuple[Node, Node]) -> None:
    sender, receiver = nodes
    channel = _subscribe(receiver)
    _transfer(sender, receiver, channel, _payloads(20))
    port = channel.split(":")[2].split("|")[0]
    first_registration = receiver.streams.subscriptions.subscriptions[0].registration_id
    assert receiver.streams.remove_subscription(first_registration)
    pump_until([sender, receiver], lambda: not receiver.images(), timeout_s=10, what="image gone")
    receiver.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}")
    pump_until([sender, receiver], lambda: receiver.images(), timeout_s=10, what="a new image")
    assert len(receiver.available_images) == 2
    new_image = receiver.images()[0]
    assert new_image.correlation_id != receiver.available_images[0].correlation_id


def test_should_share_one_endpoint_per_channel_and_one_concurrent_publication(
    nodes: tuple[Node, Node],
) -> None:
    sender, receiver = nodes
    channel = _subscribe(receiver)
    first = sender.add_publication(channel, exclusive=False)
    second = sender.add_publication(channel.replace("term-length=64k", "mtu=1408"), exclusive=False)
    assert first is second and first.ref_count == 2
    exclusive = sender.add_publication(channel)
    assert exclusive is not first and exclusive.session_id != first.session_id
    assert len(sender.streams.publications.endpoints) == 1
    with pytest.raises(RegistrationError, match="session-id") as error:
        sender.add_publication(channel + f"|session-id={exclusive.session_id}", exclusive=False)
    assert error.value.code == ErrorCode.GENERIC_ERROR


def test_should_refuse_channels_it_cannot_open(nodes: tuple[Node, Node]) -> None:
    sender, receiver = nodes
    channel = _subscribe(receiver)
    port = channel.split(":")[2].split("|")[0]
    with pytest.raises(RegistrationError) as in_use:
        sender.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}")
    assert in_use.value.code == ErrorCode.GENERIC_ERROR
    with pytest.raises(RegistrationError) as mdc:
        sender.add_publication("aeron:udp?control=127.0.0.1:1|control-mode=dynamic")
    assert mdc.value.code == ErrorCode.NOT_SUPPORTED
    with pytest.raises(RegistrationError) as unknown_host:
        sender.add_publication("aeron:udp?endpoint=no-such-host.invalid:1")
    assert unknown_host.value.code == ErrorCode.UNKNOWN_HOST
    with pytest.raises(RegistrationError) as bad_fc:
        sender.add_publication("aeron:udp?endpoint=224.0.1.1:40999|fc=tagged|interface=127.0.0.1")
    assert bad_fc.value.code == ErrorCode.INVALID_CHANNEL


@pytest.mark.skipif(not loopback_multicast_works(), reason="loopback does not carry multicast")
@pytest.mark.parametrize("fc", ["max", "min"])
def test_should_multicast_to_two_receivers(shm_dir: Path, fc: str) -> None:
    sender = Node(shm_dir / "tx")
    receivers = [Node(shm_dir / f"rx{i}") for i in range(2)]
    group = f"aeron:udp?endpoint=224.0.1.83:{40500 + (fc == 'min')}|interface=127.0.0.1"
    try:
        for receiver in receivers:
            receiver.add_subscription(group)
        publication = sender.add_publication(f"{group}|fc={fc}|term-length=64k")
        everyone = [sender, *receivers]
        pump_until(everyone, lambda: all(r.images() for r in receivers), what="images")
        readers = [
            LogReader(r.images()[0].log, r.sub_pos(r.available_images[0].subscriber_position_id))
            for r in receivers
        ]
        writer = LogWriter(publication)
        payloads = _payloads(1500, seed=9)
        sent = 0

        def step() -> None:
            nonlocal sent
            while sent < len(payloads) and writer.offer(payloads[sent]):
                sent += 1
            for reader in readers:
                reader.poll(500)

        pump_until(
            everyone,
            lambda: all(len(r.messages) >= len(payloads) for r in readers),
            20,
            "both receivers",
            step,
        )
        assert all(r.messages == payloads for r in readers)
        if fc == "min":
            assert len(publication.flow_control.receivers) == 2  # type: ignore[attr-defined]
    finally:
        for node in (sender, *receivers):
            node.close()
