"""Pull tasks: one per owned queue, pulling from the broker into the consume-request cache.

A :class:`PullTask` run, in order (RocketMQ's ``PullTaskImpl.run``):

1. cancelled, or the queue no longer owned or its process queue dropped -> stop;
2. paused -> run again in ``pull_time_delay_ms_when_pause`` (1000 ms);
3. flow control, each -> run again in 50 ms and count it in :class:`FlowControlCounters`:
   cached requests * ``pull_batch_size`` > ``pull_threshold_for_all`` (``consume_request``);
   the queue's cached count > ``pull_threshold_for_queue`` or body bytes >
   ``pull_threshold_size_for_queue_mib`` (``queue``); its offset span > ``consume_max_span``
   (``queue_max_span``);
4. the next offset: a pending seek (taken: the consume offset becomes it), else the pull offset
   (fixed when the queue was allocated); if still -1 (the broker could not say then), compute
   it (committed offset, else ``consume_from_where``) on the executor and run again; a queue a
   rebalance gave this consumer (``take_over``) is first acquired from the broker on the
   executor: granted (nobody else holds it, or its holder released it with its last commit,
   or left the group), it starts at the committed offset the grant carries, if there is one;
   refused (its holder, a live member, has not let go yet), the task asks again in
   :data:`RELEASE_POLL_MS`, and forces the take-over once ``release_timeout_ms`` passed since
   its first ask; a pull is never sent at offset -1 (RocketMQ bug #10176 let the broker answer
   OFFSET_ILLEGAL and move a -1 pull to the min offset, re-consuming the queue);
5. an asynchronous long-poll pull.

The result, under the queue's lock: it is used only if the task is not cancelled, the queue's
state and process queue are the very objects the pull was issued for, and no seek is pending
(RocketMQ bug #2732: a stale task of a queue rebalanced away and back overwrote the new pull
offset and lost messages). FOUND caches the messages (filtered again on tag strings: the broker
filters on hash codes) and queues a consume request; every status moves the pull offset to
``next_begin_offset``. Then the task runs again at once, on the thread that read the answer
(``BrokerApi.pull_async`` with ``nonblocking``: a pull that cannot be sent without blocking,
such as one whose route must be fetched first, goes to the scheduler's thread instead); after
a broker flow-control error (:class:`~client.BrokerBusyError`) in 20 ms, after other errors in
``pull_time_delay_ms_when_exception`` (3000 ms), except a broker found unavailable (its session
failed, its driver died): that pull is tried again within 250 ms on a fresh route, so a
restarted broker is found within a second or two of being ready.

A run on the thread that read an answer showing the queue caught up (its next offset the
queue's max offset, whatever the status but OFFSET_ILLEGAL: the pull would only be held until
the next arrival) sends its pull *lazy* (``BrokerApi.pull_async(..., lazy=True)``): it does not
wake the broker, which reads it when the next send wakes it (in that send's duty cycle, so
the message is answered as soon as before) or within its idle park otherwise. Such a pull asks
to be held no longer than :data:`LAZY_PULL_MARGIN_MS` short of the pull's timeout, so that the
broker's late read never runs it past the client's deadline. A first pull, a pull after a
backlog's answer, after an error, a pause, a seek or a rebalance (every run from the
scheduler), and pulls of retry topics (their messages come from the broker's timer, not from a
send that would wake it) still wake the broker at once.

When that answer cached messages and was read by the thread of a ``poll()`` (the consumer's
answer pump: one broker, which rings it), the caught-up queue's next run is not made before
that ``poll()`` returns them: it is left to the cache (``ConsumeRequestCache.defer``) and runs
at the start of the application's next ``poll()``, before it waits
(``defer_caught_up_pulls``, on by default; counted in ``deferred_pulls``), or from the
scheduler once ``deferred_pull_max_delay_ms`` (100 ms) passed without a ``poll()``, whichever
comes first (the cache runs it once). The pull would only be held at the broker until the next
arrival; made first, its run and offer (about 45 us here) stood between every message's arrival
and the ``poll()`` that returned it. Meanwhile nothing is pulled for that queue: what arrives
while the application works between two polls comes one round trip after its next ``poll()``
starts (a Kafka consumer's fetches, too, go out in ``poll()``), unless the work outlasts the
bound. The bound keeps a pull out for an application that stops polling: the broker session's
liveness check runs only while a request waits, so without it a broker that died meanwhile was
found only after the next ``poll()``. A queue with a backlog pulls at once, as before.

A task is a chain of runs: each run schedules at most one next run, and :meth:`PullTask.start`
starts the chain once, so a task can never be scheduled twice; :class:`PullTaskTable` keeps at
most one task per queue under its lock (RocketMQ bug #10630: a check-then-put race started two
tasks for one queue).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import partial as _partial

from aeromq.client import (
    BrokerBusyError,
    BrokerUnavailableError,
    ClientError,
    CorruptMessageError,
    ExpressionType,
    MessageExt,
    MessageQueue,
    SubscriptionData,
)
from aeromq.common import LatencyHistogram, is_retry_topic
from aeromq.consumer._broker_api import BrokerApi, PullResult, PullStatus, QueueGrant
from aeromq.consumer.assigned_queues import AssignedMessageQueue, QueueState
from aeromq.consumer.config import LitePullConsumerConfig
from aeromq.consumer.consume_request_cache import ConsumeRequest, ConsumeRequestCache
from aeromq.consumer.message_batch import MessageBatch, PulledMessages
from aeromq.consumer.process_queue import ProcessQueue
from aeromq.consumer.scheduler import Scheduler

__all__ = [
    "LAZY_PULL_MARGIN_MS",
    "RELEASE_POLL_MS",
    "FlowControlCounters",
    "PullTask",
    "PullTaskContext",
    "PullTaskTable",
]

_UNAVAILABLE_RETRY_MS = 250  # a pull on a broker found unavailable: tried again this soon

_log = logging.getLogger(__name__)

RELEASE_POLL_MS = 10
"""How soon a task whose queue is still held by its previous owner asks the broker again. The
previous owner releases as soon as its rebalance drops the queue (tens of ms after the same
membership push), so a short poll keeps the hand-over gap near that; each ask is one small
offset query, and only while a hand-over is under way."""

LAZY_PULL_MARGIN_MS = 1_000
"""A lazy pull (see the module doc) asks the broker to hold it at most this much less than its
timeout (``consumer_timeout_ms_when_suspend``), whatever ``broker_suspend_max_time_ms`` says: the
broker may read it up to its idle park late (100 ms while every client rings, 1 s without
sessions), and the answer must still come before the client gives the pull up."""

Executor = Callable[[Callable[[], None]], object]
"""Runs blocking work off the scheduler thread (``ThreadPoolExecutor.submit``)."""


@dataclass(slots=True)
class FlowControlCounters:
    """What pull tasks did, observable for tests and metrics (RocketMQ counts the first three)."""

    consume_request: int = 0
    """Runs delayed because the consume-request cache was over ``pull_threshold_for_all``."""
    queue: int = 0
    """Runs delayed because a queue's cached count or body size was over its threshold."""
    queue_max_span: int = 0
    """Runs delayed because a queue's cached offset span was over ``consume_max_span``."""
    paused: int = 0
    pulls: int = 0
    lazy_pulls: int = 0
    """Pulls sent lazy: a caught-up queue's next pull, which does not wake the broker."""
    deferred_pulls: int = 0
    """Caught-up queues' next pulls left to the application's next ``poll()`` (see the module
    doc)."""
    found: int = 0
    broker_busy: int = 0
    pull_errors: int = 0
    offset_errors: int = 0
    stale_results: int = 0
    """Pull results dropped: the task was cancelled, the queue re-owned or a seek pending."""
    release_waits: int = 0
    """Asks for a queue refused because its previous holder had not released it yet."""
    corrupt_pulls: int = 0
    """Pull answers whose record batches failed their check (nothing of them delivered)."""
    messages_pulled: int = 0
    """Messages pulled into the cache (after the client-side tag filter)."""
    messages_polled: int = 0
    """Messages ``poll`` and ``poll_batch`` returned to the application."""
    pull_latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    """From a pull's request to its answer (a long poll's wait included); once per pull."""


