"""Subscriptions against the fake driver: round-robin polls over images, controlled polls per
image, block polls, assembly across sessions, end of stream."""

from __future__ import annotations

import pytest

from aeromq.transport.client import Aeron, ExclusivePublication, Image, Subscription
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.action import Action
from aeromq.transport.logbuffer import ControlledFragmentAssembler, FragmentAssembler, Header
from aeromq.transport.testing.fake_driver import FakeDriver

from .conftest import wait_for


@pytest.fixture
def subscription(aeron: Aeron) -> Subscription:
    return aeron.add_subscription("aeron:ipc", 2002)


def publications(
    aeron: Aeron, subscription: Subscription, count: int
) -> list[ExclusivePublication]:
    pubs = [aeron.add_exclusive_publication("aeron:ipc", 2002) for _ in range(count)]
    wait_for(lambda: subscription.image_count == count, what=f"{count} images")
    wait_for(lambda: all(p.is_connected for p in pubs), what="connected publications")
    return pubs


def sessions_polled(subscription: Subscription, calls: int, limit: int) -> list[list[int]]:
    seen: list[list[int]] = []
    for _ in range(calls):
        batch: list[int] = []
        seen.append(batch)
        subscription.poll(lambda b, o, n, h, batch=batch: batch.append(h.session_id), limit)
    return seen


def test_should_start_each_poll_one_image_further_round_robin(
    aeron: Aeron, subscription: Subscription
) -> None:
    pubs = publications(aeron, subscription, 3)
    for pub in pubs:
        for _ in range(10):
            pub.offer(b"m")
    order = [image.session_id for image in subscription.images]

    seen = sessions_polled(subscription, 4, 2)
    # start 0: two from image 0; start 1: image 1; start 2: image 2; start 3 -> 0 again
    assert seen == [[order[0]] * 2, [order[1]] * 2, [order[2]] * 2, [order[0]] * 2]


def test_should_share_the_fragment_limit_across_images_in_order(
    aeron: Aeron, subscription: Subscription
) -> None:
    pubs = publications(aeron, subscription, 3)
    for pub in pubs:
        pub.offer(b"one")
        pub.offer(b"two")
    order = [image.session_id for image in subscription.images]

    seen = sessions_polled(subscription, 2, 5)
    assert seen[0] == [order[0], order[0], order[1], order[1], order[2]]
    assert seen[1] == [order[2]]  # starts at image 1 (empty), then 2, then wraps to 0


