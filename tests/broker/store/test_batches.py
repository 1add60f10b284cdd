"""The store on record batches: ``put_batch`` appends a producer's batch as it came, and
``get_batches`` returns the stored bytes of the batches that hold the wanted records."""

from __future__ import annotations

import struct
import tempfile
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.broker import BrokerStateError, CorruptRecordError
from aeromq.broker.store import (
    FlushMode,
    GetMessageResult,
    GetMessageStatus,
    MessageStore,
    PutMessageResult,
    PutMessageStatus,
    decode_message_id,
    pack_host,
)
from aeromq.broker.store._batch_codec import batch_keys
from aeromq.broker.store._message import index_keys
from aeromq.broker.store._reader import MessageReader
from aeromq.common import encode_properties, tag_hash_code
from aeromq.common.record_batch import (
    BASE_PHYSICAL_OFFSET_OFFSET,
    BASE_QUEUE_OFFSET_OFFSET,
    FIXED_HEADER_LENGTH,
    MAGIC_OFFSET,
    QUEUE_ID_OFFSET,
    RECORD_COUNT_OFFSET,
    TOTAL_LENGTH_OFFSET,
    RecordBatch,
    batch_header_length,
    check_batch,
    encode_batch,
    read_total_length,
)

from .conftest import small_config

OpenStore = Callable[..., MessageStore]
TOPIC = "TopicA"


def _batch(
    count: int,
    body_size: int = 100,
    tags: list[str | None] | None = None,
    properties: list[dict[str, str]] | None = None,
    **fields: int,
) -> bytearray:
    bodies = [bytes([65 + i % 26]) * body_size for i in range(count)]
    encoded = [encode_properties(p) for p in properties] if properties is not None else None
    return encode_batch(TOPIC.encode(), bodies, tags, encoded, **fields)  # type: ignore[arg-type]


def _batches(result: GetMessageResult) -> list[RecordBatch]:
    """The batches of a get's ``data``, each checked whole (framing and CRC)."""
    found = []
    position = 0
    while position < len(result.data):
        length, _magic = read_total_length(result.data, position)
        view = memoryview(result.data)[position : position + length]
        assert check_batch(view, check_content=False)[0] == 0
        found.append(RecordBatch(view))
        position += length
    assert len(found) == result.batch_count
    return found


def test_should_store_a_batch_and_patch_its_broker_fields(open_store: OpenStore) -> None:
    store = open_store()
    assert store.put_batch(_batch(2), TOPIC, 1).ok  # queue 1 first: offsets are per queue
    data = _batch(5, tags=["a", None, "b", "a", None], born_timestamp_ms=1234)
    result = store.put_batch(bytes(data), TOPIC, 0)
    assert result.status is PutMessageStatus.PUT_OK
    assert (result.queue_offset, result.message_count, result.wrote_bytes) == (0, 5, len(data))
    assert result.store_host == pack_host(store.config.store_host)
    base = result.physical_offset
    assert result.physical_offsets == [base + i for i in range(5)]
    assert [decode_message_id(m)[1] for m in result.message_ids] == result.physical_offsets
    again = store.put_batch(data, TOPIC, 0)
    assert (again.queue_offset, again.physical_offset) == (5, base + len(data))

    stored = _batches(store.get_batches(TOPIC, 0, 0, max_count=5))
    assert len(stored) == 1
    batch = stored[0]
    assert bytes(batch.buffer)[44:] == bytes(data)[44:]  # the producer's bytes and CRC
    assert (batch.base_queue_offset, batch.base_physical_offset) == (0, base)
    assert (batch.queue_id, batch.store_host) == (0, result.store_host)
    assert batch.store_timestamp_ms == result.store_timestamp_ms
    assert batch.base_born_timestamp_ms == 1234


def test_should_write_one_consume_queue_entry_per_record_pointing_at_the_batch(
    open_store: OpenStore,
) -> None:
    store = open_store()  # 16 entries a file: this batch crosses into the second file
    store.put_batch(_batch(10), TOPIC, 0)
    tags = [f"t{i % 3}" if i % 4 else None for i in range(20)]
    result = store.put_batch(_batch(20, tags=tags), TOPIC, 0)
    queue = store.queues.get(TOPIC, 0)
    assert queue is not None and queue.max_offset == 30
    assert len(queue.files.files) == 2
    entries = [queue.entry(offset) for offset in range(10, 30)]
    assert entries == [
        (result.physical_offset, result.wrote_bytes, tag_hash_code(tag) if tag else 0)
        for tag in tags
    ]