@dataclass(slots=True)
class PullTaskContext:
    """What every pull task of a consumer shares."""

    config: LitePullConsumerConfig
    broker_api: BrokerApi
    assigned: AssignedMessageQueue
    cache: ConsumeRequestCache
    scheduler: Scheduler
    executor: Executor
    subscription_for: Callable[[str], SubscriptionData | None]
    compute_start_offset: Callable[[MessageQueue], int]
    counters: FlowControlCounters
    failures: collections.deque[ClientError] = field(
        default_factory=lambda: collections.deque(maxlen=64)
    )
    """Errors for the application (corrupt pulled batches): ``poll`` raises them, oldest first."""
    acquire: Callable[[MessageQueue, bool], QueueGrant] | None = None
    """``acquire(queue, force)``: the broker's grant of a queue to take over (``take_over``);
    None: every queue is granted at once, with no committed offset."""
    run_on_answer: bool = True
    """After an answer, the task's next run on the thread that read it (see the module doc);
    False: every run from the scheduler (tests that step a manual scheduler run by run)."""
    defer_caught_up: bool = True
    """A caught-up queue's next pull waits for the application's next ``poll()`` when its
    answer was read by a ``poll()`` (``defer_caught_up_pulls``, see the module doc)."""


def _tag_filter(subscription: SubscriptionData) -> frozenset[str] | None:
    if subscription.expression_type is not ExpressionType.TAG or subscription.is_sub_all:
        return None
    return frozenset(subscription.tags)


