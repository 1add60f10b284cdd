"""``Message``, ``MessageExt`` and ``MessageQueue``: RocketMQ's message model.

A :class:`Message` is what a producer sends: a topic, a body and string properties. Tags, keys
and the other system values live in the properties under reserved names (``TAGS``, ``KEYS``,
``WAIT``, ``UNIQ_KEY``, ...), as in RocketMQ, so the stored property string is the same (the names:
:mod:`common._properties`).
A :class:`MessageExt` is a message as the broker stored it (queue, offsets, hosts, times).
A :class:`MessageQueue` names one queue of a topic on one broker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from aeromq.common import (
    KEY_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    PROPERTY_WAIT_STORE_MSG_OK,
    RESERVED_PROPERTY_NAMES,
    MessageIllegalError,
    check_body,
    check_key,
    check_topic,
    check_topic_sendable,
    check_user_property,
    compare_key,
    encode_offset_message_id,
    tag_problem,
)

__all__ = [
    "HostAddress",
    "Message",
    "MessageExt",
    "MessageQueue",
]

_DELAY: Final = "DELAY"
_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
_TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
_MAX_DELAY_LEVEL: Final = 18

_CHECKED_TOPICS: set[str] = set()
_CHECKED_TOPICS_LIMIT = 10_000
_CHECKED_TAGS: set[str] = set()  # valid tags seen: a topic has few distinct tags
_CHECKED_TAGS_LIMIT = 10_000

HostAddress = tuple[str, int]
"""A host as ``(ip, port)``, the form of Python's socket addresses."""


@dataclass(frozen=True, slots=True)
class MessageQueue:
    """One queue of a topic on one broker; hashable, and ordered as RocketMQ's ``compareTo``
    (topic, then broker name, then queue id, strings in Java order).

    ``str()`` is RocketMQ's ``toString``, which consistent-hash allocation hashes.
    """

    topic: str
    broker_name: str
    queue_id: int

    def order_key(self) -> tuple[bytes, bytes, int]:
        """The key of RocketMQ's ``compareTo`` order: ``sorted(queues, key=MessageQueue.order_key)``
        computes it once per queue."""
        return compare_key(self.topic), compare_key(self.broker_name), self.queue_id

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.order_key() < other.order_key()

    def __le__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.order_key() <= other.order_key()

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.order_key() > other.order_key()

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self.order_key() >= other.order_key()

    def __str__(self) -> str:
        return (
            f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, "
            f"queueId={self.queue_id}]"
        )


