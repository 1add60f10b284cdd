from __future__ import annotations

import pytest

from aeromq.client import (
    IllegalArgumentError,
    Message,
    MessageExt,
    MessageIllegalError,
    MessageQueue,
    decode_offset_message_id,
)


def test_should_keep_tags_keys_and_properties_in_rocketmq_property_names() -> None:
    message = Message(
        "TopicTest", b"hello", tags="TagA", keys=["k1", "k2"], properties={"orderId": "42"}
    )
    assert message.topic == "TopicTest"
    assert message.body == b"hello"
    assert message.tags == "TagA"
    assert message.keys == ("k1", "k2")
    assert message.get_property("orderId") == "42"
    assert dict(message.properties) == {
        "TAGS": "TagA",
        "KEYS": "k1 k2",
        "WAIT": "true",
        "orderId": "42",
    }


def test_should_default_to_no_tag_no_keys_and_waiting_for_the_store() -> None:
    message = Message("T", b"x", tags="")
    assert message.tags is None
    assert message.keys == ()
    assert message.wait_store_msg_ok
    assert message.flag == 0
    assert message.uniq_id is None
    assert not Message("T", b"x", wait_store_msg_ok=False).wait_store_msg_ok


def test_should_split_a_keys_string_on_whitespace_as_rocketmq() -> None:
    assert Message("T", b"x", keys="k1 k2  k3").keys == ("k1", "k2", "k3")


def test_should_copy_a_mutable_body_to_bytes() -> None:
    source = bytearray(b"abc")
    message = Message("T", source)
    source[0] = 0
    assert message.body == b"abc"
    assert type(message.body) is bytes


def test_should_validate_the_topic_on_construction() -> None:
    with pytest.raises(IllegalArgumentError, match="the topic contains an illegal character"):
        Message("bad topic", b"x")
    with pytest.raises(IllegalArgumentError, match="sending to this system topic is forbidden"):
        Message("RMQ_SYS_TRANS_HALF_TOPIC", b"x")


def test_should_reject_an_empty_or_non_bytes_body() -> None:
    with pytest.raises(MessageIllegalError, match="the message body is empty"):
        Message("T", b"")
    with pytest.raises(MessageIllegalError) as raised:
        Message("T", "text")  # type: ignore[arg-type]
    assert str(raised.value) == "the message body must be bytes: body_type=<class 'str'>"


def test_should_reject_a_tag_that_no_expression_can_select() -> None:
    with pytest.raises(MessageIllegalError) as raised:
        Message("T", b"x", tags="A || B")
    assert str(raised.value) == "a tag must not contain '|': tags='A || B'"
    with pytest.raises(MessageIllegalError, match="a tag must not contain whitespace"):
        Message("T", b"x", tags=" A")


def test_should_reject_a_flag_outside_a_java_int() -> None:
    assert Message("T", b"x", flag=-(2**31)).flag == -(2**31)
    with pytest.raises(MessageIllegalError) as raised:
        Message("T", b"x", flag=2**31)
    assert str(raised.value) == "the flag must fit in a signed 32-bit int: flag=2147483648"


def test_should_read_the_wait_property_as_java_parse_boolean() -> None:
    assert not MessageExt("T", b"x", {"WAIT": "false"}).wait_store_msg_ok
    assert MessageExt("T", b"x", {"WAIT": "TRUE"}).wait_store_msg_ok
    assert MessageExt("T", b"x").wait_store_msg_ok


def test_should_reject_bad_keys_and_reserved_properties() -> None:
    with pytest.raises(MessageIllegalError, match="a key must be non-empty"):
        Message("T", b"x", keys=["a b"])
    with pytest.raises(MessageIllegalError, match="reserved for the system: name='KEYS'"):
        Message("T", b"x", properties={"KEYS": "k"})


def test_should_let_only_reserved_names_be_set_as_system_properties() -> None:
    message = Message("T", b"x")
    message.put_system_property("UNIQ_KEY", "0A00000104D2FFFFFFFB6D61945C0000")
    assert message.uniq_id == "0A00000104D2FFFFFFFB6D61945C0000"
    with pytest.raises(MessageIllegalError, match="not a reserved property name: name='mine'"):
        message.put_system_property("mine", "x")


