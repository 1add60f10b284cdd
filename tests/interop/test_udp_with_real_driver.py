"""UDP between aeromq's media driver and the real Aeron C driver (pyaeron's), both directions.

Each driver runs with its own directory; the streams cross 127.0.0.1 as Aeron's wire protocol
(SETUP, DATA, status messages, NAKs, heartbeats). Messages longer than one frame are fragmented
by the sending driver's client and reassembled by the receiving one's; when the publisher
closes, the subscriber's image reaches the end of the stream.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.transport.client import Aeron, AeronContext, Image
from aeromq.transport.cnc import CncFile
from aeromq.transport.concurrent.counters_reader import CountersReader
from aeromq.transport.driver import MediaDriver, SystemCounter
from aeromq.transport.testing.loss_generator import LossGenerator

from ._harness import OurReceiver, Peer, Peers, free_udp_port, publish_plan, wait_until
from .conftest import MS, our_driver_context
from .peers._peer import Plan, Verifier

COUNT = 300
MAX_LENGTH = 6000
NAKS_SENT = SystemCounter.NAK_MESSAGES_SENT
NAKS_RECEIVED = SystemCounter.NAK_MESSAGES_RECEIVED
RETRANSMITS_SENT = SystemCounter.RETRANSMITS_SENT


@pytest.fixture
def errors() -> list[BaseException]:
    return []


def _connect(aeron_dir: str, errors: list[BaseException]) -> Aeron:
    context = AeronContext(
        aeron_dir=aeron_dir, error_handler=errors.append, idle_sleep_duration_ns=MS
    )
    return Aeron.connect(context)


@pytest.fixture
def client(our_driver: MediaDriver, errors: list[BaseException]) -> Iterator[Aeron]:
    with _connect(our_driver.aeron_dir, errors) as aeron:
        yield aeron


@pytest.mark.parametrize("kind", ["concurrent", "exclusive"])
def test_should_send_from_our_driver_to_the_real_driver(
    kind: str,
    client: Aeron,
    real_driver: Peer,
    peers: Peers,
    shm_dir: Path,
    errors: list[BaseException],
) -> None:
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    subscriber = peers.start(
        "subscriber.py",
        shm_dir / "aeron",
        channel,
        3001,
        *("--seed", 31, "--count", COUNT, "--max-length", MAX_LENGTH, "--end-of-stream"),
    )
    subscriber.expect("subscribed")
    if kind == "exclusive":
        publication = client.add_exclusive_publication(channel, 3001)
    else:
        publication = client.add_publication(channel, 3001)
    wait_until(lambda: publication.is_connected, "the real driver's status messages")
    assert subscriber.expect("image")["session_id"] == publication.session_id
    assert publish_plan(publication, Plan(31, COUNT, MAX_LENGTH), 1, claim_every=3) > 0

    received = subscriber.expect("received")
    assert (received["count"], received["errors"]) == (COUNT, [])
    assert received["position"] == publication.position
    position = publication.position
    publication.close()
    assert subscriber.expect("end_of_stream")["position"] == position
    assert errors == []


def test_should_receive_from_the_real_driver_in_our_driver(
    client: Aeron, real_driver: Peer, peers: Peers, shm_dir: Path, errors: list[BaseException]
) -> None:
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    unavailable: list[Image] = []
    subscription = client.add_subscription(channel, 3002, None, unavailable.append)
    publisher = peers.start(
        "publisher.py",
        shm_dir / "aeron",
        channel,
        3002,
        *("--seed", 32, "--count", COUNT, "--max-length", MAX_LENGTH, "--claim-every", 4),
    )
    session_id = publisher.expect("connected")["session_id"]
    OurReceiver(Verifier({1: Plan(32, COUNT, MAX_LENGTH)})).drain(
        subscription, "the real driver's stream"
    )
    published = publisher.expect("published")
    image = subscription.image_by_session_id(session_id)
    assert image is not None
    assert image.position == published["position"]
    assert image.source_identity.startswith("127.0.0.1:")

    publisher.send("close")
    closed = publisher.expect("closed")
    wait_until(lambda: image.is_end_of_stream, "the end of the real driver's stream")
    assert image.position == closed["position"]
    wait_until(lambda: unavailable == [image], "the image to go away", timeout_s=20)
    assert errors == []


def test_should_recover_the_real_drivers_data_lost_on_the_way_with_naks(
    real_driver: Peer, peers: Peers, shm_dir: Path, errors: list[BaseException]
) -> None:
    loss = LossGenerator(data_loss_rate=0.1, seed=33)
    base = our_driver_context(shm_dir / "aeromq")
    context = dataclasses.replace(base, udp=dataclasses.replace(base.udp, loss_generator=loss))
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    with MediaDriver.launch(context) as driver, _connect(driver.aeron_dir, errors) as aeron:
        subscription = aeron.add_subscription(channel, 3003)
        publisher = peers.start(
            "publisher.py",
            shm_dir / "aeron",
            channel,
            3003,
            *("--seed", 33, "--count", COUNT, "--max-length", MAX_LENGTH),
        )
        publisher.expect("connected")
        OurReceiver(Verifier({1: Plan(33, COUNT, MAX_LENGTH)})).drain(
            subscription, "the real driver's stream through 10% loss"
        )
        publisher.expect("published")
        assert loss.dropped["data"] > 0
        assert _system_counter(driver.aeron_dir, NAKS_SENT) > 0
    assert _system_counter(str(shm_dir / "aeron"), NAKS_RECEIVED) > 0
    assert _system_counter(str(shm_dir / "aeron"), RETRANSMITS_SENT) > 0
    assert errors == []


def _system_counter(aeron_dir: str, counter_id: int) -> int:
    with CncFile.map(aeron_dir, timeout_ms=5_000) as cnc:
        reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
        return reader.get_counter_value(counter_id)