def test_should_refuse_a_batch_that_would_harm_the_store(open_store: OpenStore) -> None:
    store = open_store()
    illegal = PutMessageStatus.MESSAGE_ILLEGAL
    good = _batch(2)
    bad_magic = bytearray(good)
    bad_magic[4] ^= 0xFF
    assert store.put_batch(bad_magic, TOPIC, 0).status is illegal
    assert store.put_batch(good + b"x", TOPIC, 0).status is illegal  # total length != length
    assert store.put_batch(good[:60], TOPIC, 0).status is illegal
    assert store.put_batch(good, "TopicB", 0).status is illegal  # another topic's bytes
    assert store.put_batch(good, "bad topic!", 0).status is illegal
    assert store.put_batch(good, TOPIC, -1).status is illegal
    assert store.put_batch(good, TOPIC, 1 << 31).status is illegal
    empty = bytearray(good)
    struct.pack_into("<i", empty, 48, 0)  # no records
    assert store.put_batch(empty, TOPIC, 0).status is illegal
    many = bytearray(good)
    struct.pack_into("<i", many, 48, 1000)  # columns past the end
    assert store.put_batch(many, TOPIC, 0).status is illegal
    too_long = _batch(1, body_size=store.config.max_record_bytes)
    assert store.put_batch(too_long, TOPIC, 0).status is illegal
    assert store.get_max_offset(TOPIC, 0) == 0 and store.max_physical_offset == 0
    assert store.put_batch(memoryview(good), TOPIC, 0).ok


def test_should_acknowledge_a_sync_batch_once_durable(open_store: OpenStore) -> None:
    store = open_store(flush_mode=FlushMode.SYNC)
    result = store.put_batch(_batch(3), TOPIC, 0)
    assert result.ok
    assert store.flushed_physical_offset >= result.physical_offset + result.wrote_bytes
    done = threading.Event()
    outcomes: list[PutMessageResult] = []

    def callback(outcome: PutMessageResult) -> None:
        outcomes.append(outcome)
        done.set()

    pending = store.put_batch_async(_batch(4), TOPIC, 0, callback)
    assert done.wait(5)
    assert outcomes == [pending] and pending.ok and pending.queue_offset == 3
    assert store.flushed_physical_offset >= pending.physical_offset + pending.wrote_bytes
    refused: list[PutMessageResult] = []
    bad = store.put_batch_async(b"\x00" * 100, TOPIC, 0, refused.append)
    assert refused == [bad] and bad.status is PutMessageStatus.MESSAGE_ILLEGAL


def test_should_return_whole_batches_once_in_order(open_store: OpenStore) -> None:
    store = open_store()
    for count in (4, 4, 4):
        store.put_batch(_batch(count), TOPIC, 0)
    result = store.get_batches(TOPIC, 0, 2, max_count=5)  # from inside the first batch
    assert result.status is GetMessageStatus.FOUND
    batches = _batches(result)
    assert [b.base_queue_offset for b in batches] == [0, 4]
    assert (result.message_count, result.next_begin_offset) == (5, 7)  # 2, 3, 4, 5, 6
    assert result.buffer_total_size == len(result.data) == sum(b.length for b in batches)
    assert result.messages == []  # nothing decoded
    rest = store.get_batches(TOPIC, 0, 7)  # the second batch again, then the third
    assert [b.base_queue_offset for b in _batches(rest)] == [4, 8]
    assert (rest.message_count, rest.next_begin_offset) == (5, 12)


def test_should_cap_by_batch_bytes_but_return_at_least_one_batch(
    open_store: OpenStore,
) -> None:
    store = open_store()
    lengths = [store.put_batch(_batch(3), TOPIC, 0).wrote_bytes for _ in range(4)]
    two = store.get_batches(TOPIC, 0, 0, max_bytes=2 * lengths[0])
    assert (two.batch_count, two.message_count, two.next_begin_offset) == (2, 6, 6)
    tiny = store.get_batches(TOPIC, 0, 4, max_bytes=1)
    assert (tiny.batch_count, tiny.message_count, tiny.next_begin_offset) == (1, 2, 6)
    just_over = store.get_batches(TOPIC, 0, 0, max_bytes=2 * lengths[0] - 1)
    assert (just_over.batch_count, just_over.next_begin_offset) == (1, 3)


