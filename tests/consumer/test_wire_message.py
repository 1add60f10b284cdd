from __future__ import annotations

from aeromq.client import MessageExt, MessageQueue, build_subscription_data
from aeromq.consumer._broker_api import ConsumerHeartbeat
from aeromq.consumer._grpc_broker_api import heartbeat_request
from aeromq.consumer._wire_message import WireMessageExt, parse_host
from aeromq.consumer.config import ConsumeFromWhere, MessageModel
from aeromq.proto import admin_pb2, consumer_group_pb2, messages_pb2


def wire(**changes: object) -> messages_pb2.MessageExt:
    values: dict[str, object] = {
        "topic": "T",
        "body": b"payload",
        "tags": "TagA",
        "keys": ["k1", "k2"],
        "queue_id": 2,
        "queue_offset": 41,
        "commit_log_offset": 9000,
        "store_size": 150,
        "born_timestamp_ms": 1000,
        "born_host": "10.0.0.1:5000",
        "store_timestamp_ms": 2000,
        "store_host": "10.0.0.2:10911",
        "msg_id": "UNIQUE",
        "offset_msg_id": "OFFSETID",
        "broker_name": "broker-a",
        "reconsume_times": 1,
        "flag": 3,
        "sys_flag": 4,
    }
    values.update(changes)
    message = messages_pb2.MessageExt(**values)  # type: ignore[arg-type]
    message.properties["color"] = "red"
    return message


def test_should_read_every_field_from_the_wire() -> None:
    message = WireMessageExt.wrap(wire(), "fallback")
    assert (message.topic, message.body, message.flag, message.sys_flag) == ("T", b"payload", 3, 4)
    assert message.queue == MessageQueue("T", "broker-a", 2)
    assert (message.queue_offset, message.commit_log_offset, message.store_size) == (41, 9000, 150)
    assert message.born_host == ("10.0.0.1", 5000)
    assert message.store_host == ("10.0.0.2", 10911)
    assert (message.born_timestamp_ms, message.store_timestamp_ms) == (1000, 2000)
    assert message.reconsume_times == 1
    assert message.tags == "TagA"
    assert message.keys == ("k1", "k2")
    assert message.msg_id == "UNIQUE"
    assert message.uniq_id == "UNIQUE"
    assert message.offset_msg_id == "OFFSETID"
    assert dict(message.properties) == {
        "color": "red",
        "TAGS": "TagA",
        "KEYS": "k1 k2",
        "UNIQ_KEY": "UNIQUE",
    }


def test_should_not_invent_a_unique_id_when_the_message_has_none() -> None:
    message = WireMessageExt.wrap(wire(msg_id="OFFSETID", tags="", keys=[]), "b")
    assert message.uniq_id is None
    assert message.msg_id == "OFFSETID"
    assert message.tags is None
    assert "TAGS" not in message.properties


def test_should_take_the_broker_name_of_the_session_when_the_wire_has_none() -> None:
    assert WireMessageExt.wrap(wire(broker_name=""), "broker-b").broker_name == "broker-b"


def test_should_equal_a_plain_message_ext_with_the_same_fields() -> None:
    message = WireMessageExt.wrap(wire(), "b")
    plain = MessageExt(
        "T",
        b"payload",
        dict(message.properties),
        flag=3,
        broker_name="broker-a",
        queue_id=2,
        queue_offset=41,
        commit_log_offset=9000,
        store_size=150,
        sys_flag=4,
        born_timestamp_ms=1000,
        born_host=("10.0.0.1", 5000),
        store_timestamp_ms=2000,
        store_host=("10.0.0.2", 10911),
        reconsume_times=1,
    )
    assert message == plain
    assert plain == message
    plain.queue_offset = 42
    assert message != plain


def test_should_keep_a_value_set_locally() -> None:
    message = WireMessageExt.wrap(wire(), "b")
    message.queue_offset = 7
    message.put_user_property("size", "L")
    assert message.queue_offset == 7
    assert message.get_property("size") == "L"


def test_should_parse_hosts() -> None:
    assert parse_host("127.0.0.1:80") == ("127.0.0.1", 80)
    assert parse_host("[::1]:9") == ("::1", 9)
    assert parse_host("nohost") == ("nohost", 0)


def test_should_describe_the_consumer_in_its_heartbeat() -> None:
    heartbeat = ConsumerHeartbeat(
        "ip@1",
        "group",
        MessageModel.BROADCASTING,
        ConsumeFromWhere.TIMESTAMP,
        (build_subscription_data("T", "A || B"),),
    )
    request = heartbeat_request(heartbeat)
    assert request.client_id == "ip@1"
    (data,) = request.consumers
    assert data.consumer_group == "group"
    assert data.consume_type == consumer_group_pb2.CONSUME_ACTIVELY
    assert data.message_model == admin_pb2.BROADCASTING
    assert data.consume_from_where == consumer_group_pb2.CONSUME_FROM_TIMESTAMP
    assert [(s.topic, s.sub_expression) for s in data.subscriptions] == [("T", "A || B")]
