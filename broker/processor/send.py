"""``SendMessage``: validate a single message or a batch, append it, acknowledge it.

Carrier-independent: :meth:`SendProcessor.process` takes a ``SendMessageRequest`` and calls
``on_done(SendMessageResponse)`` exactly once: inline under ASYNC flush or when the request is
refused, else from the store's group-commit thread once the bytes are durable (SYNC flush). The
caller never blocks on the disk.

Back pressure: :meth:`SendProcessor.can_accept` is False while the store cannot take more,
that is while more than ``max_unflushed_bytes`` are appended but not yet on disk, or more than
``max_inflight_sends`` sends wait for their flush. The transport session ABORTs the fragment
then (it comes back on the next poll, and the producer eventually sees BACK_PRESSURED); the
gRPC servicer answers SYSTEM_BUSY.

A request is answered with a non-zero ``status.code`` and a ``key=value`` text, and counted by
code in :attr:`SendProcessor.errors`, when: its topic is unknown and auto-create is off
(TOPIC_NOT_EXIST), not writable or a system topic (NO_PERMISSION), malformed (MESSAGE_ILLEGAL:
a bad topic name, no message, a message of another topic, an empty body or a body over
``max_message_size``, a batch over it in all, a bad tag, property or born host), or its queue
id is outside ``[-1, write_queue_nums)`` (INVALID_PARAMETER; -1 lets the broker choose, round
robin). The store's own refusals map to MESSAGE_ILLEGAL, SERVICE_NOT_AVAILABLE and
SYSTEM_ERROR. Under SYNC flush, a batch stored but not durable in time is answered with code
FLUSH_DISK_TIMEOUT and its results, each with ``send_status`` FLUSH_DISK_TIMEOUT, as RocketMQ.

Stored properties are the message's ``properties`` map plus ``TAGS`` (from ``tags``), ``KEYS``
(``keys`` joined by spaces) and ``UNIQ_KEY`` (``msg_id``); each result's ``msg_id`` is the
unique id when the message has one, else the offset id.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Final

from aeromq.broker import InvalidArgumentError
from aeromq.broker.processor.pull import offset_id_prefix
from aeromq.broker.store import (
    InboundMessage,
    MessageStore,
    PutMessageResult,
    PutMessageStatus,
    TopicConfig,
    pack_host,
)
from aeromq.broker.store._message import EMPTY_HOST
from aeromq.common import (
    DEFAULT_MAX_MESSAGE_SIZE,
    KEY_SEPARATOR,
    NAME_VALUE_SEPARATOR,
    NOT_ALLOWED_SEND_TOPICS,
    PROPERTY_KEYS,
    PROPERTY_SEPARATOR,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    TOPIC_MAX_LENGTH,
    VALID_NAME_PATTERN,
    ResponseCode,
    tag_problem,
)
from aeromq.proto import messages_pb2

__all__ = ["DEFAULT_MAX_INFLIGHT_SENDS", "DEFAULT_MAX_UNFLUSHED_BYTES", "SendDone", "SendProcessor"]

SendDone = Callable[[messages_pb2.SendMessageResponse], None]

DEFAULT_MAX_UNFLUSHED_BYTES: Final = 256 * 1024 * 1024
DEFAULT_MAX_INFLIGHT_SENDS: Final = 4096

_SEND_OK: Final = messages_pb2.SEND_OK
_FLUSH_DISK_TIMEOUT: Final = messages_pb2.FLUSH_DISK_TIMEOUT

_PUT_CODES: Final[dict[PutMessageStatus, int]] = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutMessageStatus.CREATE_MAPPED_FILE_FAILED: ResponseCode.SYSTEM_ERROR,
    PutMessageStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
}


@lru_cache(maxsize=1024)
def _packed_host(host: str) -> bytes:
    return pack_host(host) if host else EMPTY_HOST


def _property_problem(properties: dict[str, str]) -> str | None:
    for name, value in properties.items():
        if not name or name.isspace():
            return f"a property name is blank: name={name!r}"
        if (
            NAME_VALUE_SEPARATOR in name
            or PROPERTY_SEPARATOR in name
            or NAME_VALUE_SEPARATOR in value
            or PROPERTY_SEPARATOR in value
        ):
            return f"a property holds \\x01 or \\x02: name={name!r}"
    return None


@lru_cache(maxsize=1024)
def _tag_problem(tags: str) -> str | None:
    return tag_problem(tags)


class SendProcessor:
    """Appends sends to ``store`` and acknowledges them as ``broker_name`` (see module)."""

    def __init__(
        self,
        store: MessageStore,
        broker_name: str,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        auto_create_topic: bool = False,
        default_queue_nums: int = 4,
        max_unflushed_bytes: int = DEFAULT_MAX_UNFLUSHED_BYTES,
        max_inflight_sends: int = DEFAULT_MAX_INFLIGHT_SENDS,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self._store = store
        self.broker_name = broker_name
        self.max_message_size = max_message_size
        self.auto_create_topic = auto_create_topic
        self.default_queue_nums = default_queue_nums
        self.max_unflushed_bytes = max_unflushed_bytes
        self.max_inflight_sends = max_inflight_sends
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        self._round_robin: dict[str, itertools.count[int]] = {}
        self._submitted = 0  # both under _count_lock: callers and flushers may be any threads
        self._completed = 0
        self._count_lock = threading.Lock()
        self.errors: collections.Counter[int] = collections.Counter()
        self.requests = 0
        self.messages_stored = 0

    @property
    def inflight_sends(self) -> int:
        """Sends appended whose answer waits for the disk (SYNC flush)."""
        return self._submitted - self._completed

    def can_accept(self) -> bool:
        """Whether the store can take more now (see module); cheap, for every request."""
        store = self._store
        if store.max_physical_offset - store.flushed_physical_offset > self.max_unflushed_bytes:
            return False
        return self._submitted - self._completed < self.max_inflight_sends

    def process(self, request: messages_pb2.SendMessageRequest, on_done: SendDone) -> None:
        """Validate, append and answer ``request`` through ``on_done`` (see module). Never
        raises for a bad request: it is answered with its error code."""
        self.requests += 1
        checked = self._check(request)
        if isinstance(checked, tuple):
            self._refuse(checked[0], checked[1], on_done)
            return
        topic, queue_id = checked, request.queue_id
        if queue_id == -1:
            config = self._store.topic_config.get(topic)
            assert config is not None  # _check made sure
            counter = self._round_robin.get(topic)
            if counter is None:
                counter = self._round_robin[topic] = itertools.count()
            queue_id = next(counter) % config.write_queue_nums
        inbound = self._inbound(request, topic, queue_id)
        if isinstance(inbound, str):
            self._refuse(ResponseCode.MESSAGE_ILLEGAL, inbound, on_done)
            return
        messages = request.messages
        broker_name = self.broker_name

        def stored(result: PutMessageResult) -> None:
            with self._count_lock:
                self._completed += 1
            code = _PUT_CODES[result.status]
            response = messages_pb2.SendMessageResponse()
            status = response.status
            if result.status is PutMessageStatus.PUT_OK:
                send_status = _SEND_OK
            elif result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT:
                send_status = _FLUSH_DISK_TIMEOUT
                status.code = code
                status.message = (
                    f"stored but not durable within the sync flush timeout: topic={topic!r} "
                    f"queue_id={queue_id}"
                )
            else:
                self.errors[code] += 1
                status.code = code
                status.message = (
                    f"the store refused the send: status={result.status.value} "
                    f"topic={topic!r} queue_id={queue_id} messages={len(messages)}"
                )
                on_done(response)
                return
            self.messages_stored += result.message_count
            add = response.results.add
            prefix = offset_id_prefix(result.store_host)
            physical_offsets = result.physical_offsets
            first_offset = result.queue_offset
            for i, message in enumerate(messages):
                out = add()
                out.send_status = send_status
                offset_id = f"{prefix}{physical_offsets[i]:016X}"
                out.msg_id = message.msg_id or offset_id
                out.offset_msg_id = offset_id
                out.queue_id = queue_id
                out.queue_offset = first_offset + i
                out.broker_name = broker_name
            on_done(response)

        with self._count_lock:
            self._submitted += 1
        self._store.put_messages_async(inbound, stored)

    def _refuse(self, code: int, text: str, on_done: SendDone) -> None:
        self.errors[code] += 1
        response = messages_pb2.SendMessageResponse()
        response.status.code = code
        response.status.message = text
        on_done(response)

    def _check(self, request: messages_pb2.SendMessageRequest) -> str | tuple[int, str]:
        """The request's topic when it can be served, else its error code and text."""
        topic = request.topic
        store = self._store
        config = store.topic_config.get(topic)
        if config is None:
            if topic in NOT_ALLOWED_SEND_TOPICS:
                return ResponseCode.NO_PERMISSION, f"sending to a system topic: topic={topic!r}"
            if not self.auto_create_topic:
                return (
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"no such topic and auto-create is off: topic={topic!r}",
                )
            try:
                config = TopicConfig(topic, self.default_queue_nums, self.default_queue_nums)
            except InvalidArgumentError:
                return (
                    ResponseCode.MESSAGE_ILLEGAL,
                    f"bad topic name, allowing only {VALID_NAME_PATTERN} up to {TOPIC_MAX_LENGTH}: "
                    f"topic={topic!r}",
                )
            store.topic_config.create_or_update(config)
        if not config.is_writeable:
            return ResponseCode.NO_PERMISSION, f"topic is not writable: topic={topic!r}"
        queue_id = request.queue_id
        if not -1 <= queue_id < config.write_queue_nums:
            return (
                ResponseCode.INVALID_PARAMETER,
                f"bad queue id: topic={topic!r} queue_id={queue_id} "
                f"write_queue_nums={config.write_queue_nums}",
            )
        if not request.messages:
            return ResponseCode.MESSAGE_ILLEGAL, f"a send without messages: topic={topic!r}"
        return topic

    def _inbound(
        self, request: messages_pb2.SendMessageRequest, topic: str, queue_id: int
    ) -> list[InboundMessage] | str:
        """The store's messages for the request, or why it is illegal."""
        max_size = self.max_message_size
        now_ms = self._clock_ms()
        total = 0
        inbound: list[InboundMessage] = []
        append = inbound.append
        for index, message in enumerate(request.messages):
            if message.topic and message.topic != topic:
                return (
                    f"a batch mixes topics: topic={topic!r} message_topic={message.topic!r} "
                    f"index={index}"
                )
            body = message.body
            size = len(body)
            total += size
            if not size:
                return f"the message body is empty: topic={topic!r} index={index}"
            if size > max_size or total > max_size:
                return (
                    f"over the max message size: body_length={size} batch_length={total} "
                    f"max_message_size={max_size} topic={topic!r} index={index}"
                )
            properties = dict(message.properties) if message.properties else {}
            if properties:
                problem = _property_problem(properties)
                if problem is not None:
                    return f"{problem} topic={topic!r} index={index}"
            tags = message.tags
            if tags:
                problem = _tag_problem(tags)
                if problem is not None:
                    return f"bad tag: {problem}: tags={tags!r} index={index}"
                properties[PROPERTY_TAGS] = tags
            if message.keys:
                properties[PROPERTY_KEYS] = KEY_SEPARATOR.join(message.keys)
            if message.msg_id:
                properties[PROPERTY_UNIQ_KEY] = message.msg_id
            try:
                born_host = _packed_host(message.born_host)
            except InvalidArgumentError:
                return f"bad born host, not 'a.b.c.d:port': born_host={message.born_host!r}"
            append(
                InboundMessage(
                    topic,
                    queue_id,
                    body,
                    properties,
                    flag=message.flag,
                    born_timestamp_ms=message.born_timestamp_ms or now_ms,
                    born_host=born_host,
                )
            )
        return inbound
