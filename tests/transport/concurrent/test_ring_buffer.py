from __future__ import annotations

import struct

import pytest

from aeromq.transport import (
    ConfigurationError,
    IndexOutOfBoundsError,
    InvalidMessageTypeError,
    MessageTooLongError,
    TransportStateError,
)
from aeromq.transport.concurrent import (
    INSUFFICIENT_CAPACITY,
    AtomicBuffer,
    ManyToOneRingBuffer,
    OneToOneRingBuffer,
)
from aeromq.transport.concurrent.action import Action
from aeromq.transport.concurrent.ring_buffer_descriptor import (
    CONSUMER_HEARTBEAT_OFFSET,
    HEAD_CACHE_POSITION_OFFSET,
    HEAD_POSITION_OFFSET,
    PADDING_MSG_TYPE_ID,
    TAIL_POSITION_OFFSET,
    TRAILER_LENGTH,
)

RingBuffer = OneToOneRingBuffer | ManyToOneRingBuffer
BOTH = pytest.mark.parametrize("cls", [OneToOneRingBuffer, ManyToOneRingBuffer])


def make(cls: type[RingBuffer], capacity: int = 1024) -> RingBuffer:
    return cls(AtomicBuffer.allocate(capacity + TRAILER_LENGTH))


def drain(ring: RingBuffer, limit: int = 1 << 30) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    ring.read(lambda t, b, i, n: out.append((t, b.get_bytes(i, n))), limit)
    return out


def header(ring: RingBuffer, index: int) -> tuple[int, int]:
    length, type_id = struct.unpack_from("<ii", ring.buffer, index)
    return length, type_id


def trailer(ring: RingBuffer, offset: int) -> int:
    return ring.buffer.get_int64(ring.capacity + offset)


# --- construction --------------------------------------------------------------------------


@BOTH
def test_should_report_capacity_and_max_msg_length(cls: type[RingBuffer]) -> None:
    ring = make(cls, 4096)
    assert (ring.capacity, ring.max_msg_length) == (4096, 512)
    assert ring.buffer.capacity == 4096 + TRAILER_LENGTH


@BOTH
@pytest.mark.parametrize("capacity", [1000, 1536, 3])
def test_should_reject_capacity_not_a_power_of_two(cls: type[RingBuffer], capacity: int) -> None:
    with pytest.raises(ConfigurationError, match=f"capacity={capacity}"):
        make(cls, capacity)


@BOTH
def test_should_reject_a_buffer_that_is_not_8_byte_aligned(cls: type[RingBuffer]) -> None:
    backing = AtomicBuffer.allocate(1024 + TRAILER_LENGTH + 8)
    with pytest.raises(ConfigurationError, match="address="):
        cls(backing.slice(4, 1024 + TRAILER_LENGTH))


# --- write and read --------------------------------------------------------------------------