def test_should_apply_break_and_abort_to_one_image_only(
    aeron: Aeron, subscription: Subscription
) -> None:
    pubs = publications(aeron, subscription, 2)
    for pub in pubs:
        for text in (b"a", b"b", b"c"):
            pub.offer(text)
    first, second = subscription.images
    received: list[tuple[int, bytes]] = []

    def handler(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        payload = buffer.get_bytes(offset, length)
        received.append((header.session_id, payload))
        if header.session_id == first.session_id:
            return Action.BREAK
        return Action.ABORT if payload == b"b" else Action.CONTINUE

    assert subscription.controlled_poll(handler, 10) == 2
    assert received == [
        (first.session_id, b"a"),
        (second.session_id, b"a"),
        (second.session_id, b"b"),
    ]
    assert first.position == 64 and second.position == 64


def test_should_block_poll_every_image(aeron: Aeron, subscription: Subscription) -> None:
    pubs = publications(aeron, subscription, 2)
    for pub in pubs:
        for _ in range(3):
            pub.offer(b"x" * 20)
    blocks: list[tuple[int, int]] = []
    consumed = subscription.block_poll(lambda b, o, n, s, t: blocks.append((s, n)), 4096)
    assert consumed == 2 * 3 * 64
    assert sorted(blocks) == sorted((p.session_id, 192) for p in pubs)


def test_should_assemble_messages_of_interleaved_sessions(
    aeron: Aeron, subscription: Subscription
) -> None:
    pubs = publications(aeron, subscription, 2)
    messages = {pub.session_id: [bytes([i]) * (1500 + 700 * i) for i in range(4)] for pub in pubs}
    for i in range(4):
        for pub in pubs:
            assert pub.offer(messages[pub.session_id][i]) > 0
    received: dict[int, list[bytes]] = {pub.session_id: [] for pub in pubs}
    assembler = FragmentAssembler(
        lambda b, o, n, h: received[h.session_id].append(b.get_bytes(o, n))
    )
    wait_for(
        lambda: (
            subscription.poll(assembler, 1) >= 0 and all(len(v) == 4 for v in received.values())
        ),
        what="every message",
    )
    assert received == messages


def test_should_redeliver_an_aborted_whole_message_through_the_controlled_assembler(
    aeron: Aeron, subscription: Subscription
) -> None:
    (pub,) = publications(aeron, subscription, 1)
    message = bytes(range(256)) * 16
    pub.offer(message)
    pub.offer(b"next")
    attempts: list[bytes] = []

    def handler(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        attempts.append(buffer.get_bytes(offset, length))
        return Action.ABORT if len(attempts) == 1 else Action.CONTINUE

    assembler = ControlledFragmentAssembler(handler)
    assert subscription.controlled_poll(assembler, 10) == 2  # BEGIN + middle; END aborted
    assert subscription.controlled_poll(assembler, 10) == 2  # END again, then b"next"
    assert attempts == [message, message, b"next"]


def test_should_reach_end_of_stream_and_then_lose_the_image(
    aeron: Aeron, subscription: Subscription, driver: FakeDriver
) -> None:
    lost: list[Image] = []
    subscription.unavailable_image_handler = lost.append
    (pub,) = publications(aeron, subscription, 1)
    pub.offer(b"last words")
    image = subscription.images[0]
    pub.close()
    wait_for(lambda: image.end_of_stream_position == 64, what="the end of stream position")
    assert not image.is_end_of_stream
    subscription.poll(lambda *a: None, 10)
    assert image.is_end_of_stream
    wait_for(lambda: lost == [image], what="the image to go")
    assert subscription.image_count == 0 and not subscription.is_connected
    assert image.is_closed and image.is_end_of_stream


def test_should_find_images_by_session_and_report_connection(
    aeron: Aeron, subscription: Subscription
) -> None:
    assert not subscription.is_connected and subscription.has_no_images
    pubs = publications(aeron, subscription, 2)
    for pub in pubs:
        image = subscription.image_by_session_id(pub.session_id)
        assert image is not None and image.session_id == pub.session_id
        assert image.join_position == 0
    assert subscription.image_by_session_id(12345) is None
    assert subscription.is_connected
    assert subscription.image_at_index(0) is subscription.images[0]


def test_should_join_a_stream_at_its_current_position(
    aeron: Aeron, subscription: Subscription
) -> None:
    (pub,) = publications(aeron, subscription, 1)
    for _ in range(3):
        pub.offer(b"before")
    late = aeron.add_subscription("aeron:ipc", 2002)
    wait_for(lambda: late.image_count == 1, what="the late image")
    assert late.images[0].join_position == 3 * 64
    pub.offer(b"after")
    received: list[bytes] = []
    wait_for(
        lambda: late.poll(lambda b, o, n, h: received.append(b.get_bytes(o, n)), 10) > 0,
        what="the message after joining",
    )
    assert received == [b"after"]


def test_should_close_its_images_and_tell_the_handler(
    aeron: Aeron, subscription: Subscription
) -> None:
    lost: list[Image] = []
    subscription.unavailable_image_handler = lost.append
    publications(aeron, subscription, 2)
    images = subscription.images
    subscription.close()
    assert subscription.is_closed and subscription.image_count == 0
    assert lost == list(images) and all(image.is_closed for image in images)
    assert subscription.poll(lambda *a: None, 10) == 0


def test_should_poll_images_that_join_after_a_caller_took_the_poll_method(
    aeron: Aeron, subscription: Subscription
) -> None:
    poll, controlled_poll = subscription.poll, subscription.controlled_poll  # before any image
    first = publications(aeron, subscription, 1)[0]
    first.offer(b"one")
    read: list[bytes] = []
    assert poll(lambda b, o, n, h: read.append(b.get_bytes(o, n)), 10) == 1

    second = aeron.add_exclusive_publication("aeron:ipc", 2002)  # one image -> two
    wait_for(lambda: subscription.image_count == 2, what="2 images")
    wait_for(lambda: second.is_connected, what="a connected publication")
    first.offer(b"two")
    second.offer(b"three")

    def take(b: AtomicBuffer, o: int, n: int, h: Header) -> Action:
        read.append(b.get_bytes(o, n))
        return Action.CONTINUE

    assert controlled_poll(take, 10) == 2
    assert sorted(read) == [b"one", b"three", b"two"]
