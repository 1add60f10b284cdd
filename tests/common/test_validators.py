from __future__ import annotations

import pytest

from aeromq.client import IllegalArgumentError, MessageIllegalError, MessageTooLargeError
from aeromq.common import (
    DEFAULT_MAX_MESSAGE_SIZE,
    RESERVED_PROPERTY_NAMES,
    check_body,
    check_group,
    check_key,
    check_topic,
    check_topic_sendable,
    check_user_property,
    is_system_topic,
    tag_problem,
)


def test_should_accept_every_allowed_topic_character() -> None:
    check_topic("%RETRY%group|a-Z_09")
    check_topic("T" * 127)


@pytest.mark.parametrize(
    ("topic", "message"),
    [
        ("", "the topic is blank: topic=''"),
        ("   ", "the topic is blank: topic='   '"),
        (
            "T" * 128,
            f"the topic is longer than 127 characters: topic='{'T' * 128}' length=128",
        ),
        (
            "Topic A",
            "the topic contains an illegal character, allowing only ^[%|a-zA-Z0-9_-]+$: "
            "topic='Topic A' char=' ' position=5",
        ),
        (
            "Topic.A",
            "the topic contains an illegal character, allowing only ^[%|a-zA-Z0-9_-]+$: "
            "topic='Topic.A' char='.' position=5",
        ),
        (
            "T\u00e9",
            "the topic contains an illegal character, allowing only ^[%|a-zA-Z0-9_-]+$: "
            "topic='T\u00e9' char='\u00e9' position=1",
        ),
        (None, "the topic must be a str: topic=None"),
    ],
)
def test_should_reject_bad_topics_with_their_reason(topic: object, message: str) -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        check_topic(topic)
    assert str(raised.value) == message


def test_should_check_length_before_characters_as_rocketmq() -> None:
    with pytest.raises(IllegalArgumentError, match="longer than 127"):
        check_topic(" " + "T" * 127)


def test_should_check_groups_with_their_own_limit() -> None:
    check_group("G" * 255)
    with pytest.raises(IllegalArgumentError) as raised:
        check_group("G" * 256)
    assert str(raised.value).startswith("the group is longer than 255 characters")
    assert raised.value.length == 256  # type: ignore[attr-defined]
    with pytest.raises(IllegalArgumentError, match="the group is blank"):
        check_group("")


def test_should_forbid_sending_to_internal_topics_only() -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        check_topic_sendable("SCHEDULE_TOPIC_XXXX")
    assert str(raised.value) == (
        "sending to this system topic is forbidden: topic='SCHEDULE_TOPIC_XXXX'"
    )
    check_topic_sendable("TBW102")
    check_topic_sendable("rmq_sys_anything")


def test_should_recognise_system_topics() -> None:
    assert is_system_topic("TBW102")
    assert is_system_topic("RMQ_SYS_TRACE_TOPIC")
    assert is_system_topic("rmq_sys_wheel_timer")
    assert not is_system_topic("TopicTest")


def test_should_reject_an_empty_body_and_a_body_over_the_limit() -> None:
    with pytest.raises(MessageIllegalError) as raised:
        check_body(b"")
    assert str(raised.value) == "the message body is empty: body_length=0"
    check_body(b"x" * DEFAULT_MAX_MESSAGE_SIZE)
    with pytest.raises(MessageTooLargeError) as too_large:
        check_body(b"x" * 11, max_message_size=10)
    assert str(too_large.value) == (
        "the message body is over the maximum message size: body_length=11 max_message_size=10"
    )
    check_body(b"x" * (DEFAULT_MAX_MESSAGE_SIZE + 1), max_message_size=None)


def test_should_default_the_maximum_message_size_to_4_mib() -> None:
    assert DEFAULT_MAX_MESSAGE_SIZE == 4 * 1024 * 1024
    with pytest.raises(MessageTooLargeError):
        check_body(b"x" * (DEFAULT_MAX_MESSAGE_SIZE + 1))


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("TAGS", "x", "the property name is reserved for the system: name='TAGS'"),
        ("UNIQ_KEY", "x", "the property name is reserved for the system: name='UNIQ_KEY'"),
        (" ", "x", "property names and values must not be blank: name=' ' value='x'"),
        ("a", "", "property names and values must not be blank: name='a' value=''"),
        (
            "a\x01",
            "x",
            "property names and values must not contain \\x01 or \\x02: name='a\\x01' value='x'",
        ),
        (
            "a",
            "x\x02",
            "property names and values must not contain \\x01 or \\x02: name='a' value='x\\x02'",
        ),
        ("a", 1, "property names and values must be str: name='a' value=1"),
    ],
)
def test_should_reject_bad_user_properties(name: str, value: object, message: str) -> None:
    with pytest.raises(MessageIllegalError) as raised:
        check_user_property(name, value)
    assert str(raised.value) == message


def test_should_reserve_rocketmq_system_property_names() -> None:
    assert {"KEYS", "TAGS", "WAIT", "DELAY", "UNIQ_KEY", "__BORNHOST"} <= RESERVED_PROPERTY_NAMES
    assert len(RESERVED_PROPERTY_NAMES) == 47
    check_user_property("orderId", "42")


@pytest.mark.parametrize(
    ("tag", "problem"),
    [
        ("TagA", None),
        ("", "a tag must not be empty"),
        ("A|B", "a tag must not contain '|'"),
        ("Tag A", "a tag must not contain whitespace"),
        ("TagA\t", "a tag must not contain whitespace"),
        ("A\x02", "a tag must not contain \\x01 or \\x02"),
    ],
)
def test_should_say_why_a_tag_cannot_be_used(tag: str, problem: str | None) -> None:
    assert tag_problem(tag) == problem


def test_should_reject_keys_with_whitespace_or_empty() -> None:
    check_key("order-42")
    check_key("a|b")
    for key in ("", "a b", "a\x01"):
        with pytest.raises(MessageIllegalError, match="a key must be non-empty"):
            check_key(key)
    with pytest.raises(MessageIllegalError, match="a key must be a str"):
        check_key(42)