def test_should_filter_batches_by_the_tag_hashes_of_their_records(
    open_store: OpenStore,
) -> None:
    store = open_store()
    store.put_batch(_batch(3, tags=["a", "a", "a"]), TOPIC, 0)  # 0-2: no b
    store.put_batch(_batch(3, tags=["a", "b", "a"]), TOPIC, 0)  # 3-5: b at 4
    store.put_batch(_batch(2, tags=["b", "b"]), TOPIC, 0)  # 6-7
    wanted = {tag_hash_code("b")}
    result = store.get_batches(TOPIC, 0, 0, tag_hashes=wanted)
    assert [b.base_queue_offset for b in _batches(result)] == [3, 6]
    assert (result.message_count, result.next_begin_offset) == (3, 8)
    capped = store.get_batches(TOPIC, 0, 0, max_count=2, tag_hashes=wanted)
    assert (capped.batch_count, capped.message_count, capped.next_begin_offset) == (2, 2, 7)
    none = store.get_batches(TOPIC, 0, 0, tag_hashes={tag_hash_code("c")})
    assert none.status is GetMessageStatus.NO_MATCHED_MSG
    assert (none.data, none.batch_count, none.next_begin_offset) == (b"", 0, 8)
    decoded = store.get_messages(TOPIC, 0, 0, tag_hashes=wanted)
    assert [m.queue_offset for m in decoded.messages] == [4, 6, 7]
    assert all(m.tags == "b" for m in decoded.messages)


def test_should_skip_a_batch_whose_header_disagrees_with_its_entry(
    open_store: OpenStore,
) -> None:
    store = open_store()
    results = [store.put_batch(_batch(2), TOPIC, 0) for _ in range(3)]
    victim = results[1].physical_offset
    segment = store.commit_log.files.find(victim)
    assert segment is not None
    struct.pack_into("<i", segment.mm, victim - segment.start_offset + QUEUE_ID_OFFSET, 9)
    result = store.get_batches(TOPIC, 0, 0)
    assert [b.base_queue_offset for b in _batches(result)] == [0, 4]
    assert (result.message_count, result.next_begin_offset) == (4, 6)
    (error,) = result.corrupt
    assert isinstance(error, CorruptRecordError)
    assert (error.physical_offset, error.queue_offset) == (victim, 2)  # type: ignore[attr-defined]
    assert "check='BAD_QUEUE_ID'" in str(error)
    assert store.corrupt_records_seen == 1
    alone = store.get_batches(TOPIC, 0, 2, max_count=1)  # one entry a window: reported once
    assert [b.base_queue_offset for b in _batches(alone)] == [4]
    assert (alone.message_count, alone.next_begin_offset, len(alone.corrupt)) == (1, 5, 1)


@pytest.mark.parametrize(
    ("field_offset", "value", "check"),
    [
        (FIXED_HEADER_LENGTH + 1, b"X", "BAD_TOPIC"),  # a topic byte
        (MAGIC_OFFSET, b"\x00\x00\x00\x00", "BAD_MAGIC"),
        (BASE_QUEUE_OFFSET_OFFSET, struct.pack("<q", 3), "BAD_QUEUE_OFFSET"),
    ],
)
def test_should_report_a_bad_header_in_the_middle_of_a_whole_window(
    open_store: OpenStore, field_offset: int, value: bytes, check: str
) -> None:
    # an unfiltered get's first window is checked all at once: one bad header among many
    # sends the get the per-batch way, which skips and reports just that batch
    store = open_store()
    results = [store.put_batch(_batch(2), TOPIC, 0) for _ in range(6)]
    victim = results[3].physical_offset
    segment = store.commit_log.files.find(victim)
    assert segment is not None
    at = victim - segment.start_offset + field_offset
    segment.mm[at : at + len(value)] = value
    result = store.get_batches(TOPIC, 0, 0, max_count=64)
    assert [b.base_queue_offset for b in _batches(result)] == [0, 2, 4, 8, 10]
    assert (result.message_count, result.next_begin_offset) == (10, 12)
    (error,) = result.corrupt
    assert f"check='{check}'" in str(error)
    clean = store.get_batches(TOPIC, 0, 8, max_count=64)  # past it: the whole-window way
    assert [b.base_queue_offset for b in _batches(clean)] == [8, 10] and not clean.corrupt


