"""A send's record batch and its lazily made results (``producer._batch``)."""

from __future__ import annotations

import pytest

from aeromq.client import Message, MessageQueue, MessageTooLargeError, UniqueMessageIdGenerator
from aeromq.common import BatchCheck, RecordBatch, check_batch, encode_offset_message_id
from aeromq.producer import Producer, ProducerConfig, SendResult, SendResults, SendStatus
from aeromq.producer._batch import encode_messages, pack_born_host

QUEUE = MessageQueue("Orders", "broker-a", 2)


def test_should_encode_messages_once_with_their_ids_tags_and_properties() -> None:
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


def test_should_pack_a_host_that_is_not_ipv4_as_zeros() -> None:
    assert pack_born_host("[::1]:9") == bytes(8)


def test_should_make_send_results_when_read_and_equal_a_list() -> None:
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


def test_should_refuse_a_batch_encoded_over_the_limit_before_sending() -> None:
    config = ProducerConfig(max_message_size=1_000)
    big = {"p": "x" * 2_000}
    messages = [Message("Orders", b"b", properties=big) for _ in range(20)]  # bodies: 20 B
    with (
        Producer("batch-test", "127.0.0.1:1", config=config) as producer,
        pytest.raises(MessageTooLargeError, match="encoded"),
    ):
        producer.send_batch(messages)


def _reference(messages: list[Message], ids: list[str]) -> bytes:
    """The batch as the generic path spells it: each message's properties walked one by one."""
    from aeromq.common import split_tag
    from aeromq.common.record_batch import encode_batch_py

    tags, properties = zip(*[split_tag(m.properties) for m in messages], strict=True)
    flags = [m.flag for m in messages]
    return bytes(
        encode_batch_py(
            b"Orders",
            [m.body for m in messages],
            tags,
            properties,
            flags=flags,
            born_timestamp_ms=1_700_000_000_000,
            born_host=bytes(8),
        )
    )


@pytest.mark.parametrize("flags", [[0, 0, 0], [0, 7, -1]])
def test_should_encode_plain_messages_as_the_generic_path_does_and_give_their_ids(
    flags: list[int],
) -> None:
    messages = [Message("Orders", f"m{i}".encode(), flag=f) for i, f in enumerate(flags)]
    batch, ids = encode_messages(messages, UniqueMessageIdGenerator(), 1_700_000_000_000, bytes(8))
    assert ids == [m.uniq_id for m in messages] and len(set(ids)) == 3
    assert batch == _reference(messages, ids)
    assert RecordBatch(batch).properties_bytes(2) == b"WAIT\x01true\x02UNIQ_KEY\x01%s\x02" % (
        ids[2].encode()
    )


def test_should_keep_one_id_in_both_records_of_a_message_listed_twice() -> None:
    message = Message("Orders", b"same")
    batch, ids = encode_messages(
        [message, Message("Orders", b"b"), message],
        UniqueMessageIdGenerator(),
        1_700_000_000_000,
        bytes(8),
    )
    assert ids[0] == ids[2] == message.uniq_id != ids[1]
    read = RecordBatch(batch)
    assert read.properties_bytes(0) == read.properties_bytes(2)


def test_should_keep_a_resent_messages_id_and_take_the_generic_path_for_properties() -> None:
    generator = UniqueMessageIdGenerator()
    messages = [
        Message("Orders", b"a"),
        Message("Orders", b"b", wait_store_msg_ok=False),
        Message("Orders", b"c", tags="T", properties={"k": "v"}),
    ]
    _, first = encode_messages(messages[:1], generator, 1_700_000_000_000, bytes(8))
    batch, ids = encode_messages(messages, generator, 1_700_000_000_000, bytes(8))
    assert ids[0] == first[0] and ids == [m.uniq_id for m in messages]
    assert batch == _reference(messages, ids)
    assert check_batch(batch, topic=b"Orders") == (BatchCheck.OK, "")
