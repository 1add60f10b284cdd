"""Pulled record batches as messages and as columns (``MessageBatch``, ``read_pulled_batches``)."""

from __future__ import annotations

import socket
import struct

import pytest

from aeromq.client import CorruptMessageError, MessageExt, MessageQueue, build_subscription_data
from aeromq.common import encode_batch, encode_offset_message_id, patch_batch
from aeromq.consumer import MessageBatch, read_pulled_batches
from aeromq.consumer.message_batch import as_message_batch
from aeromq.consumer.process_queue import ProcessQueue

TOPIC = "TopicTest"
QUEUE = MessageQueue(TOPIC, "broker-a", 2)
STORE_HOST = socket.inet_aton("127.0.0.1") + struct.pack("<i", 10911)
BORN_HOST = socket.inet_aton("10.0.0.7") + struct.pack("<i", 0)


def stored_batch(base_offset: int, count: int, *, tags: list[str | None] | None = None) -> bytes:
    data = encode_batch(
        TOPIC.encode(),
        [f"m{base_offset + i}".encode() for i in range(count)],
        tags if tags is not None else [None] * count,
        [f"UNIQ_KEY\x01U{base_offset + i}\x02k\x01v\x02".encode() for i in range(count)],
        flags=[7] * count,
        born_timestamp_ms=1_000,
        born_deltas_ms=list(range(count)),
        born_host=BORN_HOST,
    )
    patch_batch(data, 0, base_offset, 5_000 + base_offset * 100, 2_000, STORE_HOST, QUEUE.queue_id)
    return bytes(data)


def test_should_cut_pulled_batches_to_the_pulled_range() -> None:
    data = stored_batch(0, 4) + stored_batch(4, 4)
    batch = read_pulled_batches(data, QUEUE, "broker-a", 2, 7, None)
    assert batch.queue_offsets.tolist() == [2, 3, 4, 5, 6]
    assert [m.body for m in batch] == [b"m2", b"m3", b"m4", b"m5", b"m6"]
    assert batch.queue_ids.tolist() == [2] * 5
    assert len(batch) == 5


def test_should_read_a_message_of_a_batch_like_a_message_ext() -> None:
    batch = read_pulled_batches(stored_batch(10, 3), QUEUE, "broker-a", 10, 13, None)
    message = batch[1]
    assert isinstance(message, MessageExt)
    assert (message.topic, message.queue_id, message.queue_offset) == (TOPIC, 2, 11)
    assert (message.body, message.flag, message.broker_name) == (b"m11", 7, "broker-a")
    assert message.commit_log_offset == 5_000 + 1_000 + 1
    assert message.store_host == ("127.0.0.1", 10911)
    assert message.born_host == ("10.0.0.7", 0)
    assert (message.born_timestamp_ms, message.store_timestamp_ms) == (1_001, 2_000)
    assert message.msg_id == "U11"
    assert message.offset_msg_id == encode_offset_message_id("127.0.0.1", 10911, 6_001)
    assert message.properties["k"] == "v"
    assert message.tags is None
    plain = MessageExt(
        TOPIC,
        b"m11",
        dict(message.properties),
        flag=7,
        broker_name="broker-a",
        queue_id=2,
        queue_offset=11,
    )
    assert message.body == plain.body and message.properties == plain.properties


def test_should_let_a_set_field_override_the_batch() -> None:
    message = read_pulled_batches(stored_batch(0, 1), QUEUE, "b", 0, 1, None)[0]
    message.body = b"changed"
    assert message.body == b"changed"


def test_should_filter_tags_by_hash_then_string() -> None:
    tags: list[str | None] = ["A", "B", None, "A", "C"]
    subscription = build_subscription_data(TOPIC, "A || C")
    batch = read_pulled_batches(stored_batch(0, 5, tags=tags), QUEUE, "b", 0, 5, subscription)
    assert batch.queue_offsets.tolist() == [0, 3, 4]
    assert [m.tags for m in batch] == ["A", "A", "C"]


def test_should_raise_on_a_corrupt_batch_naming_the_pull_offset() -> None:
    data = bytearray(stored_batch(0, 3))
    data[-2] ^= 0x01
    with pytest.raises(CorruptMessageError) as caught:
        read_pulled_batches(bytes(data), QUEUE, "b", 0, 3, None)
    assert "CRC mismatch" in str(caught.value) and "pull_offset=0" in str(caught.value)


def test_should_raise_on_a_truncated_answer() -> None:
    data = stored_batch(0, 3)
    with pytest.raises(CorruptMessageError):
        read_pulled_batches(data[:-5], QUEUE, "b", 0, 3, None)