class Message:
    """A message to send: ``Message(topic, body, tags=None, keys=(), properties={}, flag=0,
    wait_store_msg_ok=True, delivery_timestamp_ms=None, delay_level=0)``.

    A timer message is delivered at ``delivery_timestamp_ms`` (epoch milliseconds, RocketMQ 5's
    ``TIMER_DELIVER_MS``), or after RocketMQ 4's ``delay_level`` (1..18: 1 s, 5 s, 10 s, 30 s,
    1 m to 10 m, 20 m, 30 m, 1 h, 2 h; ``DELAY``): the broker stores it at once and lets
    consumers see it then (a time in the past: at once; beyond the broker's
    ``timer_max_delay_ms``: the send is refused). Set either, not both.

    Validated on construction: the topic (RocketMQ's rules, and not a broker-internal topic),
    a non-empty body, the tag (no whitespace or ``|``; None or ``""`` for no tag), the keys (a
    str is split on whitespace as RocketMQ's ``KEYS`` property; an iterable gives one key each)
    and every user property (not a reserved name, not blank). The body's size limit belongs to
    the producer (:func:`common.check_body`).
    """

    __slots__ = ("_properties", "body", "flag", "topic")

    topic: str
    body: bytes
    flag: int
    _properties: dict[str, str]

    def __init__(
        self,
        topic: str,
        body: bytes | bytearray | memoryview,
        tags: str | None = None,
        keys: str | Iterable[str] = (),
        properties: Mapping[str, str] | None = None,
        flag: int = 0,
        wait_store_msg_ok: bool = True,
        delivery_timestamp_ms: int | None = None,
        delay_level: int = 0,
    ) -> None:
        if topic not in _CHECKED_TOPICS:  # a valid, sendable topic is checked once
            check_topic(topic)
            check_topic_sendable(topic)
            if len(_CHECKED_TOPICS) < _CHECKED_TOPICS_LIMIT:
                _CHECKED_TOPICS.add(topic)
        if type(body) is not bytes:
            if not isinstance(body, bytes | bytearray | memoryview):
                raise MessageIllegalError("the message body must be bytes", body_type=type(body))
            body = bytes(body)
        if not body:
            check_body(body, max_message_size=None)  # raises: the body is empty
        if delay_level and delivery_timestamp_ms is not None:
            raise MessageIllegalError(
                "a message takes a delivery timestamp or a delay level, not both",
                delivery_timestamp_ms=delivery_timestamp_ms,
                delay_level=delay_level,
            )
        if flag and not -(2**31) <= flag < 2**31:
            raise MessageIllegalError("the flag must fit in a signed 32-bit int", flag=flag)
        self.topic = topic
        self.body = body
        self.flag = flag
        if not (tags or keys or properties or delay_level) and wait_store_msg_ok:
            self._properties = {PROPERTY_WAIT_STORE_MSG_OK: "true"}  # the common case
            if delivery_timestamp_ms is not None:
                self.delivery_timestamp_ms = delivery_timestamp_ms
            return
        self._properties = {}
        if tags:
            if tags not in _CHECKED_TAGS:
                problem = tag_problem(tags)
                if problem is not None:
                    raise MessageIllegalError(problem, tags=tags)
                if len(_CHECKED_TAGS) < _CHECKED_TAGS_LIMIT:
                    _CHECKED_TAGS.add(tags)
            self._properties[PROPERTY_TAGS] = tags
        if keys:
            key_list = keys.split() if isinstance(keys, str) else list(keys)
            for key in key_list:
                check_key(key)
            if key_list:
                self._properties[PROPERTY_KEYS] = KEY_SEPARATOR.join(key_list)
        self._properties[PROPERTY_WAIT_STORE_MSG_OK] = "true" if wait_store_msg_ok else "false"
        if properties:
            for name, value in properties.items():
                self.put_user_property(name, value)
        if delivery_timestamp_ms is not None:
            self.delivery_timestamp_ms = delivery_timestamp_ms
        if delay_level:
            self.delay_level = delay_level

    @property
    def tags(self) -> str | None:
        """The message's tag, or None."""
        return self._properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> tuple[str, ...]:
        """The message's keys (the ``KEYS`` property split on spaces)."""
        return tuple(self._properties.get(PROPERTY_KEYS, "").split())

    @property
    def wait_store_msg_ok(self) -> bool:
        """Whether a send waits for the store (``WAIT``; true when absent, as RocketMQ)."""
        return self._properties.get(PROPERTY_WAIT_STORE_MSG_OK, "true").lower() == "true"

    @property
    def uniq_id(self) -> str | None:
        """The producer-made unique id (``UNIQ_KEY``), once the producer has set it."""
        return self._properties.get(PROPERTY_UNIQ_KEY)

    @property
    def delivery_timestamp_ms(self) -> int | None:
        """When a timer message is delivered, epoch milliseconds (``TIMER_DELIVER_MS``); None
        for one sent at once. Setting it clears :attr:`delay_level`; None clears it."""
        text = self._properties.get(_TIMER_DELIVER_MS)
        return None if text is None else int(text)

    @delivery_timestamp_ms.setter
    def delivery_timestamp_ms(self, value: int | None) -> None:
        if value is None:
            self._properties.pop(_TIMER_DELIVER_MS, None)
            return
        if type(value) is not int or value < 0:
            raise MessageIllegalError(
                "the delivery timestamp must be epoch milliseconds, an int >= 0",
                delivery_timestamp_ms=value,
            )
        self._properties.pop(_DELAY, None)
        self._properties.pop(_TIMER_DELAY_SEC, None)
        self._properties[_TIMER_DELIVER_MS] = str(value)

    @property
    def delay_level(self) -> int:
        """RocketMQ 4's delay level (``DELAY``, 1..18), 0 for none. Setting it (0 clears it)
        clears :attr:`delivery_timestamp_ms`."""
        return int(self._properties.get(_DELAY, "0"))

    @delay_level.setter
    def delay_level(self, level: int) -> None:
        if type(level) is not int or not 0 <= level <= _MAX_DELAY_LEVEL:
            raise MessageIllegalError(
                f"the delay level must be an int 0..{_MAX_DELAY_LEVEL}", delay_level=level
            )
        if not level:
            self._properties.pop(_DELAY, None)
            return
        self._properties.pop(_TIMER_DELIVER_MS, None)
        self._properties.pop(_TIMER_DELAY_SEC, None)
        self._properties[_DELAY] = str(level)

    @property
    def properties(self) -> Mapping[str, str]:
        """All properties, system and user, read-only."""
        return MappingProxyType(self._properties)

    def get_property(self, name: str) -> str | None:
        """The property ``name`` (system or user), None when the message has none."""
        return self._properties.get(name)

    def put_user_property(self, name: str, value: str) -> None:
        """Set a user property; reserved names, blank names or values raise."""
        check_user_property(name, value)
        self._properties[name] = value

    def put_system_property(self, name: str, value: str) -> None:
        """Set a reserved property (for the producer, consumer and broker, e.g. ``UNIQ_KEY``)."""
        if name not in RESERVED_PROPERTY_NAMES:
            raise MessageIllegalError("not a reserved property name", name=name)
        self._properties[name] = value

    def _eq_key(self) -> tuple[object, ...]:
        return (self.topic, self.flag, self._properties, self.body)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message) or type(other) is not type(self):
            return NotImplemented
        return self._eq_key() == other._eq_key()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(topic={self.topic!r}, tags={self.tags!r}, "
            f"keys={self.keys!r}, body_length={len(self.body)})"
        )


