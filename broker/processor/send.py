"""``SendMessage``: check a record batch, append it, acknowledge it.

Carrier-independent: :meth:`SendProcessor.process` takes a ``SendMessageRequest`` and calls
``on_done(SendMessageResponse)`` exactly once: inline under ASYNC flush or when the request is
refused, else from the store's group-commit thread once the bytes are durable (SYNC flush). The
caller never blocks on the disk. The transport session's dispatch hands it the fields its native
reader read instead (:class:`~common.SendRequestFields`, the same names) and takes a stored
send's answer as a :class:`~common.StoredSendAnswer` (the session writes its envelope in one
native call, the bytes of the ``SendMessageResponse`` it stands for); every other answer to it,
and every answer to a ``SendMessageRequest``, is a ``SendMessageResponse`` as before.

A request carries one record batch (:mod:`common.record_batch`), which the producer encoded
once: it is checked in one pass in C (:func:`~common.check_batch`: framing, the CRC, the
topic, body sizes, tags and their hash column, properties), handed to the store as bytes (one
copy into the commit log, broker fields patched in the header) and answered with the batch's
base queue offset and count: no object per message on the way.

In a broker group (``leadership`` given), a member that does not lead, or a leader whose
lease is not surely valid, answers NOT_LEADER naming the leader (``Status.leader``); a leader
whose committed ISR is below ``min_isr`` answers NOT_ENOUGH_REPLICAS: both before anything is
appended. A leader's send completes once the group's high watermark passes its batch (the
store calls back then), or fails with REPLICATION_TIMEOUT (outcome unknown).

Back pressure: :meth:`SendProcessor.can_accept` is False while the store cannot take more,
that is while more than ``max_unflushed_bytes`` are appended but not yet on disk, or more than
``max_inflight_sends`` sends wait for their flush. The transport session ABORTs the fragment
then (it comes back on the next poll, and the producer eventually sees BACK_PRESSURED).

A request is answered with a non-zero ``status.code`` and a ``key=value`` text, and counted by
code in :attr:`SendProcessor.errors`, when: its topic is unknown and auto-create is off
(TOPIC_NOT_EXIST), not writable or a system topic (NO_PERMISSION), malformed (MESSAGE_ILLEGAL:
a bad topic name, no batch, a batch that fails its check, an empty body, a body over
``max_message_size`` or a batch over it in all, a timer message due further ahead than the
broker's ``timer_max_delay_ms``: ``broker.timer``), or its queue id is outside
``[-1, write_queue_nums)`` (INVALID_PARAMETER; -1 lets the broker choose, round robin). The
store's own refusals map to MESSAGE_ILLEGAL, SERVICE_NOT_AVAILABLE and SYSTEM_ERROR. Under SYNC
flush, a batch stored but not durable in time is answered with code FLUSH_DISK_TIMEOUT and
``send_status`` FLUSH_DISK_TIMEOUT, as RocketMQ.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Final

from aeromq.broker._batch_limits import BATCH_FRAMING_ALLOWANCE
from aeromq.broker._errors import InvalidArgumentError
from aeromq.broker.observability._topic_meter import TopicMeter
from aeromq.broker.processor.leadership import Leadership, refusal
from aeromq.broker.store import (
    MessageStore,
    PutMessageResult,
    PutMessageStatus,
    TopicConfig,
    unpack_host,
)
from aeromq.broker.timer import timer_problem
from aeromq.common import (
    DEFAULT_MAX_MESSAGE_SIZE,
    NOT_ALLOWED_SEND_TOPICS,
    TOPIC_MAX_LENGTH,
    VALID_NAME_PATTERN,
    BatchCheck,
    ResponseCode,
    SendRequestFields,
    StoredSendAnswer,
    check_batch,
)
from aeromq.common.record_batch import ATTRIBUTES_OFFSET, TIMER_FLAG
from aeromq.proto import messages_pb2

__all__ = [
    "BATCH_FRAMING_ALLOWANCE",
    "DEFAULT_MAX_INFLIGHT_SENDS",
    "DEFAULT_MAX_UNFLUSHED_BYTES",
    "SendDone",
    "SendProcessor",
]

SendDone = Callable[[messages_pb2.SendMessageResponse | StoredSendAnswer], None]
"""A send's completion: a ``StoredSendAnswer`` only for a stored send of ``SendRequestFields``."""
SendFields = messages_pb2.SendMessageRequest | SendRequestFields
"""What :meth:`SendProcessor.process` reads: ``topic``, ``queue_id`` and ``batch``."""

DEFAULT_MAX_UNFLUSHED_BYTES: Final = 256 * 1024 * 1024
DEFAULT_MAX_INFLIGHT_SENDS: Final = 4096

