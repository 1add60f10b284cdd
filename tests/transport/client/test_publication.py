"""Publications against the fake driver: every offer result, fragmentation, claims, vectored
and batched offers, reserved values; concurrent and exclusive alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from aeromq.transport import ConfigurationError, MessageTooLongError
from aeromq.transport.client import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    Aeron,
    ConcurrentPublication,
    ExclusivePublication,
    Subscription,
)
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import BufferClaim, DirectBufferVector, FragmentAssembler, Header
from aeromq.transport.logbuffer import log_buffer_descriptor as d
from aeromq.transport.logbuffer.frame_descriptor import HDR_TYPE_PAD
from aeromq.transport.testing.fake_driver import FakeDriver

from .conftest import wait_for

Pub = ConcurrentPublication | ExclusivePublication


@pytest.fixture(params=["concurrent", "exclusive"])
def add(request: pytest.FixtureRequest, aeron: Aeron) -> Callable[[str], Pub]:
    if request.param == "concurrent":
        return lambda channel: aeron.add_publication(channel, 1001)
    return lambda channel: aeron.add_exclusive_publication(channel, 1001)


@pytest.fixture
def subscription(aeron: Aeron) -> Iterator[Subscription]:
    subscription = aeron.add_subscription("aeron:ipc", 1001)
    yield subscription


class Frames:
    """Records (payload, flags, reserved value) of each fragment."""

    def __init__(self) -> None:
        self.frames: list[tuple[bytes, int, int]] = []

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        self.frames.append((buffer.get_bytes(offset, length), header.flags, header.reserved_value))

    @property
    def payloads(self) -> list[bytes]:
        return [payload for payload, _, _ in self.frames]


def drain(subscription: Subscription, handler: Callable[..., None], expected: int) -> None:
    count = [0]

    def poll() -> bool:
        count[0] += subscription.poll(handler, 100)
        return count[0] >= expected

    wait_for(poll, what=f"{expected} fragments")


def connected(
    add: Callable[[str], Pub], subscription: Subscription, channel: str = "aeron:ipc"
) -> Pub:
    publication = add(channel)
    wait_for(lambda: publication.is_connected, what="the publication to connect")
    return publication


def test_should_not_append_while_no_subscriber_is_connected(add: Callable[[str], Pub]) -> None:
    publication = add("aeron:ipc")
    assert publication.offer(b"nobody listens") == NOT_CONNECTED
    assert publication.try_claim(10, BufferClaim()) == NOT_CONNECTED
    assert publication.offer_vectored([b"a", b"b"]) == NOT_CONNECTED
    assert publication.offer_batch([b"a"] * 3) == NOT_CONNECTED
    assert publication.position == 0
    assert not publication.is_connected


def test_should_offer_and_return_the_new_position(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    assert publication.offer(b"x" * 20) == 64
    assert publication.offer(bytearray(b"y" * 32)) == 128
    assert publication.offer(memoryview(b"..zz..")[2:4]) == 192
    assert publication.offer(AtomicBuffer(bytearray(b"0123456789")), 2, 3) == 256
    assert publication.position == 256
    frames = Frames()
    drain(subscription, frames, 4)
    assert frames.payloads == [b"x" * 20, b"y" * 32, b"zz", b"234"]


def test_should_refuse_a_region_outside_the_buffer_without_appending(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    with pytest.raises(ConfigurationError, match="outside its buffer") as info:
        publication.offer(b"abc", 2, 5)
    assert (info.value.offset, info.value.length, info.value.capacity) == (2, 5, 3)
    assert publication.position == 0


def test_should_be_back_pressured_at_the_position_limit(
    add: Callable[[str], Pub], subscription: Subscription, driver: FakeDriver
) -> None:
    publication = connected(add, subscription)
    driver.freeze_limit(publication.original_registration_id, 100)
    assert publication.position_limit == 100
    assert publication.offer(b"a" * 20) == 64
    assert publication.offer(b"b" * 20) == 128  # starts at 64, below the limit
    assert publication.offer(b"c" * 20) == BACK_PRESSURED
    assert publication.try_claim(8, BufferClaim()) == BACK_PRESSURED
    assert publication.available_window == 100 - 128
    driver.unfreeze_limit(publication.original_registration_id)
    frames = Frames()
    drain(subscription, frames, 2)
    wait_for(lambda: publication.offer(b"c" * 20) > 0, what="the limit to move")


def test_should_return_admin_action_when_the_term_rotates(
    add: Callable[[str], Pub], subscription: Subscription, driver: FakeDriver
) -> None:
    publication = connected(add, subscription)
    driver.freeze_limit(publication.original_registration_id, 1 << 40)
    message = b"m" * 1000  # 1056 bytes of term: 62 fit in 64 KiB
    results = [publication.offer(message) for _ in range(62)]
    assert results[-1] == 62 * 1056
    assert publication.offer(message) == ADMIN_ACTION
    assert publication.offer(message) == 64 * 1024 + 1056
    frames = Frames()
    drain(subscription, frames, 63)
    assert frames.payloads == [message] * 63


def test_should_report_the_end_of_the_stream_at_the_max_position(
    add: Callable[[str], Pub], subscription: Subscription, driver: FakeDriver
) -> None:
    last_term = (1 << 31) - 1
    publication = connected(
        add, subscription, f"aeron:ipc?init-term-id=0|term-id={last_term}|term-offset=65024"
    )
    driver.freeze_limit(publication.original_registration_id, 1 << 62)
    assert publication.position == last_term * 65536 + 65024
    assert publication.offer(b"x" * 400) == last_term * 65536 + 65024 + 448
    assert publication.offer(b"x" * 400) == MAX_POSITION_EXCEEDED
    assert publication.max_possible_position == 65536 << 31


def test_should_fragment_a_message_longer_than_the_max_payload(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    message = bytes(range(256)) * 12  # 3072 bytes: 1376 + 1376 + 320
    expected_length = 2 * 1408 + 352
    assert publication.offer(message) == expected_length
    frames = Frames()
    drain(subscription, frames, 3)
    assert [flags for _, flags, _ in frames.frames] == [0x80, 0x00, 0x40]
    assert b"".join(frames.payloads) == message
    assert [len(p) for p in frames.payloads] == [1376, 1376, 320]


def test_should_refuse_a_message_longer_than_the_max_message_length(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    assert publication.max_message_length == 64 * 1024 // 8
    with pytest.raises(MessageTooLongError) as info:
        publication.offer(bytes(8193))
    assert (info.value.length, info.value.max_message_length) == (8193, 8192)
    assert publication.offer(bytes(8192)) > 0


def test_should_claim_write_in_place_and_commit(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    claim = BufferClaim()
    assert publication.try_claim(12, claim) == 64
    claim.buffer.put_bytes(claim.offset, b"hello claims")
    claim.reserved_value = 77
    claim.commit()
    frames = Frames()
    drain(subscription, frames, 1)
    assert frames.frames == [(b"hello claims", 0xC0, 77)]


def test_should_skip_an_aborted_claim(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    claim = BufferClaim()
    assert publication.try_claim(40, claim) == 96
    claim.abort()
    assert publication.offer(b"after") == 160
    frames = Frames()
    drain(subscription, frames, 1)
    assert frames.payloads == [b"after"]
    assert subscription.images[0].position == 160


def test_should_refuse_a_claim_longer_than_the_max_payload(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    with pytest.raises(MessageTooLongError) as info:
        publication.try_claim(1377, BufferClaim())
    assert info.value.max_payload_length == 1376
    with pytest.raises(ConfigurationError, match="negative"):
        publication.try_claim(-1, BufferClaim())


def test_should_gather_a_vectored_offer_into_one_message(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    header = b"HDR:"
    body = bytearray(b"..the body..")
    assert publication.offer_vectored([header, DirectBufferVector(body, 2, 8)]) == 64
    big = [bytes([i]) * 1000 for i in range(3)]
    assert publication.offer_vectored(big) > 64
    frames = Frames()
    assembled: list[bytes] = []
    assembler = FragmentAssembler(lambda b, o, n, h: assembled.append(b.get_bytes(o, n)))
    drain(subscription, lambda *a: (frames(*a), assembler(*a)), 4)
    assert assembled == [b"HDR:the body", b"".join(big)]


def test_should_put_the_supplied_reserved_value_in_each_frame(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    calls: list[tuple[int, int]] = []

    def supplier(term_buffer: AtomicBuffer, frame_offset: int, frame_length: int) -> int:
        calls.append((frame_offset, frame_length))
        return 1_000_000 + frame_length

    publication.offer(b"a" * 10, reserved_value_supplier=supplier)
    publication.offer(b"b" * 2000, reserved_value_supplier=supplier)
    publication.offer_vectored([b"c", b"d"], reserved_value_supplier=supplier)
    frames = Frames()
    drain(subscription, frames, 4)
    assert [reserved for _, _, reserved in frames.frames] == [
        1_000_042,
        1_000_000 + 1408,
        1_000_000 + 32 + 624,
        1_000_034,
    ]
    assert calls[0] == (0, 42)


def test_should_close_and_then_answer_closed(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    publication.close()
    publication.close()
    assert publication.is_closed and not publication.is_connected
    assert publication.offer(b"x") == CLOSED
    assert publication.try_claim(1, BufferClaim()) == CLOSED
    assert publication.offer_vectored([b"x"]) == CLOSED
    assert publication.offer_batch([b"x"]) == CLOSED
    assert publication.position == CLOSED
    assert publication.position_limit == CLOSED


# --------------------------------------------------------------------------------------------
# Batches


@pytest.mark.parametrize("size", [0, 1, 20, 64, 100, 1376])
def test_should_offer_a_uniform_batch_as_if_one_by_one(
    add: Callable[[str], Pub], subscription: Subscription, driver: FakeDriver, size: int
) -> None:
    publication = connected(add, subscription)
    driver.freeze_limit(publication.original_registration_id, 1 << 40)
    messages = [bytes([i % 251]) * size for i in range(40)]
    assert publication.offer_batch(messages) == 40
    aligned = (size + 32 + 31) & -32
    assert publication.position == 40 * aligned
    frames = Frames()
    drain(subscription, frames, 40)
    assert frames.payloads == messages
    assert {flags for _, flags, _ in frames.frames} == {0xC0}


def test_should_offer_a_mixed_batch_and_a_long_message_alone(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    messages: list[bytes | bytearray | memoryview] = [b"one", bytearray(b"two"), b"3" * 700]
    messages += [b"L" * 3000, memoryview(b"after long")]
    assert publication.offer_batch(messages) == 3
    assert publication.offer_batch(messages, start=3) == 1
    assert publication.offer_batch(messages, start=4) == 1
    assert publication.offer_batch(messages, start=5) == 0
    assembled: list[bytes] = []
    drain(
        subscription,
        FragmentAssembler(lambda b, o, n, h: assembled.append(b.get_bytes(o, n))),
        7,
    )
    assert assembled == [bytes(m) for m in messages]


def test_should_stop_a_batch_at_the_position_limit(
    add: Callable[[str], Pub], subscription: Subscription, driver: FakeDriver
) -> None:
    publication = connected(add, subscription)
    driver.freeze_limit(publication.original_registration_id, 64 * 50 + 1)
    messages = [b"%20d" % i for i in range(100)]
    assert publication.offer_batch(messages) == 51  # the 51st starts at 3200 < 3201
    assert publication.offer_batch(messages, start=51) == BACK_PRESSURED
    assert publication.offer_batch(messages[:5], count=2) == BACK_PRESSURED


def test_should_fill_the_term_then_rotate_in_batches(
    add: Callable[[str], Pub], subscription: Subscription, driver: FakeDriver
) -> None:
    publication = connected(add, subscription)
    driver.freeze_limit(publication.original_registration_id, 1 << 40)
    messages = [b"%60d" % i for i in range(1100)]  # 96-byte frames: 682 fill 65472 bytes
    sent = 0
    results = []
    while sent < len(messages):
        result = publication.offer_batch(messages, start=sent, count=300)
        results.append(result)
        if result > 0:
            sent += result
    assert ADMIN_ACTION in results
    assert publication.position == 64 * 1024 + (1100 - 682) * 96
    frames = Frames()
    drain(subscription, frames, 1100)
    assert frames.payloads == messages


def test_should_supply_reserved_values_to_each_frame_of_a_batch(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    offsets: list[int] = []

    def supplier(term_buffer: AtomicBuffer, frame_offset: int, frame_length: int) -> int:
        offsets.append(frame_offset)
        return frame_offset * 10

    assert publication.offer_batch([b"a" * 8] * 40, reserved_value_supplier=supplier) == 40
    frames = Frames()
    drain(subscription, frames, 40)
    assert [reserved for _, _, reserved in frames.frames] == [i * 64 * 10 for i in range(40)]
    assert offsets == [i * 64 for i in range(40)]


def test_should_keep_each_threads_messages_intact_and_in_order_on_a_shared_publication(
    aeron: Aeron, subscription: Subscription
) -> None:
    import threading

    from . import workers

    publication = aeron.add_publication("aeron:ipc", 1001)
    wait_for(lambda: publication.is_connected, what="the connection")
    count = 150

    def send(sender: int) -> None:
        lengths = workers.sizes(sender, count, 2000)
        messages = [workers.message(sender, i, n) for i, n in enumerate(lengths)]
        i = 0
        while i < count:
            if sender % 2:
                result = publication.offer(messages[i])
                i += result > 0
            else:
                result = publication.offer_batch(messages, start=i, count=7)
                i += max(result, 0)

    threads = [threading.Thread(target=send, args=(sender,)) for sender in range(4)]
    for thread in threads:
        thread.start()
    checker = workers.Checker()
    assembler = FragmentAssembler(checker)
    wait_for(
        lambda: subscription.poll(assembler, 100) >= 0 and checker.count == 4 * count,
        timeout_s=30,
        what="every thread's messages",
    )
    for thread in threads:
        thread.join(10)
    assert checker.errors == []
    assert checker.next_sequence == dict.fromkeys(range(4), count)


@pytest.mark.parametrize("count", [10, 40])  # the frame loop, and the vectorised build
def test_should_write_batch_frames_byte_for_byte_as_aeron_lays_them_out(
    add: Callable[[str], Pub], subscription: Subscription, count: int
) -> None:
    import struct

    publication = connected(add, subscription)
    messages = [bytes([65 + i % 26]) * 20 for i in range(count)]
    assert publication.offer_batch(messages) == count
    meta = publication.log_buffers.meta_data_buffer
    term_id = meta.get_int64(0) >> 32  # partition 0 is active: the log starts at term 0
    term = publication.log_buffers.term_buffers[0]
    for i, message in enumerate(messages):
        expected = struct.pack(
            "<iBBhiiiiq", 52, 0, 0xC0, 1, 64 * i, publication.session_id, 1001, term_id, 0
        )
        assert term.get_bytes(64 * i, 64) == expected + message + bytes(12), f"frame {i}"
    assert term.get_int64(64 * count) == 0


def test_should_refuse_a_non_contiguous_buffer_before_appending(
    add: Callable[[str], Pub], subscription: Subscription
) -> None:
    publication = connected(add, subscription)
    with pytest.raises(ConfigurationError, match="not contiguous"):
        publication.offer(memoryview(b"abcdef")[::2])
    assert publication.position == 0
    assert publication.offer(memoryview(bytearray(b"abcdef")).cast("B", (2, 3))) == 64


@pytest.mark.parametrize("batched", [False, True], ids=["offer", "offer_batch"])
def test_should_pad_what_a_writer_delayed_past_a_full_rotation_got_and_offer_again(
    aeron: Aeron, subscription: Subscription, driver: FakeDriver, batched: bool
) -> None:
    """Another process filled three terms while this writer sat between reading the tail and
    reserving its space: the reservation lands in a later term of the same partition. The space
    is padded there (no reader waits on it for the unblock timeout) and the offer reports
    ADMIN_ACTION, as the term appenders do; the next offer appends after the padding. It raised
    "action possibly delayed" before, and a shared-publication stream test of a loaded CI run
    lost its publisher to it."""
    publication = connected(lambda channel: aeron.add_publication(channel, 1001), subscription)
    driver.freeze_limit(publication.original_registration_id, 1 << 40)
    meta = publication._meta
    count = d.active_term_count(meta)
    index = count % d.PARTITION_COUNT
    later_term_id = (d.raw_tail_volatile(meta, index) >> 32) + d.PARTITION_COUNT

    class LogWentRound:
        """The log buffer's metadata, moved round by three terms just before the reservation."""

        def __getattr__(self, name: str) -> object:
            return getattr(meta, name)

        def get_and_add_int64(self, offset: int, delta: int) -> int:
            publication._meta = meta  # once
            d.set_raw_tail(meta, index, d.pack_tail(later_term_id, 640))
            d.set_active_term_count_ordered(meta, count + d.PARTITION_COUNT)
            return meta.get_and_add_int64(offset, delta)

    publication._meta = LogWentRound()  # type: ignore[assignment]
    late = b"late" * 10
    if batched:
        assert publication.offer_batch([late, late]) == ADMIN_ACTION
        reserved = 2 * 96
    else:
        assert publication.offer(late) == ADMIN_ACTION
        reserved = 96
    term = publication._term_buffers[index]
    assert term.get_int32(640) == reserved  # one padding frame over the whole reservation
    assert term.get_int16(640 + 6) == HDR_TYPE_PAD
    assert term.get_int32(640 + 20) == later_term_id
    assert publication.offer(b"on time") > 0
    assert term.get_int32(640 + reserved) == 32 + 7
    assert term.get_int32(640 + reserved + 20) == later_term_id
