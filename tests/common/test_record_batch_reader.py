"""The native reader of pull answers (``common/record_batch/_reader.c``) and its gathers
(``_gather.c``) agree with the numpy reference (``read_pulled_chunk_py``, the numpy spans of
``MessageBatch``'s columns) on valid answers, cut anywhere and filtered any way, and on broken
ones (the same typed error, naming the same offset); its CRC is zlib's. Without it, a small
answer read with ``struct`` alone (``_small_answer.py``) reads as the numpy reference does."""

from __future__ import annotations

import socket
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aeromq.client import CorruptMessageError, MessageQueue, build_subscription_data
from aeromq.common import encode_batch, patch_batch
from aeromq.common.record_batch import _native as native
from aeromq.common.record_batch import read_pulled_chunk_py
from aeromq.common.record_batch import spans as spans_module
from aeromq.consumer import MessageBatch, read_pulled_batches

TOPIC = "TopicNative"
QUEUE = MessageQueue(TOPIC, "broker-a", 3)
STORE_HOST = socket.inet_aton("127.0.0.1") + struct.pack("<i", 10911)
BORN_HOST = socket.inet_aton("10.0.0.7") + struct.pack("<i", 0)
TAGS = ["TagA", "TagB", "Tag\u00e9", None]

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def read_pulled_batches_py(
    data: bytes,
    queue: MessageQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: Any,
) -> MessageBatch:
    """``read_pulled_batches`` read by the numpy reference (``read_pulled_chunk_py``)."""
    chunk = read_pulled_chunk_py(data, queue, broker_name, offset, next_offset, subscription)
    return MessageBatch() if chunk is None else MessageBatch([chunk])


@pytest.fixture(params=[True, False], ids=["clmul", "zlib"])
def crc_path(request: pytest.FixtureRequest) -> Iterator[None]:
    """The folding CRC (where the CPU has it), then zlib.crc32 called from C."""
    was = native.use_clmul(request.param)
    yield
    native.use_clmul(was)


@given(st.binary(max_size=3000), st.integers(0, 15))
@settings(max_examples=300, deadline=None)
def test_should_compute_zlibs_crc(data: bytes, skip: int) -> None:
    view = memoryview(data)[min(skip, len(data)) :]  # unaligned starts too
    assert native.crc32(view) == zlib.crc32(view)


def test_should_compute_zlibs_crc_at_every_length_around_the_folding_steps() -> None:
    data = bytes(range(256)) * 8
    for length in range(0, 400):
        assert native.crc32(data[:length]) == zlib.crc32(data[:length]), length


_key_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\x01\x02"), max_size=6
)


@st.composite
def _answers(draw: st.DrawFn) -> tuple[bytes, int, int]:
    """An answer of 1-5 stored batches of consecutive offsets, and a pulled range in it."""
    base = draw(st.integers(0, 1000))
    at = base
    parts = []
    for _ in range(draw(st.integers(1, 5))):
        count = draw(st.integers(1, 40))
        tags = draw(st.lists(st.sampled_from(TAGS), min_size=count, max_size=count))
        keys = draw(st.lists(st.one_of(st.none(), _key_text), min_size=count, max_size=count))
        properties = [
            (
                ("UNIQ_KEY\x01U" + str(at + i) + "\x02")
                + ("" if key is None else "KEYS\x01" + key + "\x02")
                + ("a\x01" + str(i) + "\x02" if i % 3 else "")
            ).encode()
            for i, key in enumerate(keys)
        ]
        data = encode_batch(
            TOPIC.encode(),
            [draw(st.binary(min_size=1, max_size=30)) for _ in range(count)],
            tags,
            properties,
            flags=draw(st.lists(st.integers(-5, 5), min_size=count, max_size=count)),
            born_timestamp_ms=draw(st.integers(0, 2**40)),
            born_deltas_ms=draw(st.lists(st.integers(0, 999), min_size=count, max_size=count)),
            born_host=BORN_HOST,
            reconsume_times=draw(st.integers(0, 3)),
        )
        patch_batch(data, 0, at, 10_000 + 7 * at, draw(st.integers(0, 2**40)), STORE_HOST, 3)
        parts.append(bytes(data))
        at += count
    first = draw(st.integers(base - 2, at))
    return b"".join(parts), first, draw(st.integers(first, at + 2))


_SUBSCRIPTIONS = [
    None,
    build_subscription_data(TOPIC, "*"),
    build_subscription_data(TOPIC, "TagA || Tag\u00e9"),
    build_subscription_data(TOPIC, "TagB"),
]


