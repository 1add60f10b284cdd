"""``SendMessage`` of the RocketMQ 5 endpoint: each message of the request stored in a queue of
its topic, one result entry per message.

The queue is the broker's choice (v2 clients name none): round robin over the topic's write
queues, or, for a FIFO message, the queue of its message group (Java's ``hashCode`` of the group
modulo the write queue count), so one group's messages keep their order in one queue. A topic
that does not exist is created first when ``auto_create_topic`` is on, as the aeromq send path
does. A delayed message (``delivery_timestamp``, message type DELAY) is stored with its time in
``TIMER_DELIVER_MS`` and held by the broker's timer (``broker.timer``) until then; one due beyond
the broker's ``timer_max_delay_ms`` is refused with ``ILLEGAL_DELIVERY_TIME``, as is any delayed
message while the timer is off (``timer_enabled``). A TRANSACTION message is stored as a half
message (``broker.transaction``, its producer group its topic: ``_transactions``) and answered
with its ``transaction_id``, the half's queue offset; refused (``UNSUPPORTED``) when the broker
holds no half messages.

Caller: the servicer's threads. Affects: the store (and its topic config).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

from aeromq.broker._errors import InvalidArgumentError
from aeromq.broker.rocketmq._convert import to_inbound
from aeromq.broker.rocketmq._status import ProtocolStatusError, put_status_code, status
from aeromq.broker.store import MessageStore, TopicConfig, pack_host
from aeromq.broker.timer import PROPERTY_TIMER_DELIVER_MS, TimerRedirector
from aeromq.common import hash_code, is_valid_topic_name
from aeromq.common.record_batch import TRANSACTION_PREPARED_FLAG
from aeromq.proto.apache.rocketmq.v2 import definition_pb2, service_pb2

__all__ = ["SendHandler", "ensure_topic"]

Code = definition_pb2.Code


def ensure_topic(
    store: MessageStore, topic: str, auto_create: bool, queue_count: int
) -> TopicConfig:
    """The topic's config; created with ``queue_count`` queues when missing and
    ``auto_create`` is on, else ``TOPIC_NOT_FOUND`` (``ILLEGAL_TOPIC`` for a bad name)."""
    config = store.topic_config.get(topic)
    if config is not None:
        return config
    if not is_valid_topic_name(topic):
        raise ProtocolStatusError(Code.ILLEGAL_TOPIC, "not a valid topic name", topic=topic)
    if not auto_create:
        raise ProtocolStatusError(
            Code.TOPIC_NOT_FOUND, "no such topic and auto-create is off", topic=topic
        )
    config = TopicConfig(topic, queue_count, queue_count)
    store.topic_config.create_or_update(config)
    return config


class SendHandler:
    """Stores the messages of ``SendMessage`` requests (see module)."""

    def __init__(
        self, store: MessageStore, *, max_body_bytes: int, auto_create_topic: bool, queue_count: int
    ) -> None:
        self._store = store
        self.max_body_bytes = max_body_bytes
        self.auto_create_topic = auto_create_topic
        self.queue_count = queue_count
        self._round_robin: dict[str, Iterator[int]] = {}
        self._lock = threading.Lock()
        self.messages_stored = 0

    def send(
        self, request: service_pb2.SendMessageRequest, born_host: str
    ) -> service_pb2.SendMessageResponse:
        """One entry per message; the response's status is the first failure's, else OK."""
        if not request.messages:
            raise ProtocolStatusError(Code.BAD_REQUEST, "a send without messages")
        response = service_pb2.SendMessageResponse()
        host = _packed_host(born_host)
        for message in request.messages:
            try:
                entry = self._send_one(message, host)
            except ProtocolStatusError as exc:
                entry = service_pb2.SendResultEntry(status=status(exc.v2_code, str(exc)))
            if entry.status.code != Code.OK and not response.HasField("status"):
                response.status.CopyFrom(entry.status)
            response.entries.append(entry)
        if not response.HasField("status"):
            response.status.CopyFrom(status())
        return response

    def _send_one(
        self, message: definition_pb2.Message, born_host: bytes
    ) -> service_pb2.SendResultEntry:
        topic = message.topic.name
        system = message.system_properties
        half = system.message_type == definition_pb2.TRANSACTION
        if half and self._store.half_redirect is None:
            raise ProtocolStatusError(
                Code.UNSUPPORTED, "transactional messages are off on this broker", topic=topic
            )
        if not message.body:
            raise ProtocolStatusError(Code.MESSAGE_BODY_EMPTY, "an empty body", topic=topic)
        if len(message.body) > self.max_body_bytes:
            raise ProtocolStatusError(
                Code.MESSAGE_BODY_TOO_LARGE,
                "body over the max message size",
                topic=topic,
                body_length=len(message.body),
                max_message_size=self.max_body_bytes,
            )
        config = ensure_topic(self._store, topic, self.auto_create_topic, self.queue_count)
        if not config.is_writeable or config.write_queue_nums == 0:
            raise ProtocolStatusError(Code.FORBIDDEN, "topic is not writable", topic=topic)
        queue_id = self._queue_for(topic, config.write_queue_nums, system)
        inbound = to_inbound(message, queue_id, born_host)
        if system.HasField("delivery_timestamp"):
            inbound.properties = {
                **inbound.properties,
                PROPERTY_TIMER_DELIVER_MS: str(self._due_ms(system, topic)),
            }
        if half:  # a half message (broker.transaction); its group is its topic
            inbound.properties = {**inbound.properties, "TRAN_MSG": "true", "PGROUP": topic}
            inbound.sys_flag |= TRANSACTION_PREPARED_FLAG
        result = self._store.put_message(inbound)
        code = put_status_code(result.status)
        if code != Code.OK:
            raise ProtocolStatusError(
                code, "the store refused the message", topic=topic, status=result.status.value
            )
        self.messages_stored += 1
        return service_pb2.SendResultEntry(
            status=status(),
            message_id=system.message_id,
            offset=result.queue_offset,
            transaction_id=str(result.queue_offset) if half else "",
        )

    def _due_ms(self, system: definition_pb2.SystemProperties, topic: str) -> int:
        """A delayed message's delivery time, epoch ms; ``ILLEGAL_DELIVERY_TIME`` when the
        timer is off or the time is beyond the broker's max delay."""
        due_ms = system.delivery_timestamp.ToMilliseconds()
        redirect = self._store.timer_redirect
        if not isinstance(redirect, TimerRedirector):
            raise ProtocolStatusError(
                Code.ILLEGAL_DELIVERY_TIME, "timer messages are off on this broker", topic=topic
            )
        delay_ms = due_ms - time.time_ns() // 1_000_000
        if delay_ms > redirect.max_delay_ms:
            raise ProtocolStatusError(
                Code.ILLEGAL_DELIVERY_TIME,
                "delivery time beyond the broker's max delay",
                topic=topic,
                delay_ms=delay_ms,
                max_delay_ms=redirect.max_delay_ms,
            )
        return due_ms

    def _queue_for(
        self, topic: str, queue_count: int, system: definition_pb2.SystemProperties
    ) -> int:
        if system.HasField("message_group") and system.message_group:
            return abs(hash_code(system.message_group)) % queue_count
        with self._lock:
            counter = self._round_robin.get(topic)
            if counter is None:
                counter = self._round_robin[topic] = itertools.count()
            return next(counter) % queue_count


def _packed_host(peer: str) -> bytes:
    """A gRPC peer (``ipv4:1.2.3.4:5``) as a packed born host; all zeros when not IPv4."""
    _, _, address = peer.partition(":")
    try:
        return pack_host(address)
    except InvalidArgumentError:  # IPv6 or a unix socket: the field holds IPv4 only
        return bytes(8)
