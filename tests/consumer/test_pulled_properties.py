"""The vectorised reader of a pull answer (``read_pulled_batches``) against a record-by-record
reading of the same bytes (``common.RecordBatch``): answers of many batches of different
sizes, cut to any range, with and without a tag subscription; and any byte changed under a
batch's CRC is reported, nothing of the answer delivered."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.client import CorruptMessageError, MessageQueue, build_subscription_data
from aeromq.common import RecordBatch, encode_batch, patch_batch
from aeromq.common.record_batch import ATTRIBUTES_OFFSET, COMPRESSED_FLAG, read_pulled_chunk_py
from aeromq.consumer import read_pulled_batches

QUEUE = MessageQueue("TopicProps", "broker-a", 1)
_TAGS = st.sampled_from([None, "a", "b", "tag-c"])
_RECORD = st.tuples(st.binary(max_size=40), _TAGS, st.booleans(), st.integers(0, 1000))


def _answer(batches: list[list[tuple[bytes, str | None, bool, int]]]) -> tuple[bytes, int]:
    """The stored batches back to back (offsets from 0), and the number of records."""
    out = bytearray()
    offset = 0
    for records in batches:
        data = encode_batch(
            QUEUE.topic.encode(),
            [body for body, _, _, _ in records],
            [tag for _, tag, _, _ in records],
            [f"p\x01{offset + i}\x02".encode() if prop else b"" for i, (_, _, prop, _) in
             enumerate(records)],
            flags=[flag for _, _, _, flag in records],
            born_timestamp_ms=5_000,
            born_deltas_ms=[i for i in range(len(records))],
        )  # fmt: skip
        patch_batch(data, 0, offset, 10 * offset, 9_000 + offset, bytes(8), QUEUE.queue_id)
        out += data
        offset += len(records)
    return bytes(out), offset


def _expected(
    data: bytes, begin: int, end: int, tags: set[str] | None
) -> list[tuple[int, bytes, str | None, bytes, int, int, int]]:
    rows = []
    position = 0
    while position < len(data):
        batch = RecordBatch(data, position)
        for i in range(batch.count):
            offset = int(batch.base_queue_offset) + i
            tag = batch.tag(i)
            if begin <= offset < end and (tags is None or tag in tags):
                rows.append(
                    (offset, batch.body(i), tag, batch.properties_bytes(i),
                     int(batch.flags[i]), 5_000 + i, int(batch.tag_hashes[i]))
                )  # fmt: skip
        position += batch.length
    return rows


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(_RECORD, min_size=1, max_size=70), min_size=1, max_size=6),
    st.integers(0, 400),
    st.integers(0, 400),
    st.sampled_from([None, "a", "a || tag-c"]),
)
def test_should_read_every_answer_as_record_by_record_reading_does(
    batches: list[list[tuple[bytes, str | None, bool, int]]],
    begin: int,
    span: int,
    expression: str | None,
) -> None:
    data, total = _answer(batches)
    begin = min(begin, total)
    end = begin + span
    subscription = None if expression is None else build_subscription_data(QUEUE.topic, expression)
    tags = None if subscription is None else set(subscription.tags)
    got = read_pulled_batches(data, QUEUE, "broker-a", begin, end, subscription)
    rows = [
        (m.queue_offset, m.body, m.tags, bytes(m.properties.get("p", ""), "ascii"), m.flag,
         m.born_timestamp_ms, int(h))
        for m, h in zip(got, got.tag_hashes, strict=True)
    ]  # fmt: skip
    expected = [
        (o, b, t, (p[2:-1] if p else b""), f, born, h)
        for o, b, t, p, f, born, h in _expected(data, begin, end, tags)
    ]
    assert rows == expected
    offsets, bodies = got.bodies()
    assert [bytes(bodies[a:b]) for a, b in itertools.pairwise(offsets)] == [
        row[1] for row in expected
    ]
    assert got.queue_offsets.tolist() == [row[0] for row in expected]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(_RECORD, min_size=1, max_size=70), min_size=2, max_size=5),
    st.data(),
)
def test_should_raise_and_deliver_nothing_when_any_byte_under_a_crc_changes(
    batches: list[list[tuple[bytes, str | None, bool, int]]], data: st.DataObject
) -> None:
    answer, total = _answer(batches)
    starts = [0]
    while starts[-1] < len(answer):
        starts.append(starts[-1] + RecordBatch(answer, starts[-1]).length)
    which = data.draw(st.integers(0, len(batches) - 1))
    at = data.draw(st.integers(starts[which] + 48, starts[which + 1] - 1))
    broken = bytearray(answer)
    broken[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptMessageError) as raised:
        read_pulled_batches(bytes(broken), QUEUE, "broker-a", 0, total, None)
    assert raised.value.values["queue_id"] == QUEUE.queue_id
    assert raised.value.values["pull_offset"] == 0


def test_should_name_the_queue_and_pull_offset_when_a_flipped_bit_marks_a_batch_compressed() -> (
    None
):
    # a byte under the CRC that sets the compressed flag sends the answer through the inflating
    # path (the native pass refuses compressed batches), whose refusal is the reader's own
    answer, total = _answer([[(b"body", "a", False, 0)], [(b"more", None, True, 1)]])
    broken = bytearray(answer)
    broken[ATTRIBUTES_OFFSET] |= COMPRESSED_FLAG
    with pytest.raises(CorruptMessageError, match="failed its check: CRC mismatch") as raised:
        read_pulled_batches(bytes(broken), QUEUE, "broker-a", 0, total, None)
    assert raised.value.values["queue_id"] == QUEUE.queue_id
    assert raised.value.values["pull_offset"] == 0
    assert raised.value.values["topic"] == QUEUE.topic
    assert raised.value.values["batch_position"] == 0
    assert raised.value.values["response_length"] == len(answer)
    with pytest.raises(CorruptMessageError) as reference:  # (the numpy reference's words)
        read_pulled_chunk_py(bytes(broken), QUEUE, "broker-a", 0, total, None)
    assert str(raised.value) == str(reference.value)
