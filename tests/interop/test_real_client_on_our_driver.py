"""A real Aeron client (pyaeron: Aeron 1.53's C client) against aeromq's media driver, over IPC.

The peer connects to our driver's directory, as it would to Aeron's, and publishes to our
subscription or subscribes to our publication; messages longer than one frame are fragmented by
one side and reassembled by the other, and the logs rotate through their terms several times.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.driver import MediaDriver
from aeromq.transport.testing.driver_client import DriverClient

from ._harness import OurReceiver, Peers, publish_plan, wait_until
from .conftest import MS, MTU
from .peers._peer import Plan, Verifier

CHANNEL = "aeron:ipc"
COUNT = 300
MAX_LENGTH = 6000  # up to 5 fragments; the term (64 KiB) takes 8 KiB at most


@pytest.fixture
def errors() -> list[BaseException]:
    return []


@pytest.fixture
def client(our_driver: MediaDriver, errors: list[BaseException]) -> Iterator[Aeron]:
    context = AeronContext(
        aeron_dir=our_driver.aeron_dir, error_handler=errors.append, idle_sleep_duration_ns=MS
    )
    with Aeron.connect(context) as aeron:
        yield aeron


@pytest.mark.parametrize("kind", ["concurrent", "exclusive"])
def test_should_deliver_a_real_clients_messages_to_our_subscription(
    kind: str, our_driver: MediaDriver, client: Aeron, peers: Peers, errors: list[BaseException]
) -> None:
    subscription = client.add_subscription(CHANNEL, 1001)
    flags = ["--exclusive"] if kind == "exclusive" else []
    publisher = peers.start(
        "publisher.py",
        our_driver.aeron_dir,
        CHANNEL,
        1001,
        *("--seed", 11, "--count", COUNT, "--max-length", MAX_LENGTH, "--claim-every", 5),
        *flags,
    )
    session_id = publisher.expect("connected")["session_id"]
    plan = Plan(11, COUNT, MAX_LENGTH)
    OurReceiver(Verifier({1: plan})).drain(subscription, "the real client's messages")
    published = publisher.expect("published")
    fits_a_frame = [length <= MTU - 32 for length in plan.lengths]
    assert published["claims"] == sum(fits_a_frame[::5]) > 0
    image = subscription.image_by_session_id(session_id)
    assert image is not None
    assert image.position == published["position"]

    publisher.send("close")
    closed = publisher.expect("closed")
    wait_until(lambda: image.is_end_of_stream, "the end of the real client's stream")
    assert image.end_of_stream_position == closed["position"]
    assert errors == []


@pytest.mark.parametrize("kind", ["concurrent", "exclusive"])
def test_should_deliver_our_messages_to_a_real_clients_subscription(
    kind: str, our_driver: MediaDriver, client: Aeron, peers: Peers, errors: list[BaseException]
) -> None:
    subscriber = peers.start(
        "subscriber.py",
        our_driver.aeron_dir,
        CHANNEL,
        1002,
        *("--seed", 12, "--count", COUNT, "--max-length", MAX_LENGTH, "--end-of-stream"),
    )
    subscriber.expect("subscribed")
    if kind == "exclusive":
        publication = client.add_exclusive_publication(CHANNEL, 1002)
    else:
        publication = client.add_publication(CHANNEL, 1002)
    wait_until(lambda: publication.is_connected, "the real client's subscription")
    claims = publish_plan(publication, Plan(12, COUNT, MAX_LENGTH), 1, claim_every=3)
    assert claims > 0

    received = subscriber.expect("received")
    assert received["errors"] == []
    assert received["count"] == COUNT
    assert received["session_id"] == publication.session_id
    assert received["position"] == publication.position

    position = publication.position
    publication.close()
    assert subscriber.expect("end_of_stream")["position"] == position
    assert errors == []


def test_should_serve_stream_id_0_to_a_real_client(
    our_driver: MediaDriver, client: Aeron, peers: Peers
) -> None:
    subscription = client.add_subscription(CHANNEL, 0)
    publisher = peers.start(
        "publisher.py",
        our_driver.aeron_dir,
        CHANNEL,
        0,
        *("--seed", 13, "--count", 20, "--max-length", 3 * MTU),
    )
    publisher.expect("connected")
    OurReceiver(Verifier({1: Plan(13, 20, 3 * MTU)})).drain(subscription, "stream 0")
    publisher.expect("published")


def test_should_keep_a_real_client_working_when_our_driver_answers_a_bad_command(
    our_driver: MediaDriver, client: Aeron, peers: Peers, errors: list[BaseException]
) -> None:
    subscriber = peers.start(
        "subscriber.py",
        our_driver.aeron_dir,
        CHANNEL,
        1003,
        *("--seed", 14, "--count", 40, "--max-length", 2 * MTU),
    )
    subscriber.expect("subscribed")
    publication = client.add_publication(CHANNEL, 1003)
    wait_until(lambda: publication.is_connected, "the real client's subscription")
    with DriverClient(our_driver.aeron_dir) as raw:
        raw.send_raw(0x77, bytes(16))  # unknown: our driver answers ON_ERROR, correlation id 0
        raw.await_response(0x0F01, lambda response: True)
    publish_plan(publication, Plan(14, 40, 2 * MTU), 1)
    received = subscriber.expect("received")
    assert (received["count"], received["errors"]) == (40, [])
    assert errors == []
