"""Consume retry for the consumers: send a failed message back to the broker (RocketMQ's
``sendMessageBack``), the group's retry topic, and retried messages' original topic restored.

- :class:`RetryBrokerApi`: the broker calls of consume retry and orderly locks (send-back, the
  retry topic, queue locks); :class:`GrpcRetryApi` makes them over the consumer's gRPC routes
  (to the broker that stores the message or queue, following a group's leader);
  :func:`retry_api_of` gives one for a consumer's :class:`~consumer.BrokerApi`.
- :class:`SendBack`: the lite pull consumer's ``send_back``: the message goes to
  ``%RETRY%<group>`` with RocketMQ's back-off (``DELAY`` = 3 + reconsume times: 10 s, 30 s,
  1 min, ...) or, after ``max_reconsume_times``, to ``%DLQ%<group>``; on its first send-back a
  subscribing (CLUSTERING) consumer subscribes to its group's retry topic, as RocketMQ's push
  consumer does from its start (``docs/push-consumer.md``).
- :func:`restore_original_topics`: a message polled from a retry topic gets the topic it
  first came from (its ``RETRY_TOPIC`` property) back, as RocketMQ's ``resetRetryAndNamespace``.

Caller: the lite pull consumer's façade and poller, the push consumer (``consumer.push``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from aeromq.client import IllegalArgumentError, MessageExt, MessageQueue, NotSupportedError
from aeromq.client.grpc_client import GrpcClient
from aeromq.common import (
    DEFAULT_MAX_RECONSUME_TIMES,
    PROPERTY_RETRY_TOPIC,
    is_retry_topic,
    retry_topic,
)
from aeromq.consumer._broker_api import BrokerApi
from aeromq.consumer._grpc_broker_api import GrpcBrokerApi
from aeromq.consumer.config import MessageModel, SubscriptionType
from aeromq.consumer.services import ConsumerServices

__all__ = [
    "GrpcRetryApi",
    "RetryBrokerApi",
    "SendBack",
    "SendBackMethod",
    "restore_original_topics",
    "retry_api_of",
    "stored_queue",
]

_T = TypeVar("_T")


@runtime_checkable
class RetryBrokerApi(Protocol):
    """The broker calls of consume retry and orderly locks (control calls: they block up to
    the request timeout and raise a :class:`~client.ClientError`)."""

    def send_back(
        self, consumer_group: str, message: MessageExt, delay_level: int, max_reconsume_times: int
    ) -> str:
        """Send ``message`` back for the group; the topic its copy went to."""
        ...

    def create_retry_topic(self, consumer_group: str, queues: Iterable[MessageQueue]) -> str:
        """Create the group's retry topic on the brokers of ``queues``; its name."""
        ...

    def lock_queues(
        self, consumer_group: str, client_id: str, queues: Iterable[MessageQueue]
    ) -> set[MessageQueue]:
        """Lock (or renew) ``queues`` for ``client_id``: those it holds now."""
        ...

    def unlock_queues(
        self, consumer_group: str, client_id: str, queues: Iterable[MessageQueue]
    ) -> None:
        """Let go of ``client_id``'s locks on ``queues``."""
        ...


class GrpcRetryApi:
    """:class:`RetryBrokerApi` over the routes of a :class:`GrpcBrokerApi`."""

    def __init__(self, api: GrpcBrokerApi) -> None:
        self._api = api

    def _call(self, queue: MessageQueue, call: Callable[[GrpcClient], _T]) -> _T:
        return self._api._call(queue, call)

    def send_back(
        self, consumer_group: str, message: MessageExt, delay_level: int, max_reconsume_times: int
    ) -> str:
        queue = stored_queue(message, consumer_group)
        answer = self._call(
            queue,
            lambda client: client.send_back(
                consumer_group,
                message.commit_log_offset,
                delay_level=delay_level,
                max_reconsume_times=max_reconsume_times,
                topic=queue.topic,
            ),
        )
        return answer.topic

    def create_retry_topic(self, consumer_group: str, queues: Iterable[MessageQueue]) -> str:
        topic = retry_topic(consumer_group)
        done: set[str] = set()
        for queue in queues:
            if queue.broker_name not in done:
                done.add(queue.broker_name)
                self._call(queue, lambda client: client.create_retry_topic(consumer_group))
        return topic

    def lock_queues(
        self, consumer_group: str, client_id: str, queues: Iterable[MessageQueue]
    ) -> set[MessageQueue]:
        locked: set[MessageQueue] = set()
        for (topic, broker), ids in _by_topic_and_broker(queues).items():
            call = functools.partial(_lock, consumer_group, client_id, topic, ids)
            granted = self._call(MessageQueue(topic, broker, ids[0]), call)
            locked.update(MessageQueue(topic, broker, queue_id) for queue_id in granted)
        return locked

    def unlock_queues(
        self, consumer_group: str, client_id: str, queues: Iterable[MessageQueue]
    ) -> None:
        for (topic, broker), ids in _by_topic_and_broker(queues).items():
            call = functools.partial(_unlock, consumer_group, client_id, topic, ids)
            self._call(MessageQueue(topic, broker, ids[0]), call)