def _columns(batch: MessageBatch) -> dict[str, Any]:
    """Every column of ``batch``, made by whichever reader its module uses."""
    return {
        "queue_offsets": batch.queue_offsets.tolist(),
        "commit_log_offsets": batch.commit_log_offsets.tolist(),
        "queue_ids": batch.queue_ids.tolist(),
        "store": batch.store_timestamps_ms.tolist(),
        "born": batch.born_timestamps_ms.tolist(),
        "body_lengths": batch.body_lengths.tolist(),
        "tag_hashes": batch.tag_hashes.tolist(),
        "flags": batch.flags.tolist(),
        "bodies": [a.tolist() for a in batch.bodies()],
        "tags": [a.tolist() for a in batch.tag_column()],
        "keys": [a.tolist() for a in batch.property_column("KEYS")],
        "missing": [a.tolist() for a in batch.property_column("nope")],
        "body_array": batch.body_array().to_pylist(),
        "tag_array": batch.tag_array().to_pylist(),
        "key_array": batch.property_array("KEYS").to_pylist(),
        "a_array": batch.property_array("a").to_pylist(),
        "arrow": batch.to_arrow().to_pylist(),
        "messages": [
            (m.queue_offset, m.body, m.tags, m.properties, m.store_host, m.born_host) for m in batch
        ],
    }


