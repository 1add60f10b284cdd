"""A small pull read straight into ``MessageExt`` objects (``common/record_batch/_message_reader.c``
through ``consumer/_pulled_messages.py``) holds the same messages as the column path
(``read_pulled_batches``, whose ``BatchMessageExt`` fields are read from columns): every field,
properties and offsets alike, on valid answers cut anywhere and filtered any way; and a broken,
compressed or not-UTF-8 answer ends as the column path ends it (the same typed error, or the
column read itself)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.client import (
    CorruptMessageError,
    MessageExt,
    MessageSelector,
    build_subscription_data,
)
from aeromq.common import encode_batch, patch_batch
from aeromq.common.record_batch import CompressionType, compress_batch, read_pulled_records
from aeromq.consumer import MessageBatch, read_pulled_batches
from aeromq.consumer._pulled_messages import SMALL_PULL_RECORDS, read_pulled_messages
from aeromq.consumer.message_batch import PulledMessages, as_message_batch
from aeromq.consumer.process_queue import ProcessQueue
from tests.common.test_record_batch_reader import (
    _SETTINGS,
    _SUBSCRIPTIONS,
    BORN_HOST,
    QUEUE,
    STORE_HOST,
    TOPIC,
    _answers,
    broken_answer,
)


def _fields(message: MessageExt) -> tuple[object, ...]:
    return (
        message.topic,
        message.body,
        message.flag,
        dict(message.properties),
        message.tags,
        message.broker_name,
        message.queue_id,
        message.queue_offset,
        message.commit_log_offset,
        message.store_size,
        message.sys_flag,
        message.born_timestamp_ms,
        message.born_host,
        message.store_timestamp_ms,
        message.store_host,
        message.reconsume_times,
        message.msg_id,
        message.offset_msg_id,
    )


def _outcome(read: Any, data: bytes, first: int, end: int, subscription: Any) -> Any:
    try:
        messages = read(data, QUEUE, "broker-a", first, end, subscription)
    except CorruptMessageError as error:
        return ("corrupt", str(error), error.values)
    return ("read", [_fields(message) for message in messages])


@given(_answers(), st.sampled_from(_SUBSCRIPTIONS))
@_SETTINGS
def test_should_make_the_messages_the_column_path_reads(
    answer: tuple[bytes, int, int], subscription: Any
) -> None:
    data, first, end = answer
    expected = _outcome(read_pulled_batches, data, first, end, subscription)
    assert _outcome(read_pulled_messages, data, first, end, subscription) == expected
    records = read_pulled_records(data, QUEUE, "broker-a", first, end, 10_000, MessageExt)
    columns = read_pulled_batches(data, QUEUE, "broker-a", first, end, None)
    if records is None:  # nothing in the range
        assert len(columns) == 0
    else:
        assert [_fields(m) for m in records] == [_fields(m) for m in columns]
        assert records == list(columns)  # MessageExt equals its BatchMessageExt


@given(_answers(), st.data())
@_SETTINGS
def test_should_fail_on_a_broken_answer_as_the_column_path_does(
    answer: tuple[bytes, int, int], draw: Any
) -> None:
    data, first, end = answer
    broken = broken_answer(data, draw)
    expected = _outcome(read_pulled_batches, broken, first, end, None)
    assert _outcome(read_pulled_messages, broken, first, end, None) == expected


def _batch(count: int, base: int = 7, properties: bytes | None = None) -> bytes:
    data = encode_batch(
        TOPIC.encode(),
        [f"body-{i}".encode() * 20 for i in range(count)],
        ["TagA" if i % 2 else None for i in range(count)],
        [properties or f"KEYS\x01k{i}\x02".encode() for i in range(count)],
        born_timestamp_ms=1_700_000_000_000,
        born_host=BORN_HOST,
    )
    patch_batch(data, 0, base, 4096, 1_700_000_000_001, STORE_HOST, QUEUE.queue_id)
    return bytes(data)


def test_should_read_a_small_answer_into_message_objects_and_a_large_one_into_columns() -> None:
    small = read_pulled_messages(_batch(3), QUEUE, "broker-a", 7, 10, None)
    assert isinstance(small, PulledMessages)
    assert [type(m) for m in small] == [MessageExt] * 3
    large = read_pulled_messages(
        _batch(SMALL_PULL_RECORDS + 1), QUEUE, "broker-a", 7, 7 + SMALL_PULL_RECORDS + 1, None
    )
    assert isinstance(large, MessageBatch)
    sql = build_subscription_data(TOPIC, MessageSelector.by_sql("KEYS = 'k1'"))
    assert isinstance(read_pulled_messages(_batch(3), QUEUE, "broker-a", 7, 10, sql), MessageBatch)


def test_should_read_a_compressed_or_not_utf8_answer_as_columns() -> None:
    compressed = compress_batch(_batch(3), CompressionType.ZLIB, min_body_bytes=0)
    read = read_pulled_messages(compressed, QUEUE, "broker-a", 7, 10, None)
    assert isinstance(read, MessageBatch)
    assert [_fields(m) for m in read] == [
        _fields(m) for m in read_pulled_messages(_batch(3), QUEUE, "broker-a", 7, 10, None)
    ]
    not_utf8 = _batch(2, properties=b"KEYS\x01\xff\xfe\x02")
    assert read_pulled_records(not_utf8, QUEUE, "broker-a", 7, 9, 10, MessageExt) is None
    assert isinstance(read_pulled_messages(not_utf8, QUEUE, "broker-a", 7, 9, None), MessageBatch)


def test_should_give_poll_batch_the_columns_of_a_small_pull() -> None:
    tags = build_subscription_data(TOPIC, "TagA")
    messages = read_pulled_messages(_batch(5), QUEUE, "broker-a", 7, 12, tags)
    assert [m.queue_offset for m in messages] == [8, 10]
    batch = as_message_batch(messages)
    assert isinstance(batch, MessageBatch)
    assert batch.queue_offsets.tolist() == [8, 10]
    assert [_fields(m) for m in batch] == [_fields(m) for m in messages]


def test_should_keep_a_small_pulls_offsets_as_ints_in_the_process_queue() -> None:
    queue = ProcessQueue()
    first = read_pulled_messages(_batch(3), QUEUE, "broker-a", 7, 10, None)
    then = read_pulled_messages(_batch(2, base=10), QUEUE, "broker-a", 10, 12, None)
    assert queue.put_messages(first) == 3 and queue.put_messages(then) == 2
    assert queue.put_messages(first[1:2]) == 0  # cached already
    assert (queue.msg_count, queue.max_span, queue.first_offset()) == (5, 4, 7)
    assert queue.msg_size == sum(len(m.body) for m in [*first, *then])
    assert queue.remove_messages(first[:1]) == 8
    assert queue.remove_messages(first[1:]) == 10
    assert queue.remove_messages(then[1:]) == 10  # not a prefix: merged, then removed
    assert queue.remove_messages(then[:1]) == 12
    assert (queue.msg_count, queue.msg_size) == (0, 0)


@pytest.mark.parametrize("limit", [0, 2])
def test_should_leave_an_answer_over_the_limit_to_the_column_path(limit: int) -> None:
    assert read_pulled_records(_batch(3), QUEUE, "broker-a", 7, 10, limit, MessageExt) is None