class PullTask:
    """The pull loop of one queue (see the module doc)."""

    __slots__ = (
        "_answering",
        "_caught_up",
        "_ctx",
        "_first_ask_ns",
        "_retry_topic",
        "_size_limit",
        "_start_lock",
        "_started",
        "cancelled",
        "queue",
    )

    def __init__(self, queue: MessageQueue, context: PullTaskContext) -> None:
        self.queue = queue
        self._ctx = context
        self._retry_topic = is_retry_topic(queue.topic)
        self._size_limit = (context.config, context.config.pull_threshold_size_for_queue_bytes)
        """The config and its queue's size threshold in bytes (a property: a Python call)."""
        self.cancelled = False
        self._started = False
        self._start_lock = threading.Lock()
        self._first_ask_ns = -1
        self._answering = False  # a run from the thread that read the last answer is under way
        self._caught_up = False  # the last answer left the queue caught up: the next pull lazy

    def start(self, delay_ms: int = 0) -> bool:
        """Schedule the first run in ``delay_ms``; False (and nothing scheduled) if started
        before."""
        with self._start_lock:
            if self._started or self.cancelled:
                return False
            self._started = True
        self._ctx.scheduler.schedule(delay_ms, self.run)
        return True

    def cancel(self) -> None:
        """Stop after the current step; a result arriving later is dropped."""
        self.cancelled = True

    def _again(self, delay_ms: int) -> None:
        if not self.cancelled:
            self._ctx.scheduler.schedule(delay_ms, self.run)

    def run(self) -> None:
        """One step of the loop; schedules the next one (or none: stopped)."""
        self._step(False)

    def _step(self, answering: bool) -> None:
        """:meth:`run`; ``answering``: on the thread that read the last answer, which must not
        block (the pull is sent only if it can be at once, else the run is scheduled)."""
        if self.cancelled:
            return
        lazy = answering and self._caught_up
        self._caught_up = False
        ctx = self._ctx
        config = ctx.config
        counters = ctx.counters
        state = ctx.assigned.state(self.queue)
        if state is None or state.process_queue.dropped:
            _log.info("queue dropped, pull task stops: queue=%s", self.queue)
            self.cancelled = True
            return
        if state.paused:
            counters.paused += 1
            self._again(config.pull_time_delay_ms_when_pause)
            return
        process_queue = state.process_queue
        if ctx.cache.size() * config.pull_batch_size > config.pull_threshold_for_all:
            counters.consume_request += 1
            self._again(config.pull_time_delay_ms_when_flow_control)
            return
        size_limit = self._size_limit
        if size_limit[0] is not config:
            size_limit = self._size_limit = (config, config.pull_threshold_size_for_queue_bytes)
        cached = process_queue.msg_count
        if cached > config.pull_threshold_for_queue or process_queue.msg_size > size_limit[1]:
            counters.queue += 1
            self._again(config.pull_time_delay_ms_when_flow_control)
            return
        # (one message or none cached spans 0: no look at the span, which takes the lock)
        if cached > 1 and process_queue.max_span > config.consume_max_span:
            counters.queue_max_span += 1
            self._again(config.pull_time_delay_ms_when_flow_control)
            return
        with state.lock:
            if state.process_queue is not process_queue:
                self._again(0)
                return
            if state.seek_offset != -1:
                offset = state.seek_offset
                state.consume_offset = offset
                state.seek_offset = -1
                state.take_over = False  # a seek wins over the committed offset
                lazy = False
            else:
                offset = state.pull_offset
        if offset < 0 or state.take_over:
            ctx.executor(lambda: self._compute_offset(state, process_queue))
            return
        subscription = ctx.subscription_for(self.queue.topic)
        if subscription is None:
            _log.info("topic no longer subscribed, pull task stops: queue=%s", self.queue)
            self.cancelled = True
            return
        counters.pulls += 1
        suspend_ms = config.broker_suspend_max_time_ms
        if lazy:
            counters.lazy_pulls += 1
            timeout_ms = config.consumer_timeout_ms_when_suspend
            suspend_ms = max(0, min(suspend_ms, timeout_ms - LAZY_PULL_MARGIN_MS))
        # the answer's callback: _on_pull bound to this pull (a partial, called in C: no
        # closure that calls it, a Python call fewer a pull)
        on_pull = _partial(
            self._on_pull, state, process_queue, subscription, time.perf_counter_ns()
        )
        try:
            sent = ctx.broker_api.pull_async(
                self.queue,
                subscription,
                config.consumer_group,
                offset,
                config.pull_batch_size,
                suspend_ms,
                config.consumer_timeout_ms_when_suspend,
                on_pull,
                nonblocking=answering,
                lazy=lazy,
            )
        except Exception as error:
            on_pull(None, error)
            return
        if not sent:  # it would have blocked: from the scheduler's thread
            counters.pulls -= 1
            counters.lazy_pulls -= lazy
            self._again(0)

    def _compute_offset(self, state: QueueState, process_queue: ProcessQueue) -> None:
        """On the executor: the grant of a queue to take over (``take_over``), or the start
        offset of a queue with pull offset -1."""
        ctx = self._ctx
        if state.take_over:
            self._take_over(state, process_queue)
            return
        try:
            offset = ctx.compute_start_offset(self.queue)
        except Exception as error:
            ctx.counters.offset_errors += 1
            _log.warning("computing the start offset failed: queue=%s: %s", self.queue, error)
            offset = -1
        if offset < 0:
            self._again(ctx.config.pull_time_delay_ms_when_exception)
            return
        with state.lock:
            if (
                state.process_queue is process_queue
                and not process_queue.dropped
                and state.pull_offset < 0
                and state.seek_offset == -1
            ):
                state.pull_offset = offset
        self._again(0)

    def _take_over(self, state: QueueState, process_queue: ProcessQueue) -> None:
        ctx = self._ctx
        now_ns = time.monotonic_ns()
        if self._first_ask_ns < 0:
            self._first_ask_ns = now_ns
        waited_ms = (now_ns - self._first_ask_ns) // 1_000_000
        force = waited_ms >= ctx.config.release_timeout_ms
        grant = QueueGrant("")
        if ctx.acquire is not None:
            try:
                grant = ctx.acquire(self.queue, force)
            except Exception as error:
                ctx.counters.offset_errors += 1
                _log.warning("acquiring the queue failed: queue=%s: %s", self.queue, error)
                self._again(ctx.config.pull_time_delay_ms_when_exception)
                return
        if not grant.granted:
            ctx.counters.release_waits += 1
            self._again(RELEASE_POLL_MS)
            return
        if force:
            _log.warning(
                "queue taken over from a holder that did not release it in %d ms: queue=%s",
                waited_ms, self.queue,
            )  # fmt: skip
        with state.lock:
            state.take_over = False
            if (
                grant.committed_offset >= 0
                and state.process_queue is process_queue
                and not process_queue.dropped
                and state.seek_offset == -1
            ):
                state.pull_offset = grant.committed_offset
        self._again(0)

    def _on_pull(
        self,
        state: QueueState,
        process_queue: ProcessQueue,
        subscription: SubscriptionData,
        started_ns: int,
        result: PullResult | None,
        error: BaseException | None,
    ) -> None:
        ctx = self._ctx
        counters = ctx.counters
        counters.pull_latency.observe_ns(time.perf_counter_ns() - started_ns)
        if result is None:
            if self.cancelled:
                return
            if isinstance(error, BrokerBusyError):
                counters.broker_busy += 1
                self._again(ctx.config.pull_time_delay_ms_when_broker_busy)
            elif isinstance(error, BrokerUnavailableError):
                counters.pull_errors += 1
                _log.info(
                    "broker unavailable, looking it up again: queue=%s: %s", self.queue, error
                )
                delay_ms = ctx.config.pull_time_delay_ms_when_exception
                self._again(min(delay_ms, _UNAVAILABLE_RETRY_MS))
            elif isinstance(error, CorruptMessageError):
                counters.corrupt_pulls += 1
                _log.error("%s", error)
                ctx.failures.append(error)
                self._again(ctx.config.pull_time_delay_ms_when_exception)
            else:
                counters.pull_errors += 1
                _log.warning("pull failed: queue=%s: %r", self.queue, error)
                self._again(ctx.config.pull_time_delay_ms_when_exception)
            return
        cached = False
        with state.lock:
            if (
                self.cancelled
                or state.process_queue is not process_queue
                or process_queue.dropped
                or state.seek_offset != -1
                or ctx.assigned.state(self.queue) is not state
            ):
                counters.stale_results += 1
            else:
                messages = result.messages
                if result.status is PullStatus.FOUND and messages:
                    counters.found += 1
                    if not isinstance(messages, (PulledMessages, MessageBatch)):
                        messages = self._filter(messages, subscription)
                    if messages:
                        counters.messages_pulled += len(messages)
                        process_queue.put_messages(messages)
                        ctx.cache.put(ConsumeRequest(messages, self.queue, process_queue))
                        cached = True
                elif result.status is PullStatus.OFFSET_ILLEGAL:
                    _log.warning(
                        "pull offset illegal: queue=%s next_begin_offset=%d min=%d max=%d",
                        self.queue,
                        result.next_begin_offset,
                        result.min_offset,
                        result.max_offset,
                    )
                state.pull_offset = result.next_begin_offset
                self._caught_up = (
                    result.next_begin_offset >= result.max_offset
                    and result.status is not PullStatus.OFFSET_ILLEGAL
                    and not self._retry_topic
                )
        # After an answer: the next run at once, here on the thread that read it (a hand-off
        # to the scheduler's thread cost a thread wake-up per pull), unless this answer came
        # within such a run (a broker API that answers at once): then from the scheduler.
        if self._answering or not ctx.run_on_answer:
            self._again(0)
            return
        # A caught-up queue's next pull, from the thread of a poll() that returns these
        # messages next: sent when the application next calls poll() (see the module doc).
        if cached and self._caught_up and ctx.defer_caught_up and ctx.cache.defer(self._run_here):
            counters.deferred_pulls += 1
            return
        self._run_here()

    def _run_here(self) -> None:
        """The next run, on the thread that read the last answer (or, deferred, on the next
        ``poll()``'s: see :meth:`_on_pull`), which must not block."""
        self._answering = True
        try:
            self._step(True)
        finally:
            self._answering = False

    @staticmethod
    def _filter(
        messages: Collection[MessageExt], subscription: SubscriptionData
    ) -> Sequence[MessageExt]:
        """A broker API's messages cut to the subscription's tags (a pulled batch or a small
        pull's messages were cut as they were read: not here)."""
        tags = _tag_filter(subscription)
        if tags is None:
            return list(messages)
        return [message for message in messages if message.tags in tags]


