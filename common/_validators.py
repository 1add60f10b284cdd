"""Validation of names and message parts, with RocketMQ's rules (``Validators``,
``TopicValidator``, ``MessageConst``).

- Topics: not blank, at most :data:`TOPIC_MAX_LENGTH` characters, only ``^[%|a-zA-Z0-9_-]+$``;
  the broker's internal topics in :data:`NOT_ALLOWED_SEND_TOPICS` cannot be sent to.
  :func:`is_valid_topic_name` is the same rule as a predicate, for the broker (which raises
  errors of its own) and for the hot paths.
- Groups: the same characters, at most :data:`GROUP_MAX_LENGTH` (:func:`is_valid_group_name`).
- Bodies: not empty, at most the producer's maximum message size
  (:data:`DEFAULT_MAX_MESSAGE_SIZE`).
- User properties: the names in :data:`~common.RESERVED_PROPERTY_NAMES` belong to the system;
  names and values are not blank and do not contain the two separators of the stored property
  string (:mod:`common._properties`).
- Tags and keys (stricter than RocketMQ, which accepts anything and then cannot match it): a tag
  has no whitespace and no ``|`` so that a tag expression can name it; a key has no whitespace,
  since keys are stored joined by spaces.

Each check raises :class:`~common.IllegalArgumentError` (a ``ValueError``) or, for the parts of
a message, :class:`~common.MessageIllegalError`, naming the value as ``key=value``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from aeromq.common._errors import IllegalArgumentError, MessageIllegalError, MessageTooLargeError
from aeromq.common._properties import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    RESERVED_PROPERTY_NAMES,
)

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "GROUP_MAX_LENGTH",
    "NOT_ALLOWED_SEND_TOPICS",
    "SYSTEM_TOPICS",
    "SYSTEM_TOPIC_PREFIX",
    "TOPIC_MAX_LENGTH",
    "VALID_NAME_PATTERN",
    "check_body",
    "check_group",
    "check_key",
    "check_topic",
    "check_topic_sendable",
    "check_user_property",
    "is_system_topic",
    "is_valid_group_name",
    "is_valid_topic_name",
    "tag_problem",
]

TOPIC_MAX_LENGTH: Final = 127
GROUP_MAX_LENGTH: Final = 255
DEFAULT_MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
"""The largest body a producer sends and a broker takes unless configured otherwise."""
VALID_NAME_PATTERN: Final = "^[%|a-zA-Z0-9_-]+$"
_VALID_NAME_CHARS = frozenset("%|_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_VALID_NAME = re.compile(r"[%|a-zA-Z0-9_-]+")
_VALID_TAG = re.compile(r"[^|\s\x01\x02]+")
_VALID_KEY = re.compile(r"[^\s\x01\x02]+")

SYSTEM_TOPIC_PREFIX = "rmq_sys_"
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "SCHEDULE_TOPIC_XXXX_V2",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "%AEROMQ_META%",  # a broker group's topic configs and offsets (docs/replication.md)
    }
)
SYSTEM_TOPICS = NOT_ALLOWED_SEND_TOPICS | {"TBW102", "BenchmarkTest", "RMQ_SYS_TRACE_TOPIC"}


def _check_name(kind: str, name: object, max_length: int) -> None:
    if isinstance(name, str) and len(name) <= max_length and _VALID_NAME.fullmatch(name):
        return
    named: dict[str, Any] = {kind: name}  # keyword arguments of the error
    if not isinstance(name, str):
        raise IllegalArgumentError(f"the {kind} must be a str", **named)
    if not name or name.isspace():
        raise IllegalArgumentError(f"the {kind} is blank", **named)
    if len(name) > max_length:
        raise IllegalArgumentError(
            f"the {kind} is longer than {max_length} characters", **named, length=len(name)
        )
    for position, char in enumerate(name):
        if char not in _VALID_NAME_CHARS:
            raise IllegalArgumentError(
                f"the {kind} contains an illegal character, allowing only {VALID_NAME_PATTERN}",
                **named,
                char=char,
                position=position,
            )


def is_valid_topic_name(topic: object) -> bool:
    """Whether ``topic`` follows the topic name rule (what :func:`check_topic` accepts)."""
    return (
        isinstance(topic, str)
        and len(topic) <= TOPIC_MAX_LENGTH
        and _VALID_NAME.fullmatch(topic) is not None
    )


def is_valid_group_name(group: object) -> bool:
    """Whether ``group`` follows the group name rule (what :func:`check_group` accepts)."""
    return (
        isinstance(group, str)
        and len(group) <= GROUP_MAX_LENGTH
        and _VALID_NAME.fullmatch(group) is not None
    )


def check_topic(topic: object) -> None:
    """RocketMQ's ``Validators.checkTopic``: blank, then length, then characters."""
    _check_name("topic", topic, TOPIC_MAX_LENGTH)