def _reference(batch: MessageBatch) -> dict[str, Any]:
    """:func:`_columns` made by the numpy reference (the native module set aside)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spans_module, "_native", None)
        return _columns(batch)


@given(_answers(), st.sampled_from(_SUBSCRIPTIONS), st.data())
@_SETTINGS
def test_should_read_natively_what_the_reference_reads(
    answer: tuple[bytes, int, int], subscription: Any, draw: Any
) -> None:
    data, first, end = answer
    assert native.read(data, QUEUE.queue_id, TOPIC.encode(), first, end) is not None
    native_batch = read_pulled_batches(data, QUEUE, "broker-a", first, end, subscription)
    reference = read_pulled_batches_py(data, QUEUE, "broker-a", first, end, subscription)
    assert len(native_batch) == len(reference)
    assert _columns(native_batch) == _reference(reference)
    size = len(reference)
    mask = np.array(draw.draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool)
    chosen = MessageBatch.concat([native_batch.select(mask), native_batch[: len(reference) // 2]])
    expected = MessageBatch.concat([reference.select(mask), reference[: len(reference) // 2]])
    assert _columns(chosen) == _reference(expected)


def _outcome(read: Any, data: bytes, first: int, end: int) -> Any:
    try:
        batch = read(data, QUEUE, "broker-a", first, end, None)
    except CorruptMessageError as error:
        return ("corrupt", str(error))
    return ("read", batch.queue_offsets.tolist(), batch.bodies()[1].tobytes())


@given(_answers(), st.data())
@_SETTINGS
def test_should_fail_on_a_broken_answer_as_the_reference_does(
    answer: tuple[bytes, int, int], draw: Any
) -> None:
    data, first, end = answer
    broken = broken_answer(data, draw)
    expected = _outcome(read_pulled_batches_py, broken, first, end)
    assert _outcome(read_pulled_batches, broken, first, end) == expected


def broken_answer(data: bytes, draw: Any) -> bytes:
    """``data`` with a bit flipped, cut short, or its first batch naming another queue."""
    broken = bytearray(data)
    how = draw.draw(st.sampled_from(["flip", "truncate", "queue"]))
    if how == "flip":
        at = draw.draw(st.integers(0, len(data) - 1))
        broken[at] ^= 1 << draw.draw(st.integers(0, 7))
    elif how == "truncate":
        del broken[draw.draw(st.integers(1, len(data) - 1)) :]
    else:
        struct.pack_into("<i", broken, 40, 4)  # the first batch names another queue
    return bytes(broken)


def test_should_name_the_batch_position_of_a_crc_mismatch() -> None:
    one = encode_batch(TOPIC.encode(), [b"x"] * 3, born_host=BORN_HOST)
    patch_batch(one, 0, 0, 0, 1, STORE_HOST, 3)
    two = encode_batch(TOPIC.encode(), [b"y"] * 3, born_host=BORN_HOST)
    patch_batch(two, 0, 3, 100, 1, STORE_HOST, 3)
    two[-1] ^= 0xFF
    with pytest.raises(CorruptMessageError, match="CRC mismatch") as raised:
        read_pulled_batches(bytes(one + two), QUEUE, "broker-a", 0, 6, None)
    assert raised.value.values["batch_position"] == len(one)


def test_should_check_the_spans_given_to_a_native_gather() -> None:
    data = b"0123456789"
    starts = np.array([0, 8], dtype=np.int64)
    with pytest.raises(ValueError, match="outside its buffer"):
        native.gather([(data, starts, np.array([2, 3], dtype=np.int32))], 2, False)
    with pytest.raises(ValueError, match="spans"):
        native.gather([(data, starts, np.array([2, 2], dtype=np.int32))], 3, False)
    offsets, joined, validity, nulls = native.gather(
        [(data, starts, np.array([2, 0], dtype=np.int32))], 2, True
    )
    assert np.frombuffer(offsets, np.int32).tolist() == [0, 2, 2]
    assert (joined, nulls) == (b"01", 1)
    assert validity is not None and validity[0] & 3 == 1


def test_should_make_arrow_columns_of_the_gathered_bodies_and_tags() -> None:
    one = encode_batch(TOPIC.encode(), [b"ab", b"c"], ["t", None], born_host=BORN_HOST)
    patch_batch(one, 0, 0, 0, 1, STORE_HOST, 3)
    batch = read_pulled_batches(bytes(one), QUEUE, "broker-a", 0, 2, None)
    assert batch.body_array() == pa.array([b"ab", b"c"], pa.binary())
    assert batch.tag_array() == pa.array(["t", None], pa.string())


@pytest.mark.usefixtures("crc_path")
def test_should_read_a_large_answer_as_the_reference_does_on_either_crc_path() -> None:
    parts = []
    for at in range(0, 3000, 500):  # about 300 KB: read and gathered with the GIL released
        data = encode_batch(
            TOPIC.encode(),
            [bytes([at % 251]) * (60 + i % 80) for i in range(500)],
            [TAGS[i % 4] for i in range(500)],
            [f"KEYS\x01k{at + i}\x02".encode() if i % 5 else b"" for i in range(500)],
            born_timestamp_ms=at,
            born_deltas_ms=[i % 7 for i in range(500)],
            born_host=BORN_HOST,
        )
        patch_batch(data, 0, at, 10 * at, 99, STORE_HOST, 3)
        parts.append(bytes(data))
    answer = b"".join(parts)
    native_batch = read_pulled_batches(answer, QUEUE, "broker-a", 250, 2900, None)
    reference = read_pulled_batches_py(answer, QUEUE, "broker-a", 250, 2900, None)
    assert len(native_batch) == 2650
    assert _columns(native_batch) == _reference(reference)
    broken = bytearray(answer)
    broken[len(answer) // 2] ^= 4  # a body byte of a middle batch
    expected = _outcome(read_pulled_batches_py, bytes(broken), 250, 2900)
    assert expected[0] == "corrupt"
    assert _outcome(read_pulled_batches, bytes(broken), 250, 2900) == expected


@pytest.mark.parametrize("expression", ["*", "A || C", "SQL:n >= 1 AND TAGS = 'A'"])
def test_should_read_a_small_answer_without_numpy_as_the_general_read_does(
    expression: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aeromq.client import MessageSelector
    from aeromq.common.record_batch import _small_answer, reader

    # the numpy reader (the C one reads every answer alike): struct alone, then numpy
    monkeypatch.setattr(reader, "_native", None)

    tags: list[str | None] = ["A", "B", None, "A", "C", "A"]
    data = encode_batch(
        TOPIC.encode(),
        [f"m{i}".encode() for i in range(6)],
        tags,
        [f"n\x01{i}\x02".encode() for i in range(6)],
        flags=[3] * 6,
        born_timestamp_ms=500,
        born_deltas_ms=[0, 1, 2, 3, 4, 5],
    )
    patch_batch(data, 0, 10, 900, 777, STORE_HOST, QUEUE.queue_id)
    selector = (
        MessageSelector.by_sql(expression[4:]) if expression.startswith("SQL:") else expression
    )
    subscription = build_subscription_data(TOPIC, selector)

    def read() -> list[tuple[object, ...]]:
        batch = read_pulled_batches(bytes(data), QUEUE, "b", 11, 16, subscription)
        columns = (batch.queue_offsets.tolist(), batch.born_timestamps_ms.tolist())
        messages = [(m.body, m.tags, m.flag, m.properties.get("n")) for m in batch]
        return [columns, *messages]

    small = read()
    monkeypatch.setattr(_small_answer, "_ONE_BATCH_RECORDS", 0)
    assert small == read() and len(small) > 1