def test_should_look_up_each_record_of_a_batch_by_its_offset(open_store: OpenStore) -> None:
    store = open_store()
    first = store.put_batch(_batch(3), TOPIC, 0)
    properties = [{"KEYS": f"k{i}", "colour": "red"} for i in range(4)]
    tags: list[str | None] = ["x", None, "y", None]
    data = _batch(4, body_size=10, tags=tags, properties=properties, attributes=0x12, flags=[7] * 4)
    result = store.put_batch(data, TOPIC, 2)
    for i in range(4):
        message = store.look_message_by_offset(result.physical_offset + i)
        assert (message.queue_id, message.queue_offset) == (2, i)
        assert message.physical_offset == result.physical_offset + i
        assert message.body == bytes([65 + i]) * 10 and message.body_crc == zlib.crc32(message.body)
        expected = dict(properties[i])
        if tags[i] is not None:
            expected["TAGS"] = tags[i]  # type: ignore[assignment]
        assert message.properties == expected
        assert (message.sys_flag, message.flag) == (0x12, 7)
        assert message.store_size == RecordBatch(data).record_size(i)
        assert message.message_id == result.message_ids[i]
        assert store.query_message_by_id(result.message_ids[i]).body == message.body
    assert store.look_message_by_offset(first.physical_offset + 2).queue_offset == 2
    with pytest.raises(CorruptRecordError, match="no record at this offset"):
        store.look_message_by_offset(result.physical_offset + 4)  # inside the batch's bytes
    with pytest.raises(CorruptRecordError, match="no record at this offset"):
        store.look_message_by_offset(store.max_physical_offset)
    (keyed,) = store.query_messages_by_key(TOPIC, "k2")
    assert keyed.physical_offset == result.physical_offset + 2


def test_should_store_without_the_index_when_it_is_off(open_store: OpenStore) -> None:
    store = open_store(index_enabled=False)
    properties = [{"KEYS": "k"}]
    result = store.put_batch(_batch(1, properties=properties), TOPIC, 0)
    assert result.ok and store.look_message_by_offset(result.physical_offset).keys == ["k"]
    with pytest.raises(BrokerStateError, match="index is disabled"):
        store.query_messages_by_key(TOPIC, "k")


def _reference(
    entries: list[tuple[int, int, int]],
    offset: int,
    max_count: int,
    max_bytes: int,
    wanted: set[int] | None,
    scan_limit: int,
) -> tuple[list[int], int, int]:
    """RocketMQ's ``getMessage`` walk, one entry at a time, bytes counted per batch:
    (batch offsets taken, wanted entries taken, next begin offset)."""
    taken = total = 0
    batches: list[int] = []
    next_begin = offset
    for queue_offset in range(offset, min(len(entries), offset + max(scan_limit, max_count))):
        if taken and taken >= max_count:
            break
        position, size, tag = entries[queue_offset]
        if wanted is not None and tag not in wanted:
            next_begin = queue_offset + 1
            continue
        if not batches or batches[-1] != position:
            if taken and total + size > max_bytes:
                break
            batches.append(position)
            total += size
        taken += 1
        next_begin = queue_offset + 1
    return batches, taken, next_begin