def _lock(group: str, client_id: str, topic: str, ids: list[int], client: GrpcClient) -> list[int]:
    return client.lock_queues(group, client_id, topic, ids)


def _unlock(group: str, client_id: str, topic: str, ids: list[int], client: GrpcClient) -> None:
    client.unlock_queues(group, client_id, topic, ids)


def _by_topic_and_broker(queues: Iterable[MessageQueue]) -> dict[tuple[str, str], list[int]]:
    grouped: dict[tuple[str, str], list[int]] = {}
    for queue in queues:
        grouped.setdefault((queue.topic, queue.broker_name), []).append(queue.queue_id)
    return grouped


def retry_api_of(api: BrokerApi | None) -> RetryBrokerApi:
    """The retry calls for a consumer's broker API: over its gRPC routes, or the API itself
    when it makes them (a test broker). Raises NotSupportedError otherwise."""
    if isinstance(api, GrpcBrokerApi):
        return GrpcRetryApi(api)
    if isinstance(api, RetryBrokerApi):
        return api
    raise NotSupportedError("this broker API has no consume retry calls", api=type(api).__name__)


def stored_queue(message: MessageExt, group: str) -> MessageQueue:
    """The queue a polled message was stored in: its group's retry queue when it is a retried
    message (its topic was restored to the first one), else its own."""
    topic = message.topic
    if message.get_property(PROPERTY_RETRY_TOPIC) == topic:
        topic = retry_topic(group)
    return MessageQueue(topic, message.broker_name, message.queue_id)


def restore_original_topics(messages: Sequence[MessageExt]) -> Sequence[MessageExt]:
    """``messages`` with each message of a retry topic given its first topic back
    (``RETRY_TOPIC``). Caller: the poll of a chunk of one queue; a chunk of another topic costs
    one string compare and is returned as it is (a retry topic's is made a list: a pulled
    batch makes its message objects on each read)."""
    if not messages or not is_retry_topic(messages[0].topic):
        return messages
    restored = list(messages)
    for message in restored:
        origin = message.get_property(PROPERTY_RETRY_TOPIC)
        if origin:
            message.topic = origin
    return restored


class SendBack:
    """The lite pull consumer's ``send_back`` (see the module)."""

    def __init__(self, services: ConsumerServices, subscribe: Callable[[str, str], None]) -> None:
        self._services = services
        self._subscribe = subscribe

    def send_back(
        self,
        message: MessageExt,
        delay_level: int = 0,
        max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES,
    ) -> str:
        """Caller: ``DefaultLitePullConsumer.send_back``. Affects: the broker's retry or
        dead-letter topic; on the first call, the subscriptions (the group's retry topic).
        Returns the topic the copy went to. Raises IllegalStateError when not running,
        IllegalArgumentError for a bad level, a ClientError when the broker refuses."""
        services = self._services
        services.check_running()
        if max_reconsume_times < 1 or not -1 <= delay_level <= 18:
            raise IllegalArgumentError(
                "delay_level must be in [-1, 18] and max_reconsume_times >= 1",
                delay_level=delay_level,
                max_reconsume_times=max_reconsume_times,
            )
        group = services.config.consumer_group
        api = retry_api_of(services.require_api())
        topic = api.send_back(group, message, delay_level, max_reconsume_times)
        retry = retry_topic(group)
        if (
            topic == retry
            and services.subscription.type is SubscriptionType.SUBSCRIBE
            and services.config.message_model is MessageModel.CLUSTERING
            and retry not in services.subscription.subscriptions
        ):
            self._subscribe(retry, "*")
        return topic


class SendBackMethod:
    """``send_back`` of :class:`~consumer.DefaultLitePullConsumer` (its base, kept here so the
    façade stays short)."""

    _send_back: SendBack

    def send_back(
        self,
        message: MessageExt,
        delay_level: int = 0,
        max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES,
    ) -> str:
        """Hand a message the application failed to consume back to the broker (RocketMQ's
        ``sendMessageBack``): it comes again from the group's retry topic after the back-off
        (``delay_level`` 0: 3 + its reconsume times, so 10 s, 30 s, 1 min, ...; -1: straight
        to the dead-letter queue), or goes to ``%DLQ%<group>`` once it was reconsumed
        ``max_reconsume_times`` times. Caller: the application, after ``poll``; commit past
        the message as usual. Affects: on the first call a subscribing consumer subscribes to
        its group's retry topic (``docs/push-consumer.md``). Returns the topic the copy went
        to; raises IllegalStateError when not running, a ClientError when the broker
        refuses."""
        return self._send_back.send_back(message, delay_level, max_reconsume_times)
