"""``PopService``: RocketMQ 5's SimpleConsumer model (receive, ack, invisibility) on the store.

Per (group, topic, queue) it keeps the next offset to read (``pop_offset``) and the messages
delivered but not acked (``in_flight``: offset -> delivery). A received message is invisible
until its deadline; when the deadline passes unacked, the next receive of the group delivers it
again with ``attempt + 1``, and once ``max_delivery_attempts`` deliveries have expired the
message is written to ``%DLQ%<group>`` (one queue) and counts as acked. A message that does not
match the receive's filter counts as consumed, as in RocketMQ.

The group's committed offset in the store's consumer offsets (persisted with them) is the lowest
offset not yet acked: ``min(in_flight)``, else ``pop_offset``. After a restart the in-flight
table is empty and reading starts again at the committed offset, so every message not acked is
delivered again (at least once; one acked after an older unacked one may come again too). A
receipt handle of an earlier run still acks its message (it names topic, queue and offset): the
ack is kept until reading passes that offset. One of this run that names an older delivery
(redelivered or its invisibility changed since) is refused with ``INVALID_RECEIPT_HANDLE``.

A FIFO topic (its ``order`` flag) holds a message group (``__SHARDINGKEY``, the v2 message
group) back while one of its messages is in flight: a receive skips the group's later messages
(``pop_offset`` stays at the first one skipped) and delivers those of other groups; once the
message is acked (or dead-lettered) the group's next message is delivered, so each group is
consumed in order. Messages delivered or acked past ``pop_offset`` are remembered
(``in_flight``, ``acked_ahead``) so a later scan does not deliver them again.

A receive reads every readable queue of the topic, starting after the queue it read first last
time, and waits (long polling) up to its deadline: woken by the store's arrivals and by the
next invisibility deadline. A new group starts at each queue's first stored message.

Caller: the servicer's threads (any number at once; one lock guards the tables).
Affects: the store's consumer offsets; the ``%DLQ%<group>`` topic (created on first use).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from aeromq.broker.rocketmq._convert import PROPERTY_MESSAGE_GROUP, message_id_of
from aeromq.broker.rocketmq._receipt import ReceiptHandle
from aeromq.broker.rocketmq._status import ProtocolStatusError, put_status_code
from aeromq.broker.store import InboundMessage, MessageStore, StoredMessage, TopicConfig
from aeromq.common import (
    DLQ_TOPIC_PREFIX,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TAGS,
    Sql92Filter,
    SubscriptionData,
    dlq_topic,
)
from aeromq.proto.apache.rocketmq.v2 import definition_pb2

__all__ = ["DLQ_PREFIX", "Delivery", "MessageFilter", "PopService", "dlq_topic"]

Code = definition_pb2.Code

DLQ_PREFIX: Final = DLQ_TOPIC_PREFIX  # one rule with the send-back's (common._consume_retry)
# The longest a waiting receive sleeps before it looks again (arrivals wake it sooner).
_MAX_WAIT_S: Final = 0.5

MessageFilter = SubscriptionData | Sql92Filter


@dataclass(slots=True)
class _InFlight:
    visible_at_ms: int
    attempt: int
    serial: int
    group: str = ""  # the message group ("": none)


@dataclass(slots=True)
class _QueueState:
    pop_offset: int
    in_flight: dict[int, _InFlight] = field(default_factory=dict)
    acked_ahead: set[int] = field(default_factory=set)

    @property
    def watermark(self) -> int:
        return min(self.in_flight, default=self.pop_offset)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message handed to a receive: the stored message and its delivery."""

    message: StoredMessage
    handle: ReceiptHandle
    invisible_ms: int


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class PopService:
    """See the module. ``clock_ms`` is wall-clock milliseconds (deadlines survive nothing, so
    a monotonic clock would do as well; the tests inject one)."""

    def __init__(
        self,
        store: MessageStore,
        max_delivery_attempts: int,
        *,
        clock_ms: Callable[[], int] = _wall_ms,
    ) -> None:
        self._store = store
        self.max_delivery_attempts = max_delivery_attempts
        self._clock_ms = clock_ms
        self.epoch_ms = clock_ms()
        self._states: dict[tuple[str, str, int], _QueueState] = {}
        self._next_queue: dict[tuple[str, str], int] = {}
        self._serials = itertools.count(1)
        # Reentrant: a dead letter is appended under the lock, and the store then calls
        # _on_arrival on the same thread.
        self._lock = threading.RLock()
        self._arrived = threading.Condition(self._lock)
        self._waiting = 0  # receives in progress; the arrival listener is on while any is
        self._closed = False
        self.dead_lettered = 0

    def close(self) -> None:
        """Wake every waiting receive (they return what they have) and stop waiting."""
        with self._arrived:
            self._closed = True
            self._arrived.notify_all()

    def _on_arrival(self, topic: str, queue_id: int, max_offset: int) -> None:
        """The store's arrival listener, added while a receive is in progress (no call a put
        otherwise): wake the receives waiting for a message."""
        if self._waiting:
            with self._arrived:
                self._arrived.notify_all()

    # -- receive ---------------------------------------------------------------------------

    def receive(
        self,
        group: str,
        topic: str,
        message_filter: MessageFilter,
        batch_size: int,
        invisible_ms: int,
        wait_ms: int,
    ) -> list[Delivery]:
        """Up to ``batch_size`` messages of ``topic`` for ``group``, each invisible for
        ``invisible_ms``; waits up to ``wait_ms`` for one (long polling)."""
        config = self._readable(topic)
        deadline = time.monotonic() + wait_ms / 1000
        with self._arrived:
            self._waiting += 1  # from before the first look: no arrival goes unnoticed
            if self._waiting == 1:
                self._store.add_arrival_listener(self._on_arrival)
            try:
                while True:
                    found = self._take(group, topic, config.read_queue_nums, message_filter,
                                       batch_size, invisible_ms, config.order)  # fmt: skip
                    remaining_s = deadline - time.monotonic()
                    if found or remaining_s <= 0 or self._closed:
                        return found
                    self._arrived.wait(
                        min(remaining_s, _MAX_WAIT_S, self._next_expiry_s(group, topic))
                    )
            finally:
                self._waiting -= 1
                if not self._waiting:
                    self._store.remove_arrival_listener(self._on_arrival)

    def _readable(self, topic: str) -> TopicConfig:
        config = self._store.topic_config.get(topic)
        if config is None:
            raise ProtocolStatusError(Code.TOPIC_NOT_FOUND, "no such topic", topic=topic)
        if not config.is_readable:
            raise ProtocolStatusError(Code.FORBIDDEN, "topic is not readable", topic=topic)
        return config

    def _next_expiry_s(self, group: str, topic: str) -> float:
        now_ms = self._clock_ms()
        soonest = min(
            (
                flight.visible_at_ms
                for (g, t, _), state in self._states.items()
                if g == group and t == topic
                for flight in state.in_flight.values()
            ),
            default=now_ms + int(_MAX_WAIT_S * 1000),
        )
        return max(soonest - now_ms, 1) / 1000

    def _state(self, group: str, topic: str, queue_id: int) -> _QueueState:
        key = (group, topic, queue_id)
        state = self._states.get(key)
        if state is None:
            committed = self._store.consumer_offsets.query_offset(group, topic, queue_id)
            start = committed if committed >= 0 else self._store.get_min_offset(topic, queue_id)
            state = self._states[key] = _QueueState(start)
        return state

    def _take(
        self,
        group: str,
        topic: str,
        queue_count: int,
        message_filter: MessageFilter,
        batch_size: int,
        invisible_ms: int,
        fifo: bool = False,
    ) -> list[Delivery]:
        now_ms = self._clock_ms()
        first = self._next_queue.get((group, topic), 0)
        self._next_queue[(group, topic)] = first + 1
        found: list[Delivery] = []
        for step in range(queue_count):
            queue_id = (first + step) % queue_count
            state = self._state(group, topic, queue_id)
            before = state.watermark
            self._take_expired(group, topic, queue_id, state, now_ms, batch_size, invisible_ms,
                               found)  # fmt: skip
            take_new = self._take_new_fifo if fifo else self._take_new
            take_new(topic, queue_id, state, now_ms, message_filter, batch_size, invisible_ms,
                     found)  # fmt: skip
            if state.watermark != before:
                self._store.consumer_offsets.commit_offset(group, topic, queue_id, state.watermark)
            if len(found) >= batch_size:
                break
        return found

    def _deliver(
        self,
        message: StoredMessage,
        state: _QueueState,
        attempt: int,
        now_ms: int,
        invisible_ms: int,
        found: list[Delivery],
    ) -> None:
        serial = next(self._serials)
        group = message.properties.get(PROPERTY_MESSAGE_GROUP, "")
        state.in_flight[message.queue_offset] = _InFlight(
            now_ms + invisible_ms, attempt, serial, group
        )
        handle = ReceiptHandle(
            self.epoch_ms, message.queue_id, message.queue_offset, attempt, serial, message.topic
        )
        found.append(Delivery(message, handle, invisible_ms))

    def _take_expired(
        self,
        group: str,
        topic: str,
        queue_id: int,
        state: _QueueState,
        now_ms: int,
        batch_size: int,
        invisible_ms: int,
        found: list[Delivery],
    ) -> None:
        expired = sorted(o for o, f in state.in_flight.items() if f.visible_at_ms <= now_ms)
        for offset in expired:
            if len(found) >= batch_size:
                return
            flight = state.in_flight.pop(offset)
            message = self._read_one(topic, queue_id, offset)
            if message is None:  # gone to retention meanwhile: nothing to deliver
                continue
            if flight.attempt >= self.max_delivery_attempts:
                self._dead_letter(group, message)
                if offset >= state.pop_offset:  # (FIFO) past the first held message
                    state.acked_ahead.add(offset)
                continue
            self._deliver(message, state, flight.attempt + 1, now_ms, invisible_ms, found)

    def _take_new(
        self,
        topic: str,
        queue_id: int,
        state: _QueueState,
        now_ms: int,
        message_filter: MessageFilter,
        batch_size: int,
        invisible_ms: int,
        found: list[Delivery],
    ) -> None:
        wanted = batch_size - len(found)
        if wanted <= 0 or state.pop_offset >= self._store.get_max_offset(topic, queue_id):
            return
        codes = None
        if isinstance(message_filter, SubscriptionData) and not message_filter.is_sub_all:
            codes = message_filter.codes
        result = self._store.get_messages(topic, queue_id, state.pop_offset, wanted,
                                         tag_hashes=codes)  # fmt: skip
        for message in result.messages:
            if message.queue_offset in state.acked_ahead:
                state.acked_ahead.discard(message.queue_offset)
            elif _matches(message_filter, message):
                self._deliver(message, state, 1, now_ms, invisible_ms, found)
        state.pop_offset = max(state.pop_offset, result.next_begin_offset)
        state.acked_ahead = {o for o in state.acked_ahead if o >= state.pop_offset}

    def _take_new_fifo(
        self,
        topic: str,
        queue_id: int,
        state: _QueueState,
        now_ms: int,
        message_filter: MessageFilter,
        batch_size: int,
        invisible_ms: int,
        found: list[Delivery],
    ) -> None:
        """``_take_new`` for a FIFO topic: a group with a message in flight is held back (see
        the module); ``pop_offset`` stops at the first message not delivered."""
        wanted = batch_size - len(found)
        if wanted <= 0 or state.pop_offset >= self._store.get_max_offset(topic, queue_id):
            return
        held = {flight.group for flight in state.in_flight.values() if flight.group}
        result = self._store.get_messages(topic, queue_id, state.pop_offset, max(wanted, 32))
        first_left = -1
        for message in result.messages:
            offset = message.queue_offset
            if offset in state.in_flight or offset in state.acked_ahead:
                continue
            group = message.properties.get(PROPERTY_MESSAGE_GROUP, "")
            if not _matches(message_filter, message):
                state.acked_ahead.add(offset)  # consumed, as in _take_new
            elif (group and group in held) or len(found) >= batch_size:
                if first_left < 0:
                    first_left = offset
            else:
                self._deliver(message, state, 1, now_ms, invisible_ms, found)
                if group:
                    held.add(group)
        end = first_left if first_left >= 0 else result.next_begin_offset
        state.pop_offset = max(state.pop_offset, end)
        state.acked_ahead = {o for o in state.acked_ahead if o >= state.pop_offset}

    def _read_one(self, topic: str, queue_id: int, offset: int) -> StoredMessage | None:
        result = self._store.get_messages(topic, queue_id, offset, 1)
        for message in result.messages:
            if message.queue_offset == offset:
                return message
        return None

    # -- dead letters ----------------------------------------------------------------------

    def _dead_letter(self, group: str, message: StoredMessage) -> None:
        """Write ``message`` to the group's DLQ (created with one queue on first use)."""
        topic = dlq_topic(group)
        store = self._store
        if store.topic_config.get(topic) is None:
            store.topic_config.create_or_update(TopicConfig(topic, 1, 1))
        properties = dict(message.properties)
        properties.setdefault(PROPERTY_RETRY_TOPIC, message.topic)
        properties.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, message_id_of(message))
        result = store.put_message(
            InboundMessage(
                topic,
                0,
                message.body,
                properties,
                flag=message.flag,
                born_timestamp_ms=message.born_timestamp_ms,
                born_host=message.born_host,
                reconsume_times=self.max_delivery_attempts,
            )
        )
        if not result.ok:
            raise ProtocolStatusError(
                put_status_code(result.status),
                "cannot write to the dead-letter queue",
                topic=topic,
                status=result.status.value,
            )
        self.dead_lettered += 1

    def forward_to_dlq(self, group: str, topic: str, handle: ReceiptHandle) -> None:
        """``ForwardMessageToDeadLetterQueue``: the message now, acked."""
        with self._lock:
            state = self._state(group, topic, handle.queue_id)
            self._current(state, group, topic, handle)
            message = self._read_one(topic, handle.queue_id, handle.queue_offset)
            if message is None:
                raise ProtocolStatusError(
                    Code.MESSAGE_NOT_FOUND,
                    "the message is no longer stored",
                    topic=topic,
                    queue_id=handle.queue_id,
                    queue_offset=handle.queue_offset,
                )
            self._dead_letter(group, message)
            self._settle(state, group, topic, handle)

    # -- ack and invisibility --------------------------------------------------------------

    def ack(self, group: str, topic: str, handle: ReceiptHandle) -> None:
        """Ack one delivery; ``INVALID_RECEIPT_HANDLE`` when it is not the current one."""
        with self._lock:
            state = self._state(group, topic, handle.queue_id)
            if handle.epoch_ms != self.epoch_ms:  # a handle of an earlier run
                if handle.queue_offset in state.in_flight:
                    raise self._stale(group, topic, handle, "redelivered since a restart")
                if handle.queue_offset >= state.pop_offset:
                    state.acked_ahead.add(handle.queue_offset)
                return
            self._current(state, group, topic, handle)
            self._settle(state, group, topic, handle)

    def change_invisible(
        self, group: str, topic: str, handle: ReceiptHandle, invisible_ms: int
    ) -> ReceiptHandle:
        """Make the delivery invisible for ``invisible_ms`` from now; returns its new handle
        (the old one is refused from now on)."""
        with self._lock:
            state = self._state(group, topic, handle.queue_id)
            flight = self._current(state, group, topic, handle)
            flight.visible_at_ms = self._clock_ms() + invisible_ms
            flight.serial = next(self._serials)
            self._arrived.notify_all()
            return ReceiptHandle(
                self.epoch_ms, handle.queue_id, handle.queue_offset, flight.attempt,
                flight.serial, topic,
            )  # fmt: skip

    def _current(
        self, state: _QueueState, group: str, topic: str, handle: ReceiptHandle
    ) -> _InFlight:
        if handle.topic != topic:
            raise ProtocolStatusError(
                Code.INVALID_RECEIPT_HANDLE,
                "the receipt handle is of another topic",
                topic=topic,
                handle_topic=handle.topic,
            )
        flight = state.in_flight.get(handle.queue_offset)
        if flight is None:
            raise self._stale(group, topic, handle, "not in flight: acked or dead-lettered")
        if flight.serial != handle.serial:
            raise self._stale(group, topic, handle, "redelivered or its invisibility changed")
        return flight

    def _settle(self, state: _QueueState, group: str, topic: str, handle: ReceiptHandle) -> None:
        before = state.watermark
        del state.in_flight[handle.queue_offset]
        if handle.queue_offset >= state.pop_offset:  # (FIFO) past the first held message
            state.acked_ahead.add(handle.queue_offset)
        if state.watermark != before:
            self._store.consumer_offsets.commit_offset(
                group, topic, handle.queue_id, state.watermark
            )

    @staticmethod
    def _stale(group: str, topic: str, handle: ReceiptHandle, why: str) -> ProtocolStatusError:
        return ProtocolStatusError(
            Code.INVALID_RECEIPT_HANDLE,
            f"receipt handle no longer valid ({why})",
            group=group,
            topic=topic,
            queue_id=handle.queue_id,
            queue_offset=handle.queue_offset,
            attempt=handle.attempt,
        )

    def in_flight_count(self, group: str, topic: str) -> int:
        """Messages of ``topic`` delivered to ``group`` and not acked yet."""
        with self._lock:
            return sum(
                len(s.in_flight)
                for (g, t, _), s in self._states.items()
                if g == group and t == topic
            )


def _matches(message_filter: MessageFilter, message: StoredMessage) -> bool:
    if isinstance(message_filter, Sql92Filter):
        return message_filter.matches(message.properties)
    return message_filter.matches_tag(message.properties.get(PROPERTY_TAGS))
