"""The record batch's producer state (``PRODUCER_STATE_FLAG`` and the 16 bytes after the
topic's padding): encoded alike in C and in Python, read back by the view, the checker, the
merger and both pull-answer readers; and batches of the format before it (no flag) read exactly
as before, from bytes kept here as they were encoded then."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.common.record_batch import (
    MAX_SEQUENCE,
    PRODUCER_STATE_FLAG,
    PRODUCER_STATE_LENGTH,
    BatchCheck,
    ProducerState,
    PulledChunk,
    RecordBatch,
    batch_header_length,
    check_batch,
    check_batch_py,
    encode_batch,
    encode_batch_py,
    merge_batches,
    merge_batches_py,
    patch_batch,
    producer_state_position,
    read_producer_state,
    read_pulled_chunk,
    read_pulled_chunk_py,
)

TOPIC = b"TopicIdem"
BORN_HOST = bytes([127, 0, 0, 1, 0x39, 0x30, 0, 0])
STORE_HOST = bytes([10, 0, 0, 1, 0x8F, 0x2A, 0, 0])
PRODUCER = 0x1234_5678_9ABC_DEF0

# A batch encoded by the version before the producer state (commit 6313f5a), its broker fields
# patched: topic "OldTopic", records b"hello" (tag TagA, KEYS k1, flag 1) and b"world!" (flag
# 2, born 5 ms later), attributes 0x2, queue 3, base queue offset 42, physical offset 4096.
OLD_FORMAT_BATCH = bytes.fromhex(
    "a7000000415142312a0000000000000000100000000000007b68e5cf8b0100000a0000018f2a0000"
    "030000001d5a4c6b02000000000000000068e5cf8b0100007f00000139300000020008004f6c6454"
    "6f7069630000000007a827000000000000000000000000000500000006000000040000000000000008"
    "000000000000000000000005000000010000000200000068656c6c6f776f726c6421546167414b4559"
    "53016b3102"
)


class _Queue(NamedTuple):
    topic: str
    broker_name: str
    queue_id: int


Reader = Callable[[bytes, _Queue, str, int, int, None], PulledChunk | None]
Merge = Callable[[Sequence[bytes | bytearray]], bytes | None]


def _parts(data: bytes, starts: Sequence[int], lengths: Sequence[int]) -> list[bytes]:
    return [data[s : s + n] for s, n in zip(starts, lengths, strict=True)]


def _stateful(
    bodies: list[bytes], sequence: int, *, producer: int = PRODUCER, epoch: int = 3
) -> bytearray:
    return encode_batch(
        TOPIC,
        bodies,
        ["TagA"] * len(bodies),
        [b"KEYS\x01k\x02"] * len(bodies),
        born_timestamp_ms=1_700_000_000_000,
        born_host=BORN_HOST,
        attributes=0x2,
        producer_id=producer,
        base_sequence=sequence,
        producer_epoch=epoch,
    )


def test_should_read_an_old_format_batch_exactly_as_before() -> None:
    assert check_batch(OLD_FORMAT_BATCH) == (BatchCheck.OK, "")
    assert check_batch_py(OLD_FORMAT_BATCH) == (BatchCheck.OK, "")
    batch = RecordBatch(OLD_FORMAT_BATCH)
    assert batch.producer_state is None and read_producer_state(OLD_FORMAT_BATCH) is None
    assert batch.attributes == 0x2 and batch.header_length == batch_header_length(8) == 88
    assert [batch.body(0), batch.body(1)] == [b"hello", b"world!"]
    assert [batch.tag(0), batch.tag(1)] == ["TagA", None]
    assert batch.properties_bytes(0) == b"KEYS\x01k1\x02" and batch.flags.tolist() == [1, 2]
    assert (batch.base_queue_offset, batch.base_physical_offset, batch.queue_id) == (42, 4096, 3)


def test_should_encode_an_old_format_batch_to_the_same_bytes_as_before() -> None:
    for encode in (encode_batch, encode_batch_py):
        data = encode(
            b"OldTopic",
            [b"hello", b"world!"],
            ["TagA", None],
            [b"KEYS\x01k1\x02", b""],
            flags=[1, 2],
            born_timestamp_ms=1_700_000_000_000,
            born_deltas_ms=[0, 5],
            born_host=BORN_HOST,
            attributes=0x2,
        )
        patch_batch(data, 0, 42, 4096, 1_700_000_000_123, STORE_HOST, 3)
        assert bytes(data) == OLD_FORMAT_BATCH


@pytest.mark.parametrize("reader", [read_pulled_chunk, read_pulled_chunk_py])
def test_should_read_an_old_format_batch_in_a_pull_answer(reader: Reader) -> None:
    queue = _Queue("OldTopic", "broker-a", 3)
    chunk = reader(OLD_FORMAT_BATCH, queue, "broker-a", 42, 44, None)
    assert chunk is not None and len(chunk) == 2
    bodies = _parts(OLD_FORMAT_BATCH, chunk.body_start, chunk.body_length)
    assert bodies == [b"hello", b"world!"]
    assert chunk.queue_offsets.tolist() == [42, 43]


def test_should_encode_the_producer_state_after_the_topics_padding() -> None:
    data = _stateful([b"a", b"bb"], 7)
    assert bytes(data) == bytes(
        encode_batch_py(
            TOPIC,
            [b"a", b"bb"],
            ["TagA", "TagA"],
            [b"KEYS\x01k\x02"] * 2,
            born_timestamp_ms=1_700_000_000_000,
            born_host=BORN_HOST,
            attributes=0x2,
            producer_id=PRODUCER,
            base_sequence=7,
            producer_epoch=3,
        )
    )
    at = producer_state_position(len(TOPIC))
    assert struct.unpack_from("<qihh", data, at) == (PRODUCER, 7, 3, 0)
    batch = RecordBatch(bytes(data))
    assert batch.attributes == 0x2 | PRODUCER_STATE_FLAG
    assert batch.header_length == at + PRODUCER_STATE_LENGTH
    assert batch.producer_state == ProducerState(PRODUCER, 7, 3)
    assert read_producer_state(data) == ProducerState(PRODUCER, 7, 3)
    assert [batch.body(0), batch.body(1), batch.tag(1)] == [b"a", b"bb", "TagA"]
    assert check_batch(data) == (BatchCheck.OK, "") == check_batch_py(data)


def test_should_clear_the_flag_of_a_batch_without_a_producer_id() -> None:
    for encode in (encode_batch, encode_batch_py):
        data = encode(TOPIC, [b"x"], attributes=PRODUCER_STATE_FLAG | 0x1)
        batch = RecordBatch(bytes(data))
        assert batch.attributes == 0x1 and batch.producer_state is None


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"base_sequence": MAX_SEQUENCE + 1}, struct.error),
        ({"base_sequence": -1}, struct.error),
        ({"producer_epoch": 1 << 15}, struct.error),
        ({"producer_id": 1 << 63}, struct.error),
    ],
)
def test_should_refuse_a_producer_state_that_cannot_be_encoded(
    kwargs: dict[str, int], error: type[Exception]
) -> None:
    arguments: dict[str, int] = {"producer_id": PRODUCER, **kwargs}
    for encode in (encode_batch, encode_batch_py):
        with pytest.raises(error):
            encode(TOPIC, [b"x"], **arguments)


@pytest.mark.parametrize(("field", "value"), [(8, -5), (14, 1)])
def test_should_refuse_a_negative_sequence_or_a_reserved_field_set(field: int, value: int) -> None:
    data = _stateful([b"x"], 0)
    fmt = "<i" if field == 8 else "<h"
    struct.pack_into(fmt, data, producer_state_position(len(TOPIC)) + field, value)
    struct.pack_into("<I", data, 44, zlib.crc32(bytes(data[48:])))
    assert check_batch(data)[0] is BatchCheck.BAD_PRODUCER_STATE
    assert check_batch_py(data)[0] is BatchCheck.BAD_PRODUCER_STATE
    assert check_batch(data, check_content=False)[0] is BatchCheck.OK


@pytest.mark.parametrize("merge", [merge_batches, merge_batches_py])
def test_should_merge_batches_of_one_producer_with_sequences_that_follow_on(merge: Merge) -> None:
    parts = [_stateful([b"a", b"b"], 10), _stateful([b"c"], 12), _stateful([b"d", b"e"], 13)]
    merged = merge(parts)
    assert merged is not None
    assert merged == _stateful([b"a", b"b", b"c", b"d", b"e"], 10)
    assert RecordBatch(merged).producer_state == ProducerState(PRODUCER, 10, 3)


@pytest.mark.parametrize("merge", [merge_batches, merge_batches_py])
def test_should_merge_sequences_that_wrap(merge: Merge) -> None:
    parts = [_stateful([b"a", b"b"], MAX_SEQUENCE - 1), _stateful([b"c"], 0)]
    merged = merge(parts)
    assert merged is not None and RecordBatch(merged).count == 3


@pytest.mark.parametrize("merge", [merge_batches, merge_batches_py])
@pytest.mark.parametrize(
    "second",
    [
        _stateful([b"c"], 13),  # a gap
        _stateful([b"c"], 11),  # an overlap
        _stateful([b"c"], 12, producer=PRODUCER + 1),
        _stateful([b"c"], 12, epoch=4),
        encode_batch(TOPIC, [b"c"], ["TagA"], [b"KEYS\x01k\x02"], born_host=BORN_HOST),
    ],
    ids=["gap", "overlap", "producer", "epoch", "no-state"],
)
def test_should_not_merge_batches_of_other_producers_or_sequences(
    merge: Merge, second: bytearray
) -> None:
    first = _stateful([b"a", b"b"], 10)
    assert merge([first, second]) is None
    assert merge([second, first]) is None


@pytest.mark.parametrize("reader", [read_pulled_chunk, read_pulled_chunk_py])
def test_should_read_a_pull_answer_of_batches_with_and_without_a_producer_state(
    reader: Reader,
) -> None:
    batches = [
        _stateful([b"a", b"bb"], 0),
        encode_batch(TOPIC, [b"ccc"], ["TagB"], born_host=BORN_HOST),
        _stateful([b"dddd"], 2),
    ]
    offset = 100
    for position, data in enumerate(batches):
        patch_batch(data, 0, offset, 5000 + position * 1000, 1, STORE_HOST, 1)
        offset += RecordBatch(bytes(data)).count
    answer = b"".join(bytes(data) for data in batches)
    queue = _Queue(TOPIC.decode(), "broker-a", 1)
    for first, last in ((100, 104), (101, 104), (100, 101)):
        chunk = reader(answer, queue, "broker-a", first, last, None)
        assert chunk is not None
        bodies = _parts(answer, chunk.body_start, chunk.body_length)
        assert bodies == [b"a", b"bb", b"ccc", b"dddd"][first - 100 : last - 100]
        tags = _parts(answer, chunk.tag_start, chunk.tag_length)
        assert tags == [b"TagA", b"TagA", b"TagB", b"TagA"][first - 100 : last - 100]


@pytest.mark.parametrize("reader", [read_pulled_chunk, read_pulled_chunk_py])
def test_should_read_one_small_batch_with_a_producer_state(reader: Reader) -> None:
    data = _stateful([b"one", b"two"], 5)
    patch_batch(data, 0, 0, 0, 1, STORE_HOST, 2)
    queue = _Queue(TOPIC.decode(), "broker-a", 2)
    chunk = reader(bytes(data), queue, "broker-a", 0, 2, None)
    assert chunk is not None
    answer = bytes(data)
    assert _parts(answer, chunk.body_start, chunk.body_length) == [b"one", b"two"]


@given(
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.integers(0, MAX_SEQUENCE),
    st.integers(-(1 << 15), (1 << 15) - 1),
    st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=8),
    st.binary(min_size=0, max_size=20).map(lambda raw: raw.hex().encode()[:30] or b"t"),
)
@settings(max_examples=150, deadline=None)
def test_should_encode_any_producer_state_alike_in_c_and_python(
    producer: int, sequence: int, epoch: int, bodies: list[bytes], topic: bytes
) -> None:
    arguments = {"producer_id": producer, "base_sequence": sequence, "producer_epoch": epoch}
    data = encode_batch(topic, bodies, **arguments)
    assert bytes(data) == bytes(encode_batch_py(topic, bodies, **arguments))
    assert check_batch(data) == (BatchCheck.OK, "") == check_batch_py(data)
    batch = RecordBatch(bytes(data))
    assert batch.producer_state == ProducerState(producer, sequence, epoch)
    assert [batch.body(i) for i in range(batch.count)] == bodies
