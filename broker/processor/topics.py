"""Topics: create, update, delete and list (RocketMQ's ``UPDATE_AND_CREATE_TOPIC``,
``DELETE_TOPIC_IN_BROKER``, ``GET_ALL_TOPIC_CONFIG``), over the store's topic config.

Requests and answers are protobuf (``proto/common.proto`` ``TopicConfig``); failures raise the
broker's typed errors, which :mod:`broker.processor.admin` turns into response statuses.

Caller: the admin facade (gRPC and any other carrier), the send path (``ensure_topic`` when
auto-create is on) and the route processor. Affects: ``store.topic_config`` (persisted on every
change), and on delete the topic's consume queues and committed offsets; in a broker group each
change is a record of the group's log (``MessageStore.update_topic_config``, ``remove_topic``),
answered once committed and applied by every member. Listeners added with
``add_listener`` run after every change (the name server registrar re-registers on them).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from aeromq.broker._errors import InvalidArgumentError, UnknownTopicError
from aeromq.broker.processor.leadership import require_committed
from aeromq.broker.store import MessageStore, TopicConfig, TopicFilterType
from aeromq.common import PERM_READ_WRITE, ResponseCode, is_system_topic
from aeromq.proto import common_pb2

__all__ = [
    "TopicChangeListener",
    "TopicExistsError",
    "TopicProcessor",
    "check_not_system_topic",
    "topic_config_from_proto",
    "topic_config_to_proto",
]

_log = logging.getLogger(__name__)

TopicChangeListener = Callable[[str], None]
"""``listener(topic)``: called after ``topic`` was created, updated or deleted."""


class TopicExistsError(InvalidArgumentError):
    """A create of a topic the broker already holds (RocketMQ's ``TOPIC_EXIST_ALREADY``)."""

    code = ResponseCode.TOPIC_EXIST_ALREADY


def check_not_system_topic(topic: str) -> None:
    """``InvalidArgumentError`` for a name the broker's system topics take (``TBW102``,
    ``SCHEDULE_TOPIC_XXXX``, ``rmq_sys_*``, ...: :func:`common.is_system_topic`)."""
    if is_system_topic(topic):
        raise InvalidArgumentError(
            "the name is a system topic's: an admin cannot create or change it", topic=topic
        )


def topic_config_to_proto(config: TopicConfig) -> common_pb2.TopicConfig:
    return common_pb2.TopicConfig(
        topic_name=config.topic_name,
        read_queue_nums=config.read_queue_nums,
        write_queue_nums=config.write_queue_nums,
        perm=config.perm,
        topic_filter_type=common_pb2.TopicFilterType.Value(config.topic_filter_type.value),
        topic_sys_flag=config.topic_sys_flag,
        order=config.order,
    )


def topic_config_from_proto(
    message: common_pb2.TopicConfig, default_queue_count: int
) -> TopicConfig:
    """The store's ``TopicConfig`` of ``message``; queue counts 0 take ``default_queue_count``
    and perm 0 takes READ|WRITE (a topic nobody can use is never what a request means).
    ``InvalidArgumentError`` names a bad field."""
    read = message.read_queue_nums or default_queue_count
    write = message.write_queue_nums or default_queue_count
    try:
        filter_type = TopicFilterType(common_pb2.TopicFilterType.Name(message.topic_filter_type))
    except ValueError as exc:
        raise InvalidArgumentError(
            "unknown topic filter type", topic=message.topic_name, value=message.topic_filter_type
        ) from exc
    return TopicConfig(
        topic_name=message.topic_name,
        read_queue_nums=read,
        write_queue_nums=write,
        perm=message.perm or PERM_READ_WRITE,
        topic_filter_type=filter_type,
        topic_sys_flag=message.topic_sys_flag,
        order=message.order,
    )


class TopicProcessor:
    """Topic administration on ``store``; new topics get ``default_queue_count`` queues when a
    request leaves the counts 0."""

    def __init__(self, store: MessageStore, default_queue_count: int) -> None:
        self._store = store
        self._topics = store.topic_config
        self._replicated = store.config.replicated  # a group's changes go through its log
        self._default_queue_count = default_queue_count
        self._lock = threading.Lock()  # create-if-absent and delete are check-then-act
        self._listeners: list[TopicChangeListener] = []

    def add_listener(self, listener: TopicChangeListener) -> None:
        self._listeners = [*self._listeners, listener]

    def get(self, topic: str) -> TopicConfig | None:
        return self._topics.get(topic)

    def require(self, topic: str) -> TopicConfig:
        """The topic's config; ``UnknownTopicError`` when the broker does not hold it."""
        return self._topics.require(topic)

    def topics(self) -> list[TopicConfig]:
        """Every topic, sorted by name."""
        return self._topics.topics()

    def create(self, message: common_pb2.TopicConfig) -> TopicConfig:
        """Create a topic; ``TopicExistsError`` when it exists already, ``InvalidArgumentError``
        for a system topic's name (RocketMQ's ``TopicValidator.isSystemTopic``)."""
        check_not_system_topic(message.topic_name)
        config = topic_config_from_proto(message, self._default_queue_count)
        with self._lock:
            if self._topics.get(config.topic_name) is not None:
                raise TopicExistsError("topic exists already", topic=config.topic_name)
            self._save(config)
        self._changed(config.topic_name)
        return config

    def update(self, message: common_pb2.TopicConfig) -> TopicConfig:
        """Replace an existing topic's config; ``UnknownTopicError`` when there is none.
        Queue counts 0 keep the topic's current counts; a system topic is not changed here."""
        check_not_system_topic(message.topic_name)
        with self._lock:
            current = self._topics.require(message.topic_name)
            patched = common_pb2.TopicConfig()
            patched.CopyFrom(message)
            patched.read_queue_nums = message.read_queue_nums or current.read_queue_nums
            patched.write_queue_nums = message.write_queue_nums or current.write_queue_nums
            config = topic_config_from_proto(patched, self._default_queue_count)
            self._save(config)
        self._changed(config.topic_name)
        return config

    def ensure(self, topic: str) -> TopicConfig:
        """The topic's config, creating it with the default queue count when absent (the
        auto-create path: the caller checks that auto-create is on)."""
        found = self._topics.get(topic)
        if found is not None:
            return found
        with self._lock:
            found = self._topics.get(topic)
            if found is not None:
                return found
            config = TopicConfig(
                topic_name=topic,
                read_queue_nums=self._default_queue_count,
                write_queue_nums=self._default_queue_count,
            )
            self._save(config)
        _log.info("topic auto-created: topic=%s queues=%d", topic, self._default_queue_count)
        self._changed(topic)
        return config

    def delete(self, topic: str) -> int:
        """Delete a topic, its consume queues and every group's offsets on it; returns how
        many consume queues went. ``UnknownTopicError`` when there is no such topic."""
        with self._lock:
            if self._replicated:  # config and offsets through the log; queues go with retention
                self._topics.require(topic)
                require_committed(self._store.remove_topic(topic), "topic removal", topic=topic)
                self._changed(topic)
                return 0
            if not self._topics.delete(topic):
                raise UnknownTopicError("no such topic", topic=topic)
            removed = self._store.delete_topic(topic)
            offsets = self._store.consumer_offsets
            for group in offsets.groups_of(topic):
                offsets.remove(group, topic)
        self._changed(topic)
        return removed

    def _save(self, config: TopicConfig) -> None:
        """Create or replace a topic's config (in a group through its log, committed)."""
        if self._replicated:
            result = self._store.update_topic_config(config)
            require_committed(result, "topic config", topic=config.topic_name)
        else:
            self._topics.create_or_update(config)

    def _changed(self, topic: str) -> None:
        for listener in self._listeners:
            try:
                listener(topic)
            except Exception:  # a listener's failure must not fail the admin request
                _log.exception("topic change listener failed: topic=%s", topic)
