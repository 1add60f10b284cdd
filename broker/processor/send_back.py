"""``SendBackProcessor``: RocketMQ's ``CONSUMER_SEND_MSG_BACK``, a consumer's failed message
written to its group's retry topic with a back-off, or to its dead-letter topic.

A send-back names the message by its commit log offset (as RocketMQ's does: a retried message
is found wherever it is stored, in its first topic or in the retry topic). The broker reads it,
and writes a copy:

- to ``%RETRY%<group>`` (one queue, created on first use or by :meth:`create_retry_topic`) with
  ``reconsume_times + 1``, the ``DELAY`` level ``delay_level`` (0: RocketMQ's back-off,
  ``3 + reconsume_times``: 10 s, 30 s, 1 min, ...; the broker's timer holds it back that long)
  and ``MAX_RECONSUME_TIMES``;
- to ``%DLQ%<group>`` (one queue) once its reconsume times reach ``max_reconsume_times``
  (0: 16), or when ``delay_level`` is negative (the orderly consumer's give-up).

Both copies keep ``RETRY_TOPIC`` (the topic it first came from) and ``ORIGIN_MESSAGE_ID`` (the
offset id of its first stored copy), body, tags, keys and born time. The consumer acks the
original by moving its offset past it. :func:`put_copy` is also the dead-letter admin's re-send.

Caller: the control plane (``ControlPlane.consumer_send_back``, gRPC threads). Affects: the
store (one put per send-back, under the store's own flush rule) and its topics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass

from aeromq.broker._errors import CorruptRecordError, InvalidArgumentError, StoreError
from aeromq.broker.processor.consumer_groups import check_group_name
from aeromq.broker.processor.topics import TopicExistsError, TopicProcessor
from aeromq.broker.store import InboundMessage, MessageStore, StoredMessage
from aeromq.common import (
    DEFAULT_MAX_RECONSUME_TIMES,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    back_off_delay_level,
    dlq_topic,
    retry_topic,
)
from aeromq.proto import common_pb2

__all__ = ["SendBackProcessor", "StoredCopy", "put_copy"]


@dataclass(frozen=True, slots=True)
class StoredCopy:
    """Where a copy went, and its reconsume times."""

    topic: str
    queue_id: int
    queue_offset: int
    reconsume_times: int


def put_copy(
    store: MessageStore,
    topic: str,
    queue_id: int,
    message: StoredMessage,
    properties: Mapping[str, str],
    reconsume_times: int,
) -> StoredCopy:
    """Write a copy of ``message`` to ``topic``'s queue with ``properties`` (replacing its
    own) and ``reconsume_times``; raises ``StoreError`` when the store refuses it (``status`` says why)."""
    result = store.put_message(
        InboundMessage(
            topic,
            queue_id,
            message.body,
            dict(properties),
            flag=message.flag,
            born_timestamp_ms=message.born_timestamp_ms,
            born_host=message.born_host,
            reconsume_times=reconsume_times,
        )
    )
    if not result.ok:
        raise StoreError("the store refused the copy", topic=topic, status=result.status.value)
    return StoredCopy(topic, queue_id, result.queue_offset, reconsume_times)


class SendBackProcessor:
    """See the module. ``topics`` creates the retry and dead-letter topics (one queue each)."""

    def __init__(self, store: MessageStore, topics: TopicProcessor) -> None:
        self._store = store
        self._topics = topics

    def create_retry_topic(self, group: str) -> str:
        """Create ``%RETRY%<group>`` with one queue unless it exists; its name."""
        check_group_name(group)
        topic = retry_topic(group)
        self._ensure(topic)
        return topic

    def send_back(
        self,
        group: str,
        commit_log_offset: int,
        delay_level: int,
        max_reconsume_times: int,
        topic: str = "",
    ) -> StoredCopy:
        """Write the message stored at ``commit_log_offset`` to the group's retry topic, or its
        dead-letter topic (see the module); where the copy went. ``topic`` (when given) must
        be the message's stored topic: InvalidArgumentError otherwise."""
        check_group_name(group)
        try:
            message = self._store.look_message_by_offset(commit_log_offset)
        except CorruptRecordError as exc:
            raise InvalidArgumentError(
                "no stored message at this commit log offset",
                group=group,
                commit_log_offset=commit_log_offset,
            ) from exc
        if topic and message.topic != topic:
            raise InvalidArgumentError(
                "the message at this commit log offset is of another topic",
                commit_log_offset=commit_log_offset,
                topic=topic,
                stored_topic=message.topic,
            )
        maximum = max_reconsume_times if max_reconsume_times > 0 else DEFAULT_MAX_RECONSUME_TIMES
        reconsume = message.reconsume_times
        properties = dict(message.properties)
        properties.pop(PROPERTY_DELAY_TIME_LEVEL, None)
        properties.setdefault(PROPERTY_RETRY_TOPIC, message.topic)
        properties.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, message.message_id)
        properties[PROPERTY_RECONSUME_TIME] = str(reconsume + 1)
        properties[PROPERTY_MAX_RECONSUME_TIMES] = str(maximum)
        if delay_level < 0 or reconsume >= maximum:
            target = dlq_topic(group)
        else:
            target = retry_topic(group)
            level = delay_level if delay_level > 0 else back_off_delay_level(reconsume)
            properties[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        self._ensure(target)
        return put_copy(self._store, target, 0, message, properties, reconsume + 1)

    def _ensure(self, topic: str) -> None:
        if self._store.topic_config.get(topic) is not None:
            return
        config = common_pb2.TopicConfig(topic_name=topic, read_queue_nums=1, write_queue_nums=1)
        with contextlib.suppress(TopicExistsError):  # created meanwhile
            self._topics.create(config)