class MessageExt(Message):
    """A message as the broker stored it. Not validated: it carries what the store holds.

    Times are epoch milliseconds; hosts are ``(ip, port)``. :attr:`offset_msg_id` is computed
    from the store host and commit log offset; :attr:`msg_id` is the producer's unique id when
    the message has one, else the offset id (RocketMQ's ``MessageClientExt.getMsgId``).
    """

    __slots__ = (
        "_value",
        "born_host",
        "born_timestamp_ms",
        "broker_name",
        "commit_log_offset",
        "queue_id",
        "queue_offset",
        "reconsume_times",
        "store_host",
        "store_size",
        "store_timestamp_ms",
        "sys_flag",
    )

    def __init__(
        self,
        topic: str,
        body: bytes,
        properties: Mapping[str, str] | None = None,
        *,
        flag: int = 0,
        broker_name: str = "",
        queue_id: int = 0,
        queue_offset: int = 0,
        commit_log_offset: int = 0,
        store_size: int = 0,
        sys_flag: int = 0,
        born_timestamp_ms: int = 0,
        born_host: HostAddress = ("0.0.0.0", 0),
        store_timestamp_ms: int = 0,
        store_host: HostAddress = ("0.0.0.0", 0),
        reconsume_times: int = 0,
    ) -> None:
        self.topic = topic
        self.body = body
        self.flag = flag
        self._properties = dict(properties) if properties else {}
        self.broker_name = broker_name
        self.queue_id = queue_id
        self.queue_offset = queue_offset
        self.commit_log_offset = commit_log_offset
        self.store_size = store_size
        self.sys_flag = sys_flag
        self.born_timestamp_ms = born_timestamp_ms
        self.born_host = born_host
        self.store_timestamp_ms = store_timestamp_ms
        self.store_host = store_host
        self.reconsume_times = reconsume_times

    @property
    def queue(self) -> MessageQueue:
        """The queue the message was stored in: its topic, ``broker_name`` and ``queue_id``
        (the key of ``seek``, ``commit`` and ``position``)."""
        return MessageQueue(self.topic, self.broker_name, self.queue_id)

    @property
    def value(self) -> Any:  # Any: the application's deserializer says what
        """The body as the consumer's ``value_deserializer`` made it; the body itself when
        the consumer has none (kafka-python's ``ConsumerRecord.value``)."""
        try:
            return self._value
        except AttributeError:
            return self.body

    @value.setter
    def value(self, value: object) -> None:
        self._value = value

    @property
    def offset_msg_id(self) -> str:
        """RocketMQ's offset message id: store host and commit log offset, hex."""
        host, port = self.store_host
        return encode_offset_message_id(host, port, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """The producer's unique id (``UNIQ_KEY``) when the message has one, else
        :attr:`offset_msg_id`."""
        return self._properties.get(PROPERTY_UNIQ_KEY) or self.offset_msg_id

    def _eq_key(self) -> tuple[object, ...]:
        return (
            *Message._eq_key(self),
            self.broker_name,
            self.queue_id,
            self.queue_offset,
            self.commit_log_offset,
            self.store_size,
            self.sys_flag,
            self.born_timestamp_ms,
            self.born_host,
            self.store_timestamp_ms,
            self.store_host,
            self.reconsume_times,
        )

    def __repr__(self) -> str:
        return (
            f"MessageExt(topic={self.topic!r}, broker_name={self.broker_name!r}, "
            f"queue_id={self.queue_id}, queue_offset={self.queue_offset}, tags={self.tags!r}, "
            f"body_length={len(self.body)})"
        )