_TOPIC_CACHE_LIMIT: Final = 10_000
assert messages_pb2.SEND_OK == 0  # a response's default send status
_FLUSH_DISK_TIMEOUT: Final = messages_pb2.FLUSH_DISK_TIMEOUT
_TIMER_BYTE: Final = ATTRIBUTES_OFFSET + 1  # TIMER_FLAG's byte of the u16 (little-endian)
_TIMER_BIT: Final = TIMER_FLAG >> 8
_tuple_new: Final = tuple.__new__

_PUT_CODES: Final[dict[PutMessageStatus, int]] = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutMessageStatus.CREATE_MAPPED_FILE_FAILED: ResponseCode.SYSTEM_ERROR,
    PutMessageStatus.DISK_FULL: ResponseCode.DISK_FULL,
    PutMessageStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.NOT_LEADER: ResponseCode.NOT_LEADER,
    PutMessageStatus.REPLICATION_TIMEOUT: ResponseCode.REPLICATION_TIMEOUT,
    PutMessageStatus.OUT_OF_ORDER_SEQUENCE: ResponseCode.OUT_OF_ORDER_SEQUENCE,
}
assert set(_PUT_CODES) == set(PutMessageStatus), "every put status answers with a code"


@lru_cache(maxsize=256)
def _host_text(packed: bytes) -> str:
    return unpack_host(packed)


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
        meter: TopicMeter | None = None,
        leadership: Leadership | None = None,
    ) -> None:
        self._store = store
        self._leadership = leadership
        self.meter = meter or TopicMeter()
        self.broker_name = broker_name
        self.max_message_size = max_message_size
        # a batch's whole encoding is capped like one message, with room for one record's
        # framing beside it (RocketMQ caps a batch's encoding)
        self.max_batch_bytes = max_message_size + BATCH_FRAMING_ALLOWANCE
        self._topics: dict[str, bytes] = {}
        self._writable: dict[str, TopicConfig] = {}  # topics' configs found writable
        self.auto_create_topic = auto_create_topic
        self.default_queue_nums = default_queue_nums
        self.max_unflushed_bytes = max_unflushed_bytes
        self.max_inflight_sends = max_inflight_sends
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        self._round_robin: dict[str, itertools.count[int]] = {}
        self._created: dict[str, TopicConfig] = {}  # auto-created in a group, not committed yet
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
        log = self._store.commit_log  # its offsets, without two property calls a request
        if log.max_offset - log.flushed_offset > self.max_unflushed_bytes:
            return False
        return self._submitted - self._completed < self.max_inflight_sends

    def process(self, request: SendFields, on_done: SendDone) -> None:
        """Check, append and answer ``request`` through ``on_done`` (see module). Never
        raises for a bad request: it is answered with its error code."""
        self.requests += 1
        leadership = self._leadership
        if leadership is not None and (code := leadership.write_refusal()):
            self.errors[code] += 1
            response = messages_pb2.SendMessageResponse()
            refusal(leadership, code, f"send to topic={request.topic!r}", response.status)
            on_done(response)
            return
        started_ns = time.perf_counter_ns()
        batch = request.batch  # a copy out of the request: read it once
        checked = self._check(request, batch)
        if isinstance(checked, tuple):
            self._refuse(checked[0], checked[1], on_done)
            return
        topic, queue_id = checked, request.queue_id
        check, problem = check_batch(
            batch,
            topic=self._topics.get(topic) or self._topic_bytes(topic),
            max_body_length=self.max_message_size,
            max_body_total=self.max_message_size,
        )
        if check is not BatchCheck.OK:
            self._refuse(
                ResponseCode.MESSAGE_ILLEGAL,
                f"bad record batch: {check.name}: {problem} topic={topic!r}",
                on_done,
            )
            return
        if len(batch) > self.max_batch_bytes:
            self._refuse(
                ResponseCode.MESSAGE_ILLEGAL,
                f"over the max message size: batch_length={len(batch)} "
                f"max_message_size={self.max_message_size} topic={topic!r}",
                on_done,
            )
            return
        if batch[_TIMER_BYTE] & _TIMER_BIT and (
            late := timer_problem(self._store.timer_redirect, batch, topic)
        ):  # a timer message due too far ahead (broker.timer)
            self._refuse(ResponseCode.MESSAGE_ILLEGAL, late, on_done)
            return
        if queue_id == -1:
            config = self._store.topic_config.get(topic) or self._created.get(topic)
            assert config is not None  # _check made sure
            counter = self._round_robin.get(topic)
            if counter is None:
                counter = self._round_robin[topic] = itertools.count()
            queue_id = next(counter) % config.write_queue_nums
        broker_name = self.broker_name
        fields = type(request) is SendRequestFields  # the session's: a StoredSendAnswer

        def stored(result: PutMessageResult) -> None:
            with self._count_lock:
                self._completed += 1
            status = result.status
            if status is PutMessageStatus.PUT_OK or status is PutMessageStatus.FLUSH_DISK_TIMEOUT:
                stored_ns = time.perf_counter_ns()
                self.messages_stored += result.message_count
                answer: messages_pb2.SendMessageResponse | StoredSendAnswer
                if fields and status is PutMessageStatus.PUT_OK:
                    answer = _tuple_new(  # (a NamedTuple's __new__ is a Python function)
                        StoredSendAnswer,
                        (
                            queue_id,
                            result.queue_offset,
                            result.message_count,
                            result.physical_offset,
                            _host_text(result.store_host),
                            broker_name,
                        ),
                    )
                else:
                    answer = response = messages_pb2.SendMessageResponse()  # fields one by one:
                    response.queue_id = queue_id  # a third cheaper than keywords (upb)
                    response.base_queue_offset = result.queue_offset
                    response.message_count = result.message_count
                    response.base_commit_log_offset = result.physical_offset
                    response.store_host = _host_text(result.store_host)
                    response.broker_name = broker_name
                    if status is PutMessageStatus.FLUSH_DISK_TIMEOUT:
                        response.send_status = _FLUSH_DISK_TIMEOUT
                        response.status.code = ResponseCode.FLUSH_DISK_TIMEOUT
                        response.status.message = (
                            "stored but not durable within the sync flush timeout: "
                            f"topic={topic!r} queue_id={queue_id}"
                        )
                # the answer first, the meter after: the session agent offers a fast send's
                # at once (``broker.session._answers``), and its producer reads it meanwhile
                on_done(answer)
                self.meter.on_stored(
                    topic, result.message_count, len(batch), stored_ns - started_ns
                )
                return
            code = _PUT_CODES[status]
            self.errors[code] += 1
            response = messages_pb2.SendMessageResponse()
            response.status.code = code
            if status is PutMessageStatus.DISK_FULL:
                response.status.message = (
                    f"disk full, sends refused until space is freed: "
                    f"{self._store.disk_space.describe()} topic={topic!r} queue_id={queue_id}"
                )
            elif status is PutMessageStatus.NOT_LEADER and self._leadership is not None:
                refusal(self._leadership, code, f"send to topic={topic!r}", response.status)
            elif status is PutMessageStatus.REPLICATION_TIMEOUT:
                response.status.message = (
                    "not committed by the in-sync replicas in time, outcome unknown: "
                    f"topic={topic!r} queue_id={queue_id}"
                )
            else:
                response.status.message = (
                    f"the store refused the send: status={status.value} "
                    f"topic={topic!r} queue_id={queue_id}"
                )
            on_done(response)

        with self._count_lock:
            self._submitted += 1
        self._store.put_batch_async(batch, topic, queue_id, stored)

    def _refuse(self, code: int, text: str, on_done: SendDone) -> None:
        self.errors[code] += 1
        response = messages_pb2.SendMessageResponse()
        response.status.code = code
        response.status.message = text
        on_done(response)

    def _check(self, request: SendFields, batch: bytes) -> str | tuple[int, str]:
        """The request's topic when it can be served, else its error code and text."""
        topic = request.topic
        store = self._store
        config = store.topic_config.by_name.get(topic)  # (a call fewer a send)
        if config is None and self._created:
            config = self._created.get(topic)
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
            if self._leadership is None:
                store.topic_config.create_or_update(config)
            else:  # through the group's log: applied once committed, before this send's batch
                self._created[topic] = config

                def applied(_: PutMessageResult, topic: str = topic) -> None:
                    self._created.pop(topic, None)

                store.update_topic_config(config, applied)
        if config is not self._writable.get(topic):  # (a frozen config, checked once)
            if not config.is_writeable:
                return ResponseCode.NO_PERMISSION, f"topic is not writable: topic={topic!r}"
            if len(self._writable) >= _TOPIC_CACHE_LIMIT:
                self._writable.clear()
            self._writable[topic] = config
        queue_id = request.queue_id
        if not -1 <= queue_id < config.write_queue_nums:
            return (
                ResponseCode.INVALID_PARAMETER,
                f"bad queue id: topic={topic!r} queue_id={queue_id} "
                f"write_queue_nums={config.write_queue_nums}",
            )
        if not batch:
            return ResponseCode.MESSAGE_ILLEGAL, f"a send without a batch: topic={topic!r}"
        return topic

    def _topic_bytes(self, topic: str) -> bytes:
        found = self._topics.get(topic)
        if found is None:
            if len(self._topics) >= _TOPIC_CACHE_LIMIT:
                self._topics.clear()
            found = self._topics[topic] = topic.encode()
        return found
