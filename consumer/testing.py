"""Test helpers shipped with the consumer: an in-memory broker and a manual scheduler.

:class:`InMemoryBroker` implements :class:`~consumer._broker_api.BrokerApi` with the broker's pull
semantics (``docs/lite-pull-consumer.md``, "What the broker answers a pull"): FOUND /
NO_NEW_MSG / NO_MATCHED_MSG / OFFSET_ILLEGAL with RocketMQ's next offsets, tag filtering by
hash code, long polling (a NO_NEW_MSG pull is held until a message arrives in its queue or its
suspend time ends), batch caps of 32 messages / 256 KiB, committed offsets per group, search by
store time, group membership pushed to every member at once when it changes, and the holders of
queues for hand-overs (the broker's :class:`~common.QueueHolders`: acquire, release with a
commit, a member that leaves holds nothing). Several
consumers may share one instance (as one cluster of brokers: queues carry broker names).

Fault injection: :meth:`InMemoryBroker.fail_next` makes the next call of a method raise;
:attr:`InMemoryBroker.hold_pulls` keeps pull callbacks until :meth:`InMemoryBroker.release_held`
answers them (to stage races).

:class:`ManualScheduler` records scheduled actions and runs them when told, for pull-task
tests without threads or sleeps.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from aeromq.client import (
    IllegalArgumentError,
    MessageExt,
    MessageQueue,
    SubscriptionData,
    TopicNotFoundError,
    tag_hash_code,
)
from aeromq.common import PROPERTY_TAGS, QueueHolders
from aeromq.consumer._broker_api import (
    ConsumerHeartbeat,
    MembershipListener,
    PullCallback,
    PullResult,
    PullStatus,
    QueueGrant,
)

__all__ = ["HeldPull", "InMemoryBroker", "ManualScheduler"]

MAX_PULL_MESSAGES = 32
MAX_PULL_BYTES = 256 * 1024


@dataclass(slots=True)
class HeldPull:
    """A pull whose answer is held (long poll, or :attr:`InMemoryBroker.hold_pulls`)."""

    queue: MessageQueue
    subscription: SubscriptionData
    offset: int
    max_nums: int
    callback: PullCallback
    deadline_s: float = 0.0


@dataclass(slots=True)
class _Queue:
    messages: list[MessageExt] = field(default_factory=list)
    min_offset: int = 0

    @property
    def max_offset(self) -> int:
        return self.min_offset + len(self.messages)


class InMemoryBroker:
    """A broker cluster in memory (see the module doc)."""

    def __init__(self, clock_ms: Callable[[], int] | None = None) -> None:
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._lock = threading.Condition(threading.RLock())
        self._queues: dict[MessageQueue, _Queue] = {}
        self._offsets: dict[tuple[str, MessageQueue], int] = {}
        self._members: dict[str, dict[str, MembershipListener]] = defaultdict(dict)
        self._holders = QueueHolders()
        self.heartbeats: dict[str, ConsumerHeartbeat] = {}
        self._failures: dict[str, list[BaseException]] = defaultdict(list)
        self._waiting: list[tuple[float, int, HeldPull]] = []
        self._sequence = itertools.count()
        self._commit_log_offset = 0
        self.hold_pulls = False
        self.refuse_nonblocking_pulls = False
        """``pull_async(..., nonblocking=True)`` answers False (a pull that would block): the
        task's next run then goes to its scheduler."""
        self.refused_pulls = 0
        self.lazy_pulls = 0
        """Pulls sent with ``lazy`` (they would not have woken a real broker)."""
        self.held: list[HeldPull] = []
        self.pull_log: list[tuple[MessageQueue, int]] = []
        self.calls: dict[str, int] = defaultdict(int)
        self.endpoints: tuple[str, ...] = ()
        self._closed = False
        self._reaper = threading.Thread(target=self._reap, name="in-memory-broker", daemon=True)
        self._reaper.start()

    # -- administration -------------------------------------------------------------

    def create_topic(
        self, topic: str, queue_nums: int = 4, broker_names: Sequence[str] = ("broker-a",)
    ) -> list[MessageQueue]:
        """Create ``queue_nums`` queues of ``topic`` on each broker; the queues."""
        created = [
            MessageQueue(topic, broker, queue_id)
            for broker in broker_names
            for queue_id in range(queue_nums)
        ]
        with self._lock:
            for queue in created:
                self._queues.setdefault(queue, _Queue())
        return created

    def queues_of(self, topic: str) -> list[MessageQueue]:
        with self._lock:
            return sorted((q for q in self._queues if q.topic == topic), key=MessageQueue.order_key)

    def send(
        self,
        queue: MessageQueue,
        body: bytes,
        tags: str | None = None,
        properties: dict[str, str] | None = None,
        store_timestamp_ms: int | None = None,
    ) -> MessageExt:
        """Append a message to ``queue`` and wake the long polls waiting on it."""
        props = dict(properties or {})
        if tags:
            props[PROPERTY_TAGS] = tags
        with self._lock:
            stored = self._queue(queue)
            message = MessageExt(
                queue.topic,
                body,
                props,
                broker_name=queue.broker_name,
                queue_id=queue.queue_id,
                queue_offset=stored.max_offset,
                commit_log_offset=self._commit_log_offset,
                store_size=len(body),
                born_timestamp_ms=self._clock_ms(),
                store_timestamp_ms=self._clock_ms()
                if store_timestamp_ms is None
                else store_timestamp_ms,
            )
            self._commit_log_offset += len(body) + 100
            stored.messages.append(message)
            woken = [held for _, _, held in self._waiting if held.queue == queue]
            if woken:
                self._waiting = [entry for entry in self._waiting if entry[2].queue != queue]
                heapq.heapify(self._waiting)
        for held in woken:
            self._answer(held)
        return message

    def send_many(
        self, queue: MessageQueue, bodies: Iterable[bytes], tags: str | None = None
    ) -> None:
        for body in bodies:
            self.send(queue, body, tags)

    def remove_before(self, queue: MessageQueue, min_offset: int) -> None:
        """Drop the messages below ``min_offset`` (retention): the min offset rises."""
        with self._lock:
            stored = self._queue(queue)
            drop = max(0, min(min_offset, stored.max_offset) - stored.min_offset)
            del stored.messages[:drop]
            stored.min_offset += drop

    def fail_next(self, method: str, error: BaseException, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` (a BrokerApi method name) raise ``error``."""
        self._failures[method].extend([error] * times)

    def committed_offset(self, consumer_group: str, queue: MessageQueue) -> int:
        return self._offsets.get((consumer_group, queue), -1)

    def members(self, consumer_group: str) -> list[str]:
        with self._lock:
            return sorted(self._members[consumer_group])

    def kill(self, client_id: str, consumer_group: str) -> None:
        """Drop a member as a heartbeat timeout would (a crashed consumer)."""
        self.unregister(client_id, consumer_group)

    def release_held(self) -> int:
        """Answer every pull kept by :attr:`hold_pulls`, now; how many."""
        with self._lock:
            held, self.held = self.held, []
        for pull in held:
            self._answer(pull)
        return len(held)

    def shutdown(self) -> None:
        """Stop the long-poll reaper; held pulls are answered NO_NEW_MSG."""
        with self._lock:
            self._closed = True
            waiting = [entry[2] for entry in self._waiting]
            self._waiting.clear()
            self._lock.notify_all()
        for held in waiting:
            self._answer(held, expired=True)
        self._reaper.join(5)

    # -- BrokerApi ----------------------------------------------------------------------

    def fetch_subscribe_queues(self, topic: str) -> set[MessageQueue]:
        self._enter("fetch_subscribe_queues")
        with self._lock:
            found = {queue for queue in self._queues if queue.topic == topic}
        if not found:
            raise TopicNotFoundError("no route for the topic", topic=topic)
        return found

    def pull_async(
        self,
        queue: MessageQueue,
        subscription: SubscriptionData,
        consumer_group: str,
        offset: int,
        max_nums: int,
        suspend_timeout_ms: int,
        timeout_ms: int,
        callback: PullCallback,
        *,
        nonblocking: bool = False,
        lazy: bool = False,
    ) -> bool:
        if lazy:
            self.lazy_pulls += 1
        if nonblocking and self.refuse_nonblocking_pulls:
            self.refused_pulls += 1
            return False
        self._enter("pull_async")
        if offset < 0:
            raise IllegalArgumentError("pull offset must be >= 0", offset=offset)
        held = HeldPull(queue, subscription, offset, max_nums, callback)
        with self._lock:
            self.pull_log.append((queue, offset))
            if self.hold_pulls:
                self.held.append(held)
                return True
            result = self._pull(held)
            if result.status is PullStatus.NO_NEW_MSG and suspend_timeout_ms > 0:
                held.deadline_s = time.monotonic() + suspend_timeout_ms / 1000.0
                heapq.heappush(self._waiting, (held.deadline_s, next(self._sequence), held))
                self._lock.notify_all()
                return True
        callback(result, None)
        return True

    def query_offset(self, consumer_group: str, queue: MessageQueue) -> int:
        self._enter("query_offset")
        return self._offsets.get((consumer_group, queue), -1)

    def commit_offset(self, consumer_group: str, queue: MessageQueue, offset: int) -> None:
        self._enter("commit_offset")
        self._offsets[(consumer_group, queue)] = offset

    def acquire_queue(
        self, consumer_group: str, queue: MessageQueue, client_id: str, *, force: bool = False
    ) -> QueueGrant:
        self._enter("acquire_queue")
        with self._lock:
            members = self._members[consumer_group]
            holder = self._holders.acquire(
                consumer_group, queue, client_id, members.__contains__, force
            )
            if holder:
                return QueueGrant(holder)
            return QueueGrant("", self._offsets.get((consumer_group, queue), -1))

    def release_queue(
        self, consumer_group: str, queue: MessageQueue, offset: int, *, client_id: str
    ) -> None:
        self._enter("release_queue")
        with self._lock:
            if offset >= 0:
                self._offsets[(consumer_group, queue)] = offset
            self._holders.release(consumer_group, queue, client_id)

    def queue_holder(self, consumer_group: str, queue: MessageQueue) -> str:
        """Who holds ``queue`` in the group now (``""``: nobody)."""
        with self._lock:
            return self._holders.holder(consumer_group, queue)

    def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        self._enter("search_offset")
        with self._lock:
            stored = self._queue(queue)
            for message in stored.messages:
                if message.store_timestamp_ms >= timestamp_ms:
                    return message.queue_offset
            return stored.max_offset

    def min_offset(self, queue: MessageQueue) -> int:
        self._enter("min_offset")
        with self._lock:
            return self._queue(queue).min_offset

    def max_offset(self, queue: MessageQueue) -> int:
        self._enter("max_offset")
        with self._lock:
            return self._queue(queue).max_offset

    def consumer_ids(self, consumer_group: str, topic: str) -> list[str]:
        self._enter("consumer_ids")
        return self.members(consumer_group)

    def start_heartbeat(self, heartbeat: ConsumerHeartbeat, listener: MembershipListener) -> None:
        self._enter("start_heartbeat")
        group = heartbeat.consumer_group
        with self._lock:
            self.heartbeats[heartbeat.client_id] = heartbeat
            self._members[group][heartbeat.client_id] = listener
        self._push(group)

    def send_heartbeat(self, heartbeat: ConsumerHeartbeat) -> None:
        self._enter("send_heartbeat")
        with self._lock:
            self.heartbeats[heartbeat.client_id] = heartbeat

    def unregister(self, client_id: str, consumer_group: str) -> None:
        self._enter("unregister")
        with self._lock:
            known = self._members[consumer_group].pop(client_id, None)
            self._holders.forget(consumer_group, client_id)
        if known is not None:
            self._push(consumer_group)

    def update_endpoints(self, endpoints: Sequence[str]) -> None:
        self.endpoints = tuple(endpoints)

    def close(self) -> None:
        """Nothing: the broker outlives the consumers sharing it (see :meth:`shutdown`)."""

    # -- internals ------------------------------------------------------------------------

    def _enter(self, method: str) -> None:
        self.calls[method] += 1
        failures = self._failures.get(method)
        if failures:
            raise failures.pop(0)

    def _queue(self, queue: MessageQueue) -> _Queue:
        stored = self._queues.get(queue)
        if stored is None:
            raise TopicNotFoundError("no such queue", queue=str(queue))
        return stored

    def _push(self, group: str) -> None:
        with self._lock:
            listeners = list(self._members[group].values())
            ids = sorted(self._members[group])
        for listener in listeners:
            listener(group, ids)

    def _pull(self, held: HeldPull) -> PullResult:
        stored = self._queue(held.queue)
        offset = held.offset
        low, high = stored.min_offset, stored.max_offset
        if high == 0:
            if offset != 0:
                return PullResult(PullStatus.OFFSET_ILLEGAL, 0, low, high)
            return PullResult(PullStatus.NO_NEW_MSG, 0, low, high)
        if offset < low:
            return PullResult(PullStatus.OFFSET_ILLEGAL, low, low, high)
        if offset > high:
            return PullResult(PullStatus.OFFSET_ILLEGAL, high, low, high)
        if offset == high:
            return PullResult(PullStatus.NO_NEW_MSG, offset, low, high)
        subscription = held.subscription
        found: list[MessageExt] = []
        size = 0
        next_offset = offset
        limit = min(held.max_nums, MAX_PULL_MESSAGES)
        for message in stored.messages[offset - low :]:
            if len(found) >= limit or (found and size + len(message.body) > MAX_PULL_BYTES):
                break
            next_offset = message.queue_offset + 1
            tag = message.tags
            if subscription.is_sub_all or (
                tag is not None and subscription.matches_tag_code(tag_hash_code(tag))
            ):
                found.append(message)
                size += len(message.body)
            if next_offset - offset >= 16 * MAX_PULL_MESSAGES:
                break
        if not found:
            return PullResult(PullStatus.NO_MATCHED_MSG, next_offset, low, high)
        return PullResult(PullStatus.FOUND, next_offset, low, high, found)

    def _answer(self, held: HeldPull, expired: bool = False) -> None:
        with self._lock:
            try:
                result = self._pull(held)
            except Exception as error:
                outcome: tuple[PullResult | None, BaseException | None] = (None, error)
            else:
                outcome = (result, None)
        held.callback(*outcome)

    def _reap(self) -> None:
        lock = self._lock
        while True:
            expired: list[HeldPull] = []
            with lock:
                if self._closed:
                    return
                now = time.monotonic()
                while self._waiting and self._waiting[0][0] <= now:
                    expired.append(heapq.heappop(self._waiting)[2])
                if not expired:
                    wait = self._waiting[0][0] - now if self._waiting else None
                    lock.wait(wait)
                    continue
            for held in expired:
                self._answer(held, expired=True)


class ManualScheduler:
    """Records ``schedule(delay_ms, action)`` calls; tests run them with :meth:`run_next`."""

    def __init__(self) -> None:
        self.pending: list[tuple[int, Callable[[], None]]] = []

    def schedule(self, delay_ms: int, action: Callable[[], None]) -> None:
        self.pending.append((delay_ms, action))

    def run_next(self) -> int:
        """Run the oldest recorded action; its delay."""
        delay_ms, action = self.pending.pop(0)
        action()
        return delay_ms

    def delays(self) -> list[int]:
        return [delay for delay, _ in self.pending]