class PullTaskTable:
    """At most one :class:`PullTask` per queue (see the module doc)."""

    __slots__ = ("_context", "_lock", "_tasks")

    def __init__(self, context: PullTaskContext) -> None:
        self._context = context
        self._lock = threading.Lock()
        self._tasks: dict[MessageQueue, PullTask] = {}

    def __contains__(self, queue: object) -> bool:
        return queue in self._tasks

    def __len__(self) -> int:
        return len(self._tasks)

    def get(self, queue: MessageQueue) -> PullTask | None:
        return self._tasks.get(queue)

    def queues(self) -> set[MessageQueue]:
        with self._lock:
            return set(self._tasks)

    def start(self, queues: Collection[MessageQueue], delay_ms: int = 0) -> list[MessageQueue]:
        """Start a task for each queue without one, first run in ``delay_ms``; the queues
        started."""
        started: list[PullTask] = []
        with self._lock:
            for queue in queues:
                if queue not in self._tasks:
                    task = self._tasks[queue] = PullTask(queue, self._context)
                    started.append(task)
        for task in started:
            task.start(delay_ms)
        return [task.queue for task in started]

    def restart(self, queue: MessageQueue) -> None:
        """Replace the queue's task by a new one that runs at once (after a seek)."""
        with self._lock:
            old = self._tasks.get(queue)
            if old is None:
                return
            old.cancel()
            task = self._tasks[queue] = PullTask(queue, self._context)
        task.start()

    def cancel(self, queues: Collection[MessageQueue]) -> None:
        with self._lock:
            for queue in queues:
                task = self._tasks.pop(queue, None)
                if task is not None:
                    task.cancel()

    def cancel_topic(self, topic: str) -> None:
        with self._lock:
            gone = [queue for queue in self._tasks if queue.topic == topic]
        self.cancel(gone)

    def retain(self, queues: Collection[MessageQueue], topic: str | None = None) -> None:
        """Cancel tasks of queues not in ``queues`` (of ``topic``, or of every topic), then
        start tasks for the new ones."""
        with self._lock:
            gone = [
                queue
                for queue in self._tasks
                if queue not in queues and (topic is None or queue.topic == topic)
            ]
        self.cancel(gone)
        self.start(queues)

    def cancel_all(self) -> None:
        with self._lock:
            tasks = list(self._tasks.values())
            self._tasks.clear()
        for task in tasks:
            task.cancel()