def check_group(group: object) -> None:
    """RocketMQ's ``Validators.checkGroup``: blank, then length, then characters."""
    _check_name("group", group, GROUP_MAX_LENGTH)


MARKER_GROUP_PREFIX: Final = "aeromq-sink-"
"""Groups whose offsets are markers, not read positions: the Spark sink records a streaming
query's completed micro-batches as the offset of group ``aeromq-sink-<queryId>`` on queue 0 of
its topic (``batch id + 1``), whatever that queue holds; the broker does not bound such an offset
by the queue's max offset, as it does a consumer's (:func:`is_marker_group`)."""


def is_marker_group(group: str) -> bool:
    """Whether ``group``'s offsets are markers (:data:`MARKER_GROUP_PREFIX`), not read
    positions."""
    return group.startswith(MARKER_GROUP_PREFIX)


def is_system_topic(topic: str) -> bool:
    """A topic the broker uses for itself (RocketMQ's ``TopicValidator.isSystemTopic``)."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def check_topic_sendable(topic: str) -> None:
    """Reject the broker's internal topics that no client may send to."""
    if topic in NOT_ALLOWED_SEND_TOPICS:
        raise IllegalArgumentError("sending to this system topic is forbidden", topic=topic)


def check_body(body: bytes, max_message_size: int | None = DEFAULT_MAX_MESSAGE_SIZE) -> None:
    """A body is not empty and at most ``max_message_size`` bytes (None: no size limit)."""
    if not body:
        raise MessageIllegalError("the message body is empty", body_length=0)
    if max_message_size is not None and len(body) > max_message_size:
        raise MessageTooLargeError(
            "the message body is over the maximum message size",
            body_length=len(body),
            max_message_size=max_message_size,
        )


def _separator_in(text: str) -> bool:
    return NAME_VALUE_SEPARATOR in text or PROPERTY_SEPARATOR in text


def check_user_property(name: object, value: object) -> None:
    """A user property: str name and value, not blank, not reserved, no separator characters."""
    if not isinstance(name, str) or not isinstance(value, str):
        raise MessageIllegalError("property names and values must be str", name=name, value=value)
    if name in RESERVED_PROPERTY_NAMES:
        raise MessageIllegalError("the property name is reserved for the system", name=name)
    if not name.strip() or not value.strip():
        raise MessageIllegalError(
            "property names and values must not be blank", name=name, value=value
        )
    if _separator_in(name) or _separator_in(value):
        raise MessageIllegalError(
            "property names and values must not contain \\x01 or \\x02", name=name, value=value
        )


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be a message tag, or None when it can."""
    if _VALID_TAG.fullmatch(tag):
        return None
    if not tag:
        return "a tag must not be empty"
    if "|" in tag:
        return "a tag must not contain '|'"
    if any(char.isspace() for char in tag):
        return "a tag must not contain whitespace"
    return "a tag must not contain \\x01 or \\x02"


def check_key(key: object) -> None:
    """A message key: a non-empty str without whitespace or separator characters."""
    if not isinstance(key, str):
        raise MessageIllegalError("a key must be a str", key=key)
    if not _VALID_KEY.fullmatch(key):
        raise MessageIllegalError(
            "a key must be non-empty, without whitespace, \\x01 or \\x02", key=key
        )