def test_should_raise_on_a_batch_of_another_queue() -> None:
    other = MessageQueue(TOPIC, "b", 3)
    with pytest.raises(CorruptMessageError, match="another queue"):
        read_pulled_batches(stored_batch(0, 1), other, "b", 0, 1, None)


def test_should_give_the_columns_without_making_message_objects() -> None:
    data = stored_batch(0, 4) + stored_batch(4, 4)
    batch = read_pulled_batches(data, QUEUE, "b", 1, 8, None)
    offsets, body_data = batch.bodies()
    bodies = [bytes(body_data[offsets[i] : offsets[i + 1]]) for i in range(len(batch))]
    assert bodies == [f"m{i}".encode() for i in range(1, 8)]
    assert batch.store_timestamps_ms.tolist() == [2_000] * 7
    assert batch.born_timestamps_ms.tolist() == [1_001, 1_002, 1_003, 1_000, 1_001, 1_002, 1_003]
    assert batch.body_lengths.tolist() == [2] * 7


def test_should_gather_only_the_bodies_and_tags_a_filter_selects() -> None:
    tags: list[str | None] = ["A", "B", "A", "B", "A"]
    subscription = build_subscription_data(TOPIC, "B")
    batch = read_pulled_batches(stored_batch(0, 5, tags=tags), QUEUE, "b", 0, 5, subscription)
    offsets, body_data = batch.bodies()
    assert bytes(body_data) == b"m1m3" and offsets.tolist() == [0, 2, 4]
    tag_offsets, tag_data = batch.tag_column()
    assert bytes(tag_data) == b"BB" and tag_offsets.tolist() == [0, 1, 2]


def test_should_give_every_column_to_arrow() -> None:
    pa = pytest.importorskip("pyarrow")
    tags: list[str | None] = ["A", None, "B"]
    batch = read_pulled_batches(stored_batch(3, 3, tags=tags), QUEUE, "broker-a", 3, 6, None)
    table = batch.to_arrow(properties=True)
    assert table.num_rows == 3
    assert table.column("body").to_pylist() == [b"m3", b"m4", b"m5"]
    assert table.column("tags").to_pylist() == ["A", None, "B"]
    assert table.column("queue_offset").to_pylist() == [3, 4, 5]
    assert table.column("topic").to_pylist() == [TOPIC] * 3
    assert table.column("broker_name").to_pylist() == ["broker-a"] * 3
    assert table.column("store_timestamp").type == pa.timestamp("ms")
    assert dict(table.column("properties").to_pylist()[0]) == {
        "UNIQ_KEY": "U3",
        "k": "v",
        "TAGS": "A",
    }


def test_should_slice_and_join_a_batch_into_batches() -> None:
    batch = read_pulled_batches(stored_batch(0, 4) + stored_batch(4, 4), QUEUE, "b", 0, 8, None)
    head, tail = batch[:3], batch[3:]
    assert isinstance(head, MessageBatch) and isinstance(tail, MessageBatch)
    assert head.queue_offsets.tolist() == [0, 1, 2]
    assert tail.queue_offsets.tolist() == [3, 4, 5, 6, 7]
    assert MessageBatch.concat([tail, head]).queue_offsets.tolist() == [3, 4, 5, 6, 7, 0, 1, 2]
    assert batch[-1].queue_offset == 7
    with pytest.raises(IndexError):
        batch[8]


def test_should_make_a_batch_of_messages_made_elsewhere() -> None:
    messages = [
        MessageExt(TOPIC, b"x", {"TAGS": "A"}, queue_id=1, queue_offset=5, broker_name="b"),
        MessageExt(TOPIC, b"y", {}, queue_id=1, queue_offset=6, broker_name="b"),
        MessageExt(TOPIC, b"z", {}, queue_id=1, queue_offset=9, broker_name="b"),
    ]
    batch = as_message_batch(messages)
    assert batch.queue_offsets.tolist() == [5, 6, 9]
    assert [m.body for m in batch] == [b"x", b"y", b"z"]
    assert batch[0].tags == "A"


def test_should_put_and_remove_a_batch_in_a_process_queue_by_its_columns() -> None:
    process_queue = ProcessQueue()
    batch = read_pulled_batches(stored_batch(0, 4) + stored_batch(4, 4), QUEUE, "b", 0, 8, None)
    assert process_queue.put_messages(batch) == 8
    assert process_queue.msg_count == 8 and process_queue.msg_size == 16
    assert process_queue.max_span == 7
    assert process_queue.remove_messages(batch[:3]) == 3
    assert process_queue.msg_size == 10
    assert process_queue.remove_messages(batch[3:]) == 8
