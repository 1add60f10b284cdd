"""aeromq's client against the real Aeron C media driver (pyaeron's, in a peer process), over IPC.

Our client maps the real driver's cnc.dat and log buffers: it publishes (offer, fragmented
messages, ``try_claim``; concurrent and exclusive) to a real client's subscription, reads a real
client's publication with ``controlled_poll`` (ABORT re-delivers, BREAK stops, COMMIT stores the
position), and shares one concurrent publication's log with a real client, each appending and
rotating terms under the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.action import Action
from aeromq.transport.driver import MediaDriver
from aeromq.transport.logbuffer.controlled_fragment_assembler import ControlledFragmentAssembler
from aeromq.transport.logbuffer.header import Header

from ._harness import OurReceiver, Peer, Peers, publish_plan, wait_until
from .conftest import MS
from .peers._peer import Plan, Verifier

CHANNEL = "aeron:ipc"
COUNT = 300
MAX_LENGTH = 6000


@pytest.fixture
def errors() -> list[BaseException]:
    return []


def _connect(aeron_dir: str, errors: list[BaseException]) -> Aeron:
    context = AeronContext(
        aeron_dir=aeron_dir, error_handler=errors.append, idle_sleep_duration_ns=MS
    )
    return Aeron.connect(context)


@pytest.fixture
def client(real_driver: Peer, shm_dir: Path, errors: list[BaseException]) -> Iterator[Aeron]:
    with _connect(str(shm_dir / "aeron"), errors) as aeron:
        yield aeron


@pytest.mark.parametrize("kind", ["concurrent", "exclusive"])
def test_should_deliver_our_messages_through_the_real_driver(
    kind: str, client: Aeron, peers: Peers, errors: list[BaseException]
) -> None:
    subscriber = peers.start(
        "subscriber.py",
        client.context.aeron_dir,
        CHANNEL,
        2001,
        *("--seed", 21, "--count", COUNT, "--max-length", MAX_LENGTH, "--end-of-stream"),
    )
    subscriber.expect("subscribed")
    if kind == "exclusive":
        publication = client.add_exclusive_publication(CHANNEL, 2001)
    else:
        publication = client.add_publication(CHANNEL, 2001)
    wait_until(lambda: publication.is_connected, "the real client's subscription")
    assert publish_plan(publication, Plan(21, COUNT, MAX_LENGTH), 1, claim_every=3) > 0

    received = subscriber.expect("received")
    assert (received["count"], received["errors"]) == (COUNT, [])
    assert received["session_id"] == publication.session_id
    assert received["position"] == publication.position
    position = publication.position
    publication.close()
    assert subscriber.expect("end_of_stream")["position"] == position
    assert errors == []


class _Steering:
    """A controlled handler: ABORTs every 7th message once, BREAKs after every 11th, COMMITs
    every 5th, CONTINUEs otherwise; what it keeps goes to the verifier."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier
        self.seen = 0
        self.aborted: set[int] = set()
        self.actions = dict.fromkeys(Action, 0)

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        index = self.seen
        if index % 7 == 0 and index not in self.aborted:
            self.aborted.add(index)
            action = Action.ABORT
        else:
            self.verifier.on_message(buffer.get_bytes(offset, length))
            self.seen += 1
            if index % 11 == 0:
                action = Action.BREAK
            elif index % 5 == 0:
                action = Action.COMMIT
            else:
                action = Action.CONTINUE
        self.actions[action] += 1
        return action


def test_should_read_a_real_clients_messages_with_controlled_poll(
    client: Aeron, peers: Peers, errors: list[BaseException]
) -> None:
    subscription = client.add_subscription(CHANNEL, 2002)
    publisher = peers.start(
        "publisher.py",
        client.context.aeron_dir,
        CHANNEL,
        2002,
        *("--seed", 22, "--count", COUNT, "--max-length", MAX_LENGTH, "--claim-every", 4),
    )
    session_id = publisher.expect("connected")["session_id"]
    steering = _Steering(Verifier({1: Plan(22, COUNT, MAX_LENGTH)}))
    assembler = ControlledFragmentAssembler(steering)
    wait_until(
        lambda: subscription.controlled_poll(assembler, 10) >= 0 and steering.verifier.done,
        f"the real client's messages: {steering.verifier.summary()}",
        timeout_s=20,
    )
    assert steering.verifier.errors == []
    assert steering.verifier.count == COUNT
    assert steering.actions[Action.ABORT] == len(steering.aborted) == (COUNT + 6) // 7
    assert steering.actions[Action.BREAK] > 0 and steering.actions[Action.COMMIT] > 0
    published = publisher.expect("published")
    image = subscription.image_by_session_id(session_id)
    assert image is not None
    assert image.position == published["position"]

    publisher.send("close")
    closed = publisher.expect("closed")
    wait_until(lambda: image.is_end_of_stream, "the end of the real client's stream")
    assert image.position == closed["position"]
    assert errors == []


@pytest.fixture(params=["real driver", "our driver"])
def any_driver_dir(request: pytest.FixtureRequest, shm_dir: Path) -> str:
    if request.param == "real driver":
        request.getfixturevalue("real_driver")
        return str(shm_dir / "aeron")
    our_driver: MediaDriver = request.getfixturevalue("our_driver")
    return our_driver.aeron_dir


def test_should_share_a_concurrent_publication_with_a_real_client(
    any_driver_dir: str, peers: Peers, errors: list[BaseException]
) -> None:
    with _connect(any_driver_dir, errors) as aeron:
        subscription = aeron.add_subscription(CHANNEL, 2003)
        publication = aeron.add_publication(CHANNEL, 2003)
        publisher = peers.start(
            "publisher.py",
            any_driver_dir,
            CHANNEL,
            2003,
            *("--seed", 23, "--count", COUNT, "--max-length", MAX_LENGTH, "--tag", 1),
            "--wait-for-go",
        )
        assert publisher.expect("connected")["session_id"] == publication.session_id
        plan = Plan(23, COUNT, MAX_LENGTH)
        receiver = OurReceiver(Verifier({1: plan, 2: plan}))
        wait_until(lambda: subscription.image_count == 1, "the shared image")
        image = subscription.images[0]
        publisher.send("go")
        publish_plan(
            publication,
            plan,
            2,
            claim_every=5,
            between=lambda: subscription.poll(receiver.assembler, 20),
        )
        receiver.drain(subscription, "both writers' messages")
        published = publisher.expect("published")
        assert receiver.verifier.next_index == {1: COUNT, 2: COUNT}
        assert image.position == publication.position >= published["position"]
        assert image.position >= 2 * (plan.total_bytes + len(plan) * 32)  # payloads + headers
    assert errors == []