@settings(max_examples=40, deadline=None)
@given(
    shapes=st.lists(
        st.lists(st.sampled_from([None, "a", "b"]), min_size=1, max_size=12),
        min_size=1,
        max_size=25,
    ),
    queries=st.lists(
        st.tuples(
            st.integers(0, 10_000),
            st.integers(1, 40),
            st.integers(1, 6000),
            st.sampled_from([None, ("a",), ("a", "b"), ("c",)]),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_should_answer_gets_as_rocketmq_walks_entries_counting_batch_bytes(
    shapes: list[list[str | None]],
    queries: list[tuple[int, int, int, tuple[str, ...] | None]],
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        config = small_config(Path(directory), max_filter_scan_entries=20)
        with MessageStore(config) as store:  # 16 entries a consume-queue file
            entries: list[tuple[int, int, int]] = []
            for tags in shapes:
                result = store.put_batch(_batch(len(tags), 40, tags=tags), TOPIC, 0)
                assert result.ok
                entries += [
                    (result.physical_offset, result.wrote_bytes, tag_hash_code(t) if t else 0)
                    for t in tags
                ]
            sizes = dict((position, size) for position, size, _tag in entries)
            for start, max_count, max_bytes, names in queries:
                offset = start % len(entries)
                wanted = {tag_hash_code(n) for n in names} if names is not None else None
                unbounded = _reference(entries, offset, max_count, 1 << 30, wanted, 20)[0]
                if len(unbounded) > 2 and start % 2:  # exactly two batches' bytes: a boundary
                    max_bytes = sizes[unbounded[0]] + sizes[unbounded[1]]
                got = store.get_batches(TOPIC, 0, offset, max_count, max_bytes, wanted)
                batches, taken, next_begin = _reference(
                    entries, offset, max_count, max_bytes, wanted, 20
                )
                assert [b.base_physical_offset for b in _batches(got)] == batches
                assert (got.message_count, got.next_begin_offset) == (taken, next_begin)
                expected = GetMessageStatus.FOUND if taken else GetMessageStatus.NO_MATCHED_MSG
                assert got.status is expected and not got.corrupt
                decoded = store.get_messages(TOPIC, 0, offset, max_count, max_bytes, wanted)
                assert len(decoded.messages) == taken
                assert all(offset <= m.queue_offset < next_begin for m in decoded.messages)


_HEADER_FIELDS = {  # a header field of a stored batch, and a value that breaks it
    "total_length": (TOTAL_LENGTH_OFFSET, struct.pack("<i", 7)),
    "magic": (MAGIC_OFFSET, b"\x00\x00\x00\x00"),
    "base_queue_offset": (BASE_QUEUE_OFFSET_OFFSET, struct.pack("<q", 1 << 40)),
    "base_physical_offset": (BASE_PHYSICAL_OFFSET_OFFSET, struct.pack("<q", 3)),
    "queue_id": (QUEUE_ID_OFFSET, struct.pack("<i", 9)),
    "count": (RECORD_COUNT_OFFSET, struct.pack("<i", 0)),
    "topic": (FIXED_HEADER_LENGTH, b"X"),
}


@settings(max_examples=80, deadline=None)
@given(
    counts=st.lists(st.integers(1, 16), min_size=1, max_size=12),
    start=st.integers(0, 130),
    window=st.integers(1, 140),
    max_bytes=st.integers(1, 12_000),
    corrupt=st.one_of(
        st.none(), st.tuples(st.integers(0, 9), st.sampled_from(sorted(_HEADER_FIELDS)))
    ),
)
def test_should_take_a_gets_first_window_in_c_as_the_numpy_steps_do(
    counts: list[int],
    start: int,
    window: int,
    max_bytes: int,
    corrupt: tuple[int, str] | None,
) -> None:
    # the broker's unfiltered get checks its first window in one C pass (``take``); the numpy
    # steps are the reference: the same batches, counts and refusals
    with tempfile.TemporaryDirectory() as directory:
        # 16 KiB segments: a window may reach into the next one (the C pass then refuses)
        store = MessageStore(small_config(Path(directory)))
        store.start()
        try:
            results = [store.put_batch(_batch(n, body_size=60), TOPIC, 0) for n in counts]
            if corrupt is not None:
                victim = results[corrupt[0] % len(results)].physical_offset
                segment = store.commit_log.files.find(victim)
                assert segment is not None
                field_offset, value = _HEADER_FIELDS[corrupt[1]]
                at = victim - segment.start_offset + field_offset
                segment.mm[at : at + len(value)] = value
            queue = store.queues.get(TOPIC, 0)
            assert queue is not None
            start = min(start, queue.max_offset - 1)
            entries = queue.entries(start, window)
            find = store.commit_log.files.find
            taken: list[list[memoryview]] = [[], []]
            answers = [
                take(find, entries, TOPIC.encode(), 0, start, max_bytes, pieces)
                for take, pieces in zip(
                    (MessageReader._take_checked, MessageReader._take_checked_py),
                    taken,
                    strict=True,
                )
            ]
            # equal refusals too: a corrupt header, or a window reaching the next segment
            assert answers[0] == answers[1]
            assert [bytes(p) for p in taken[0]] == [bytes(p) for p in taken[1]]
            for pieces in taken:
                for piece in pieces:
                    piece.release()
        finally:
            store.shutdown()


@pytest.mark.parametrize("slack", [-1, 0, 1])
def test_should_take_batches_up_to_exactly_the_byte_cap_in_c_and_in_numpy(
    open_store: OpenStore, slack: int
) -> None:
    store = open_store()
    results = [store.put_batch(_batch(3), TOPIC, 0) for _ in range(4)]
    two = results[2].physical_offset - results[0].physical_offset  # the first two batches
    queue = store.queues.get(TOPIC, 0)
    assert queue is not None
    entries = queue.entries(0, 12)
    find = store.commit_log.files.find
    for take in (MessageReader._take_checked, MessageReader._take_checked_py):
        pieces: list[memoryview] = []
        taken = take(find, entries, TOPIC.encode(), 0, 0, two + slack, pieces)
        batches = 1 if slack < 0 else 2  # within the cap; the first always
        assert taken is not None
        assert taken[0] == 3 * batches and taken[3] is True and len(pieces) == batches
        for piece in pieces:
            piece.release()


@pytest.mark.parametrize(
    "properties",
    [
        {"UNIQ_KEY": "U1"},
        {"WAIT": "true", "UNIQ_KEY": "U2"},
        {"KEYS": "a b", "UNIQ_KEY": "U3"},
        {"KEYS": "k"},
        {"color": "red"},
        {},
    ],
)
def test_should_find_a_one_record_batchs_keys_as_the_walk_of_a_larger_batch_does(
    properties: dict[str, str],
) -> None:
    one = _batch(1, properties=[properties])
    two = _batch(2, properties=[properties, properties])
    expected = index_keys(properties)
    assert batch_keys(memoryview(one), 1, batch_header_length(len(TOPIC))) == (
        [(0, expected)] if expected else []
    )
    assert batch_keys(memoryview(two), 2, batch_header_length(len(TOPIC)))[:1] == (
        [(0, expected)] if expected else []
    )


def _views_get(
    store: MessageStore, offset: int, **kwargs: object
) -> tuple[GetMessageResult, list[bytes]]:
    """A pull path's get (views of the commit log), with the bytes copied out and the views
    let go."""
    views: list[memoryview] = []
    result = store.get_batches(TOPIC, 0, offset, into=views, **kwargs)  # type: ignore[arg-type]
    copied = [bytes(view) for view in views]
    for view in views:
        view.release()
    return result, copied


def _fields(result: GetMessageResult) -> tuple[object, ...]:
    return (
        result.status,
        result.next_begin_offset,
        result.min_offset,
        result.max_offset,
        result.batch_count,
        result.message_count,
    )


def test_should_read_the_batch_put_last_straight_as_the_general_path_does(
    open_store: OpenStore,
) -> None:
    store = open_store()  # 16 KiB segments: the puts roll several
    straight_reads = 0
    for i in range(400):
        put = store.put_batch(_batch(1, body_size=90), TOPIC, 0)
        queue = store.queues.get(TOPIC, 0)
        assert queue is not None
        if queue.last_batch is None:  # a topic's first put, a new file: the general put's
            assert i == 0 or put.physical_offset % (16 * 1024) == 0 or put.queue_offset % 16 == 0
        else:  # the one-record put's
            assert queue.last_batch[:4] == (i, 1, put.physical_offset, put.wrote_bytes)
            straight_reads += 1
        straight = _views_get(store, i)
        last, queue.last_batch = queue.last_batch, None  # the general path, for reference
        general = _views_get(store, i)
        queue.last_batch = last
        assert _fields(straight[0]) == _fields(general[0]), i
        assert _fields(straight[0])[:2] == (GetMessageStatus.FOUND, i + 1)
        assert straight[1] == general[1] and len(straight[1]) == 1
    assert straight_reads > 300
    # a get of anything but the last batch, whole and unfiltered, goes the general way
    assert _views_get(store, 398)[0].next_begin_offset == 400
    assert _views_get(store, 399, tag_hashes=[tag_hash_code("x")])[0].status is (
        GetMessageStatus.NO_MATCHED_MSG
    )


def test_should_forget_the_batch_put_last_once_anything_else_changes_its_queue(
    open_store: OpenStore,
) -> None:
    store = open_store()
    store.put_batch(_batch(1), TOPIC, 0)  # (a topic's first put: the general one)
    store.put_batch(_batch(1), TOPIC, 0)
    queue = store.queues.get(TOPIC, 0)
    assert queue is not None and queue.last_batch is not None
    store.put_batch(_batch(3), TOPIC, 0)  # a batch of several records: the general put
    assert queue.last_batch is None
    result, data = _views_get(store, 2)
    assert (result.next_begin_offset, result.message_count, len(data)) == (5, 3, 1)
    store.put_batch(_batch(1), TOPIC, 0)
    assert queue.last_batch is not None
    queue.truncate(5)  # as recovery and a group's truncation do
    assert queue.last_batch is None
    assert _views_get(store, 5)[0].status is GetMessageStatus.OFFSET_OVERFLOW_ONE