@BOTH
def test_should_write_and_read_a_record(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    assert ring.write(7, b"hello")
    seen: list[tuple[int, int, int, bytes]] = []

    def handler(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        assert buffer is ring.buffer
        seen.append((msg_type_id, index, length, buffer.get_bytes(index, length)))

    assert ring.read(handler) == 1
    assert seen == [(7, 8, 5, b"hello")]
    assert ring.read(handler) == 0


@BOTH
def test_should_lay_out_records_as_agrona(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    ring.write(3, b"abcdefghij")  # 10 bytes: record 18, aligned 24
    ring.write(4, b"")
    assert header(ring, 0) == (18, 3)
    assert ring.buffer.get_bytes(8, 10) == b"abcdefghij"
    assert header(ring, 24) == (8, 4)
    assert trailer(ring, TAIL_POSITION_OFFSET) == 32
    assert ring.producer_position() == 32
    assert header(ring, 32) == (0, 0)


@BOTH
def test_should_write_a_slice_of_the_source(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    source = bytearray(b"0123456789")
    assert ring.write(1, source, 2, 5)
    assert ring.write(1, memoryview(source), 7)
    assert ring.write(1, AtomicBuffer(bytearray(b"xyz")), 1, 1)
    assert drain(ring) == [(1, b"23456"), (1, b"789"), (1, b"y")]


@BOTH
def test_should_read_up_to_the_message_count_limit(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    for i in range(5):
        ring.write(1, bytes([i]))
    assert drain(ring, 2) == [(1, b"\x00"), (1, b"\x01")]
    assert drain(ring, 2) == [(1, b"\x02"), (1, b"\x03")]
    assert drain(ring) == [(1, b"\x04")]


@BOTH
def test_should_zero_what_it_consumed_and_then_move_the_head(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    ring.write(1, b"x" * 20)
    ring.write(1, b"y" * 20)
    used = ring.producer_position()
    assert drain(ring) == [(1, b"x" * 20), (1, b"y" * 20)]
    assert ring.consumer_position() == used == trailer(ring, HEAD_POSITION_OFFSET)
    assert ring.buffer.get_bytes(0, ring.capacity) == bytes(ring.capacity)


@BOTH
def test_should_move_the_head_past_a_record_whose_handler_raised(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    ring.write(1, b"bad")
    ring.write(1, b"good")

    def handler(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError):
        ring.read(handler)
    assert ring.consumer_position() == 16
    assert drain(ring) == [(1, b"good")]


def test_should_refuse_a_write_when_full_keeping_one_header_spare_one_to_one() -> None:
    ring = make(OneToOneRingBuffer, 64)
    assert ring.write(1, b"a" * 8)  # 16 bytes
    assert ring.write(1, b"a" * 8)
    assert ring.write(1, b"a" * 8)
    assert not ring.write(1, b"a" * 8)  # 16 more would leave no room to pre-zero the next header
    assert ring.write(1, b"")
    assert ring.size() == 56


def test_should_fill_to_the_last_byte_many_to_one() -> None:
    ring = make(ManyToOneRingBuffer, 64)
    for _ in range(4):
        assert ring.write(1, b"a" * 8)
    assert not ring.write(1, b"")
    assert ring.size() == 64
    assert len(drain(ring)) == 4
    assert ring.write(1, b"b" * 8)


@BOTH
def test_should_pad_the_end_and_wrap_to_index_zero(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    for _ in range(7):
        assert ring.write(1, b"a" * 120)  # 128 bytes each
    assert ring.write(1, b"a" * 88)  # 96: the tail is at 992
    assert len(drain(ring)) == 8
    assert ring.write(2, b"b" * 40)  # 48 bytes do not fit in the last 32
    assert header(ring, 992) == (32, PADDING_MSG_TYPE_ID)
    assert header(ring, 0) == (48, 2)
    assert ring.producer_position() == 1024 + 48
    assert drain(ring) == []  # this read ends at the buffer's end, consuming the padding
    assert ring.consumer_position() == 1024
    assert drain(ring) == [(2, b"b" * 40)]


def test_should_pre_zero_the_next_header_at_index_zero_when_a_record_ends_the_buffer() -> None:
    ring = make(OneToOneRingBuffer, 256)
    for _ in range(7):
        assert ring.write(1, b"a" * 24)  # 32 each: the tail is at 224
    assert len(drain(ring)) == 7
    ring.buffer.put_int64(0, -1)  # stale bytes a non-zeroing consumer could have left
    assert ring.write(1, b"b" * 24)  # ends exactly at the end of the buffer
    assert ring.buffer.get_int64(0) == 0
    assert drain(ring) == [(1, b"b" * 24)]


# --- try_claim / commit / abort ------------------------------------------------------------------


@BOTH
def test_should_publish_a_claimed_record_on_commit(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    index = ring.try_claim(9, 4)
    assert index == 8
    assert header(ring, 0) == (-12, 9)
    ring.buffer.put_bytes(index, b"data")
    assert drain(ring) == []
    ring.commit(index)
    assert header(ring, 0) == (12, 9)
    assert drain(ring) == [(9, b"data")]


@BOTH
def test_should_turn_an_aborted_claim_into_padding(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    index = ring.try_claim(9, 4)
    ring.write(1, b"after")
    ring.abort(index)
    assert header(ring, 0) == (12, PADDING_MSG_TYPE_ID)
    assert drain(ring) == [(1, b"after")]


@BOTH
@pytest.mark.parametrize(
    ("first", "second", "word"),
    [
        ("commit", "commit", "committed"),
        ("abort", "commit", "aborted"),
        ("commit", "abort", "committed"),
    ],
)
def test_should_refuse_to_release_a_claim_twice(
    cls: type[RingBuffer], first: str, second: str, word: str
) -> None:
    ring = make(cls)
    index = ring.try_claim(1, 8)
    getattr(ring, first)(index)
    with pytest.raises(TransportStateError, match=f"previously {word}: index={index}"):
        getattr(ring, second)(index)


@BOTH
@pytest.mark.parametrize("index", [-8, 0, 7, 12, 1024 + 8, 1 << 40])
def test_should_reject_a_claim_index_out_of_range(cls: type[RingBuffer], index: int) -> None:
    ring = make(cls)
    with pytest.raises(IndexOutOfBoundsError, match=f"index={index} capacity=1024"):
        ring.commit(index)
    with pytest.raises(IndexOutOfBoundsError, match=f"index={index}"):
        ring.abort(index)


@BOTH
def test_should_answer_insufficient_capacity_to_a_claim_that_does_not_fit(
    cls: type[RingBuffer],
) -> None:
    ring = make(cls, 64)
    claims = 0
    while ring.try_claim(1, 8) != INSUFFICIENT_CAPACITY:
        claims += 1
    # 16 bytes each; one-to-one keeps 8 bytes spare to pre-zero the next header
    assert claims == (3 if cls is OneToOneRingBuffer else 4)
    assert ring.try_claim(1, 0) == (48 + 8 if cls is OneToOneRingBuffer else INSUFFICIENT_CAPACITY)


# --- write_batch ---------------------------------------------------------------------------------


@BOTH
def test_should_write_a_batch_in_order(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    records = [bytes([i]) * i for i in range(10)]
    assert ring.write_batch(5, records) == 10
    assert drain(ring) == [(5, r) for r in records]
    assert ring.write_batch(5, []) == 0


@BOTH
def test_should_write_a_batch_across_the_end_of_the_buffer(cls: type[RingBuffer]) -> None:
    ring = make(cls, 512)
    for _ in range(7):
        assert ring.write(1, b"x" * 56)  # 64 bytes each: the tail is at 448
    assert len(drain(ring)) == 7
    records = [bytes([i]) * 20 for i in range(8)]  # 32 bytes each; 64 left before the end
    assert ring.write_batch(2, records) == 8
    assert drain(ring) + drain(ring) == [(2, r) for r in records]


@BOTH
def test_should_write_as_much_of_a_batch_as_fits(cls: type[RingBuffer]) -> None:
    ring = make(cls, 128)
    written = ring.write_batch(2, [b"z" * 16] * 10)
    assert written == 5  # 24 bytes each
    assert drain(ring) == [(2, b"z" * 16)] * written


@BOTH
def test_should_hold_a_batch_back_until_all_of_it_is_written(cls: type[RingBuffer]) -> None:
    ring = make(cls)

    class Exploding:
        def __len__(self) -> int:
            return 4

    with pytest.raises(TypeError):
        ring.write_batch(1, [b"ok", b"fine", Exploding()])  # type: ignore[list-item]
    assert drain(ring) == []
    assert ring.write(1, b"next")
    assert drain(ring) == [(1, b"next")]


@BOTH
def test_should_leave_nothing_behind_when_the_copy_of_a_write_fails(cls: type[RingBuffer]) -> None:
    ring = make(cls, 128)

    class NotABuffer:
        def __len__(self) -> int:
            return 4

    for _ in range(6):  # through the fast path and the wrap
        with pytest.raises(TypeError):
            ring.write(1, NotABuffer())  # type: ignore[arg-type]
        assert ring.write(1, b"y" * 16)
        assert drain(ring) + drain(ring) == [(1, b"y" * 16)]


# --- bad input -----------------------------------------------------------------------------------


@BOTH
@pytest.mark.parametrize("msg_type_id", [0, -1, 2**31])
def test_should_reject_a_bad_message_type_id_with_its_value(
    cls: type[RingBuffer], msg_type_id: int
) -> None:
    ring = make(cls)
    for call in (
        lambda: ring.write(msg_type_id, b"x"),
        lambda: ring.try_claim(msg_type_id, 1),
        lambda: ring.write_batch(msg_type_id, [b"x"]),
    ):
        with pytest.raises(InvalidMessageTypeError, match=f"msg_type_id={msg_type_id}"):
            call()
    assert ring.producer_position() == 0


@BOTH
def test_should_reject_a_message_over_the_max_length_with_the_values(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    too_long = bytes(129)
    for call in (
        lambda: ring.write(1, too_long),
        lambda: ring.try_claim(1, 129),
        lambda: ring.write_batch(1, [b"", too_long]),
    ):
        with pytest.raises(MessageTooLongError, match="length=129 max_msg_length=128"):
            call()
    assert ring.write(1, bytes(128))


@BOTH
def test_should_reject_a_negative_length_with_its_value(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    with pytest.raises(IndexOutOfBoundsError, match="invalid message length: length=-2"):
        ring.try_claim(1, -2)
    with pytest.raises(IndexOutOfBoundsError, match="length=-5"):
        ring.write(1, b"abc", 0, -5)


@BOTH
@pytest.mark.parametrize(("offset", "length"), [(-1, 2), (2, 5), (4, -1), (0, 7)])
def test_should_reject_a_source_range_out_of_bounds(
    cls: type[RingBuffer], offset: int, length: int
) -> None:
    ring = make(cls)
    with pytest.raises(IndexOutOfBoundsError, match=f"src_offset={offset}") as info:
        ring.write(1, b"abc", offset, length)
    assert info.value.src_length == 3
    assert ring.producer_position() == 0


# --- counters ----------------------------------------------------------------------------------


@BOTH
def test_should_hand_out_consecutive_correlation_ids(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    assert [ring.next_correlation_id() for _ in range(3)] == [0, 1, 2]
    assert cls(ring.buffer).next_correlation_id() == 3


@BOTH
def test_should_store_the_consumer_heartbeat_in_the_trailer(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    assert ring.consumer_heartbeat_time == 0
    ring.consumer_heartbeat_time = 1_700_000_000_123
    assert trailer(ring, CONSUMER_HEARTBEAT_OFFSET) == 1_700_000_000_123
    assert cls(ring.buffer).consumer_heartbeat_time == 1_700_000_000_123
    ring.heartbeat_stamper()(1_700_000_000_456)  # the setter as one call
    assert trailer(ring, CONSUMER_HEARTBEAT_OFFSET) == 1_700_000_000_456


@BOTH
def test_should_report_positions_and_size(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    ring.write(1, b"a" * 10)
    ring.write(1, b"b" * 30)
    assert (ring.producer_position(), ring.consumer_position(), ring.size()) == (64, 0, 64)
    drain(ring, 1)
    assert (ring.producer_position(), ring.consumer_position(), ring.size()) == (64, 24, 40)


@BOTH
def test_should_keep_the_head_cache_in_the_trailer(cls: type[RingBuffer]) -> None:
    ring = make(cls, 64)
    while ring.write(1, b"a" * 8):
        pass
    drain(ring)
    assert ring.write(1, b"a" * 8)  # needed the real head: refreshed the cache
    assert trailer(ring, HEAD_CACHE_POSITION_OFFSET) == ring.consumer_position()


# --- controlled_read ---------------------------------------------------------------------------


@BOTH
@pytest.mark.parametrize(
    ("action", "count", "head_after", "left"),
    [
        # the second of three 16-byte records answers `action`; the others CONTINUE
        (Action.ABORT, 1, 16, [b"1", b"2"]),
        (Action.BREAK, 2, 32, [b"2"]),
        (Action.COMMIT, 3, 48, []),
        (Action.CONTINUE, 3, 48, []),
    ],
)
def test_should_move_the_head_as_the_controlled_handler_says(
    cls: type[RingBuffer], action: Action, count: int, head_after: int, left: list[bytes]
) -> None:
    ring = make(cls)
    for i in range(3):
        ring.write(1, str(i).encode())
    heads_seen: list[int] = []

    def handler(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> Action:
        heads_seen.append(ring.consumer_position())
        return action if buffer.get_bytes(index, length) == b"1" else Action.CONTINUE

    assert ring.controlled_read(handler) == count
    assert ring.consumer_position() == head_after
    assert ring.buffer.get_bytes(0, head_after) == bytes(head_after)  # consumed: zeroed
    assert header(ring, head_after)[0] > 0 or not left  # the rest untouched
    assert [payload for _, payload in drain(ring)] == left
    if action is Action.COMMIT:
        assert heads_seen == [0, 0, 32]  # committed while reading, not only at the end
    else:
        assert heads_seen[:2] == [0, 0]


@BOTH
def test_should_deliver_an_aborted_record_again(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    ring.write(1, b"again")
    calls: list[bytes] = []

    def abort(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> Action:
        calls.append(buffer.get_bytes(index, length))
        return Action.ABORT

    assert ring.controlled_read(abort) == 0
    assert ring.controlled_read(abort) == 0
    assert calls == [b"again", b"again"]
    assert ring.consumer_position() == 0
    assert drain(ring) == [(1, b"again")]


@BOTH
def test_should_consume_padding_before_an_aborted_record(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    ring.abort(ring.try_claim(1, 8))  # 16 bytes of padding
    ring.write(2, b"kept")
    assert ring.controlled_read(lambda *args: Action.ABORT) == 0
    assert ring.consumer_position() == 16  # the padding consumed, the record kept
    assert drain(ring) == [(2, b"kept")]


@BOTH
def test_should_respect_the_limit_in_controlled_read(cls: type[RingBuffer]) -> None:
    ring = make(cls)
    for _ in range(4):
        ring.write(1, b"m")
    assert ring.controlled_read(lambda *args: Action.COMMIT, 3) == 3
    assert ring.consumer_position() == 48


# --- unblock -----------------------------------------------------------------------------------


def test_should_never_unblock_a_one_to_one_ring() -> None:
    ring = make(OneToOneRingBuffer)
    ring.try_claim(1, 8)
    assert not ring.unblock()


def test_should_have_nothing_to_unblock_when_empty() -> None:
    ring = make(ManyToOneRingBuffer)
    assert not ring.unblock()
    ring.write(1, b"x")
    assert not ring.unblock()  # a committed record is not blocked


def test_should_unblock_a_claim_left_negative_by_a_dead_producer() -> None:
    ring = make(ManyToOneRingBuffer)
    ring.try_claim(3, 20)  # never committed: its producer "died"
    ring.write(1, b"behind")
    assert drain(ring) == []
    assert ring.unblock()
    assert header(ring, 0) == (28, PADDING_MSG_TYPE_ID)
    assert drain(ring) == [(1, b"behind")]


def test_should_unblock_a_claim_whose_header_was_never_written() -> None:
    ring = make(ManyToOneRingBuffer)
    buffer = ring.buffer
    # A producer moved the tail by 32 and died before its first store.
    buffer.put_int64(ring.capacity + TAIL_POSITION_OFFSET, 32)
    ring.write(1, b"behind")
    assert drain(ring) == []
    assert ring.unblock()
    assert header(ring, 0) == (32, PADDING_MSG_TYPE_ID)
    assert drain(ring) == [(1, b"behind")]


def test_should_unblock_a_zero_header_only_up_to_the_next_non_zero_word() -> None:
    ring = make(ManyToOneRingBuffer)
    buffer = ring.buffer
    buffer.put_int64(ring.capacity + TAIL_POSITION_OFFSET, 32)
    buffer.put_int32(16, 7)  # a word the dead producer did write
    assert ring.unblock()
    assert header(ring, 0) == (16, PADDING_MSG_TYPE_ID)


def test_should_not_unblock_a_zero_header_with_nothing_after_it() -> None:
    ring = make(ManyToOneRingBuffer)
    ring.buffer.put_int64(ring.capacity + TAIL_POSITION_OFFSET, 8)
    assert not ring.unblock()


def test_should_unblock_a_whole_batch_left_behind() -> None:
    ring = make(ManyToOneRingBuffer)
    # What a producer dying in the middle of write_batch leaves: the run's first header holds
    # the negative length of the whole run; later records may look complete.
    ring.buffer.put_int64(ring.capacity + TAIL_POSITION_OFFSET, 48)
    ring.buffer.put_int32(0, -48)
    ring.buffer.put_int32(4, 1)
    ring.buffer.put_int32(16, 16)
    ring.buffer.put_int32(20, 1)
    ring.write(2, b"next")
    assert ring.unblock()
    assert drain(ring) == [(2, b"next")]


def test_should_read_a_one_to_one_producer_with_a_many_to_one_consumer() -> None:
    producer = make(OneToOneRingBuffer)
    consumer = ManyToOneRingBuffer(producer.buffer)
    for i in range(200):
        assert producer.write(1, bytes([i]) * 30)
        assert drain(consumer) + drain(consumer) == [(1, bytes([i]) * 30)]