def test_should_compare_messages_by_value_and_not_hash_them() -> None:
    assert Message("T", b"x", tags="A") == Message("T", b"x", tags="A")
    assert Message("T", b"x", tags="A") != Message("T", b"x", tags="B")
    assert Message("T", b"x") != "T"
    with pytest.raises(TypeError):
        hash(Message("T", b"x"))


def test_should_carry_store_fields_and_derive_ids_in_message_ext() -> None:
    message = MessageExt(
        "TopicTest",
        b"hello",
        {"TAGS": "TagA"},
        broker_name="broker-a",
        queue_id=3,
        queue_offset=4,
        commit_log_offset=20247029,
        store_host=("10.66.51.58", 10911),
        born_timestamp_ms=1_700_000_000_000,
        store_timestamp_ms=1_700_000_000_005,
    )
    assert message.tags == "TagA"
    assert message.queue == MessageQueue("TopicTest", "broker-a", 3)
    assert message.offset_msg_id == "0A42333A00002A9F000000000134F1F5"
    assert decode_offset_message_id(message.offset_msg_id).commit_log_offset == 20247029
    assert message.msg_id == message.offset_msg_id
    message.put_system_property("UNIQ_KEY", "7F00000125EFB435327D6D61945E0000")
    assert message.msg_id == "7F00000125EFB435327D6D61945E0000"


def test_should_compare_message_ext_on_store_fields_too() -> None:
    first = MessageExt("T", b"x", queue_offset=1)
    assert first == MessageExt("T", b"x", queue_offset=1)
    assert first != MessageExt("T", b"x", queue_offset=2)
    assert first != Message("T", b"x")


def test_should_print_message_queue_as_rocketmq_to_string() -> None:
    queue = MessageQueue("TopicTest", "broker-a", 2)
    assert str(queue) == "MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=2]"


def test_should_order_message_queues_as_rocketmq_compare_to() -> None:
    queues = [
        MessageQueue("B", "a", 0),
        MessageQueue("A", "b", 1),
        MessageQueue("A", "b", 0),
        MessageQueue("A", "a", 10),
        MessageQueue("A", "a", 9),
    ]
    assert sorted(queues) == [
        MessageQueue("A", "a", 9),
        MessageQueue("A", "a", 10),
        MessageQueue("A", "b", 0),
        MessageQueue("A", "b", 1),
        MessageQueue("B", "a", 0),
    ]
    assert MessageQueue("T", "\U0001f600", 0) < MessageQueue("T", "\ue000", 0)  # Java order
    assert MessageQueue("A", "a", 1) <= MessageQueue("A", "a", 1) >= MessageQueue("A", "a", 0)
    assert MessageQueue("B", "a", 0) > MessageQueue("A", "z", 9)


def test_should_hash_and_freeze_message_queues() -> None:
    queue = MessageQueue("T", "b", 0)
    assert {queue: 1}[MessageQueue("T", "b", 0)] == 1
    with pytest.raises(AttributeError):
        queue.queue_id = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        _ = queue < ("T", "b", 0)


def test_should_give_a_plain_message_the_same_properties_as_one_built_field_by_field() -> None:
    plain = Message("T", b"x")
    spelled = Message("T", b"x", tags=None, keys=(), properties={}, flag=0, wait_store_msg_ok=True)
    assert dict(plain.properties) == dict(spelled.properties) == {"WAIT": "true"}
    assert plain == spelled
    plain.put_system_property("UNIQ_KEY", "U")  # each message has its own dict
    assert Message("T", b"x").uniq_id is None and plain.uniq_id == "U"


def test_should_refuse_a_flag_outside_32_bits_but_take_any_inside() -> None:
    assert Message("T", b"x", flag=-(2**31)).flag == -(2**31)
    with pytest.raises(MessageIllegalError, match="flag"):
        Message("T", b"x", flag=2**31)


def test_should_check_a_tag_once_and_refuse_a_bad_one_every_time() -> None:
    assert Message("T", b"x", tags="Seen").tags == Message("T", b"y", tags="Seen").tags == "Seen"
    for _ in range(2):  # a refused tag is never remembered as checked
        with pytest.raises(MessageIllegalError, match="whitespace"):
            Message("T", b"x", tags="a b")
