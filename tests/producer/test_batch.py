"""A send's record batch and its lazily made results (``producer._batch``)."""

from __future__ import annotations

import pytest

from aeromq.client import Message, MessageQueue, MessageTooLargeError, UniqueMessageIdGenerator
from aeromq.common import BatchCheck, RecordBatch, check_batch, encode_offset_message_id
from aeromq.producer import Producer, ProducerConfig, SendResult, SendResults, SendStatus
from aeromq.producer._batch import encode_messages, pack_born_host

QUEUE = MessageQueue("Orders", "broker-a", 2)


def test_messages_encode_once_with_their_ids_tags_and_properties() -> None:
    messages = [
        Message("Orders", b"a", tags="created", keys="k1", properties={"color": "red"}),
        Message("Orders", b"b", flag=5),
    ]
    messages[1].put_system_property("UNIQ_KEY", "GIVEN")
    batch, ids = encode_messages(
        messages, UniqueMessageIdGenerator(), 1_700_000_000_000, pack_born_host("10.0.0.1:7")
    )
    assert check_batch(batch, topic=b"Orders") == (BatchCheck.OK, "")
    assert ids[1] == "GIVEN" and ids[0] == messages[0].uniq_id  # made here, set on the message
    read = RecordBatch(batch)
    assert (read.body(0), read.body(1), read.tag(0), read.tag(1)) == (b"a", b"b", "created", None)
    assert read.properties_bytes(0).split(b"\x02")[:-1] == [
        b"KEYS\x01k1",
        b"WAIT\x01true",
        b"color\x01red",
        b"UNIQ_KEY\x01" + ids[0].encode(),
    ]
    assert read.flags.tolist() == [0, 5]
    assert read.born_host == pack_born_host("10.0.0.1:7")
    assert read.base_born_timestamp_ms == 1_700_000_000_000


def test_a_host_that_is_not_ipv4_packs_as_zeros() -> None:
    assert pack_born_host("[::1]:9") == bytes(8)


def test_send_results_are_made_when_read_and_equal_a_list() -> None:
    results = SendResults(
        SendStatus.SEND_OK, QUEUE, 100, 5_000, ("127.0.0.1", 10911), ["U0", "U1", "U2"]
    )
    expected = [
        SendResult(
            SendStatus.SEND_OK,
            f"U{i}",
            encode_offset_message_id("127.0.0.1", 10911, 5_000 + i),
            QUEUE,
            100 + i,
        )
        for i in range(3)
    ]
    assert not results._made  # nothing made yet
    assert results[-1] == expected[2] and len(results._made) == 1
    assert results == expected and list(results) == expected
    assert results[1:] == expected[1:]
    with pytest.raises(IndexError, match="count=3"):
        results[3]


def test_a_batch_whose_encoding_is_over_the_limit_is_refused_before_sending() -> None:
    config = ProducerConfig(max_message_size=1_000)
    big = {"p": "x" * 2_000}
    messages = [Message("Orders", b"b", properties=big) for _ in range(20)]  # bodies: 20 B
    with (
        Producer("batch-test", "127.0.0.1:1", config=config) as producer,
        pytest.raises(MessageTooLargeError, match="encoded"),
    ):
        producer.send_batch(messages)
