r"""``DefaultLitePullConsumer``: RocketMQ's lite pull consumer (``docs/lite-pull-consumer.md``).

::

    consumer = DefaultLitePullConsumer("group", "127.0.0.1:9876")
    consumer.subscribe("TopicTest", "TagA || TagB")
    with consumer:                     # starts it once; shuts it down at the end
        for message in consumer:       # blocks; ends when the consumer shuts down
            handle(message)            # offsets commit automatically (auto_commit)

or ``consumer.start()``, ``consumer.poll()`` in a loop and ``consumer.shutdown()``.

How it works: the rebalance service (subscribe) or ``assign`` decides the owned queues; one pull
task per queue long-polls the broker into a process queue and the consume-request cache; ``poll``
takes from the cache. Pull tasks share one scheduler thread and issue asynchronous pulls (one
event loop rather than RocketMQ's 20 pull threads: no queue waits behind another's long poll,
and no thread per queue); blocking control calls (start offsets, persisting, heartbeats,
metadata checks) run on a small executor.

What ``poll`` returns: up to ``max_poll_records`` messages (default 500) gathered across queues
and pull batches, waiting up to the timeout for the first batch only. RocketMQ returns exactly
one pull batch (at most ``pull_batch_size``, default 10, messages of one queue) per poll, which
users took for "poll returns only one message" (RocketMQ #5498, #1761). Messages of one queue
come in offset order. Delivery is at least once: a message comes again after a seek, or when its
consumer died before committing it. A clean rebalance (a member joins or leaves) hands each
moved queue over at the offset its previous owner committed as it let go, so nothing is
delivered twice then: the new owner pulls once the broker grants it the queue, which is as
soon as the previous owner committed and released it, or left the group (see
``aeromq.consumer.rebalance``).

Messages travel as record batches (``common/record_batch/``): ``poll`` returns
``MessageExt``\ s that read their fields from the pulled bytes when asked, and ``poll_batch``
returns the same messages as one :class:`~consumer.MessageBatch` of numpy columns and Arrow
buffers, with no Python object per message (the path of the Spark connector). A pulled batch
that fails its CRC is never delivered: the next poll raises ``CorruptMessageError``.

Start offsets (``docs/lite-pull-consumer.md``): a queue's start offset is fixed when the queue
is allocated or assigned, before it shows in ``assignment()`` and, for the queues of the
first rebalance, before ``start()`` returns (of a topic subscribed while running: before
``subscribe()`` returns); so a message sent after ``start()`` returned is
delivered with the default ``LAST_OFFSET``, and a queue paused before ``start()`` and resumed
later delivers what was sent meanwhile. A queue that appears in a subscribed topic's route
after the consumer first saw the topic is read from its first offset, and the route check
(every ``topic_metadata_check_interval_ms``) rebalances at once when a subscribed topic's
queues change.

Python habits: ``for message in consumer`` iterates (blocking, ends at shutdown);
``position(queue)``, ``beginning_offsets(queues)`` and ``end_offsets(queues)`` as in
kafka-python; ``value_deserializer`` turns each body into ``message.value``; the asyncio
consumer is :class:`aeromq.aio.AsyncLitePullConsumer`.

Offsets: ``poll`` moves each queue's consume offset past what it returned. With ``auto_commit``
(default), the next ``poll`` after ``auto_commit_interval_ms`` commits the consume offsets in
memory and a timer persists them every ``persist_consumer_offset_interval_ms``; with it off,
only ``commit`` moves committed offsets (RocketMQ #5315). Offsets are persisted when a queue is
rebalanced away and at shutdown.

Deviations from RocketMQ, each deliberate: configuration is one validated
:class:`~consumer.config.LitePullConsumerConfig` (errors at construction, not at ``start``);
``commit`` persists by default; a consumer in ``assign`` mode does not join its group (as
Kafka's manual assignment), so it does not take queues from subscribed members; seeking does not
touch the offset store (it moves the consume offset, which the next commit commits); a queue
moved by a rebalance is pulled by its new owner only once the broker grants it (its previous
owner released it, or left; RocketMQ locks queues this way for orderly consumption only); the
start offset of a never-committed queue is fixed at allocation, not at its first pull.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import Enum
from types import TracebackType
from typing import Any

from aeromq.client import (
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    MessageExt,
    MessageQueue,
    MessageSelector,
    MetricsServer,
    OffsetIllegalError,
    SubscriptionData,
    build_subscription_data,
    call_hooks,
    serve_metrics,
)
from aeromq.common import check_topic
from aeromq.consumer._broker_api import BrokerApi, ConsumerHeartbeat, QueueGrant
from aeromq.consumer._grpc_broker_api import GrpcBrokerApi
from aeromq.consumer._hooks import ConsumeMessageContext, ConsumeMessageHook
from aeromq.consumer._metrics import ConsumerMetrics
from aeromq.consumer.allocate import AllocateMessageQueueAveragely, AllocateMessageQueueStrategy
from aeromq.consumer.assigned_queues import AssignedMessageQueue, QueueState
from aeromq.consumer.config import LitePullConsumerConfig, MessageModel, SubscriptionType
from aeromq.consumer.consume_request_cache import ConsumeRequest
from aeromq.consumer.message_batch import MessageBatch, as_message_batch
from aeromq.consumer.notifying_cache import NotifyingRequestCache
from aeromq.consumer.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from aeromq.consumer.pull_task import FlowControlCounters, PullTaskContext, PullTaskTable
from aeromq.consumer.rebalance import MessageQueueListener, RebalanceService
from aeromq.consumer.scheduler import TaskScheduler

__all__ = [
    "DefaultLitePullConsumer",
    "DeliveryListener",
    "ServiceState",
    "TopicMessageQueueChangeListener",
    "ValueDeserializer",
]

_log = logging.getLogger(__name__)

TopicMessageQueueChangeListener = Callable[[str, set[MessageQueue]], None]
"""``listener(topic, queues)``: the topic's queues changed (checked every
``topic_metadata_check_interval_ms``)."""

ValueDeserializer = Callable[[bytes], Any]
"""``value_deserializer(body)``: what ``message.value`` holds for each polled message."""

DeliveryListener = Callable[[], None]
"""``listener()``: pulled messages are waiting for ``poll`` (called on a pull thread; must be
quick and must not block: the asyncio consumer hands it to its event loop)."""

_instance_numbers = itertools.count()


class ServiceState(Enum):
    CREATE_JUST = "CREATE_JUST"
    START_FAILED = "START_FAILED"
    RUNNING = "RUNNING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"


def _local_ip() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _default_broker_api(config: LitePullConsumerConfig, client_id: str) -> BrokerApi:
    """The network implementation (gRPC control plane, transport sessions for pulls)."""
    if not config.endpoints:
        raise IllegalArgumentError(
            "no endpoints: give the gRPC address of a name server or broker",
            group=config.consumer_group,
        )
    return GrpcBrokerApi(config, client_id)


class DefaultLitePullConsumer:
    """RocketMQ's ``DefaultLitePullConsumer`` (see the module doc).

    ``DefaultLitePullConsumer(consumer_group, endpoints=(), *, config=None,
    allocate_strategy=AVERAGELY, message_queue_listener=None, broker_api=None,
    value_deserializer=None)``: give either a group (and endpoints), taking every other
    default, or a full ``config``. ``broker_api`` replaces the network client (tests use
    :class:`consumer.testing.InMemoryBroker`); ``value_deserializer(body)`` sets each polled
    message's ``value`` (kafka-python's).
    """

    def __init__(
        self,
        consumer_group: str | None = None,
        endpoints: str | Sequence[str] = (),
        *,
        config: LitePullConsumerConfig | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        message_queue_listener: MessageQueueListener | None = None,
        broker_api: BrokerApi | None = None,
        value_deserializer: ValueDeserializer | None = None,
    ) -> None:
        if value_deserializer is not None and not callable(value_deserializer):
            raise IllegalArgumentError("the value_deserializer must be callable")
        if config is None:
            if consumer_group is None:
                raise IllegalArgumentError("give a consumer_group or a config")
            given = (endpoints,) if isinstance(endpoints, str) else tuple(endpoints)
            config = LitePullConsumerConfig(consumer_group=consumer_group, endpoints=given)
        elif consumer_group is not None and consumer_group != config.consumer_group:
            raise IllegalArgumentError(
                "consumer_group differs from config.consumer_group",
                consumer_group=consumer_group,
                config_group=config.consumer_group,
            )
        self._config = config
        self._strategy = allocate_strategy or AllocateMessageQueueAveragely()
        self._message_queue_listener = message_queue_listener
        self._given_api = broker_api
        self._api: BrokerApi | None = None
        self._lock = threading.RLock()
        self._poll_lock = threading.Lock()
        self._state = ServiceState.CREATE_JUST
        self._subscription_type = SubscriptionType.NONE
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._assign_expressions: dict[str, SubscriptionData] = {}
        self._topic_listeners: dict[str, TopicMessageQueueChangeListener] = {}
        self._topic_queues: dict[str, set[MessageQueue]] = {}
        self._assigned = AssignedMessageQueue()
        self._cache = NotifyingRequestCache()
        self._failures: collections.deque[ClientError] = collections.deque(maxlen=64)
        self._counters = FlowControlCounters()
        self._client_id = ""
        self._heartbeating = False
        self._next_auto_commit_s = -1.0
        self._scheduler: TaskScheduler | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._tasks: PullTaskTable | None = None
        self._offset_store: OffsetStore | None = None
        self._rebalance: RebalanceService | None = None
        self._value_deserializer = value_deserializer
        self._consume_hooks: list[ConsumeMessageHook] = []

    # -- properties ------------------------------------------------------------------

    @property
    def config(self) -> LitePullConsumerConfig:
        return self._config

    @config.setter
    def config(self, config: LitePullConsumerConfig) -> None:
        """Replace the configuration before ``start``. Caller: the application.
        Affects: everything started later. Raises IllegalStateError once started."""
        with self._lock:
            if self._state is not ServiceState.CREATE_JUST:
                raise IllegalStateError(
                    "the config can change only before start", state=self._state.name
                )
            if config.consumer_group != self._config.consumer_group:
                raise IllegalArgumentError("the consumer group cannot change")
            self._config = config

    @property
    def consumer_group(self) -> str:
        return self._config.consumer_group

    @property
    def client_id(self) -> str:
        """``ip@instance``, set by ``start``."""
        return self._client_id

    @property
    def is_running(self) -> bool:
        return self._state is ServiceState.RUNNING

    @property
    def service_state(self) -> ServiceState:
        return self._state

    @property
    def subscription_type(self) -> SubscriptionType:
        return self._subscription_type

    @property
    def flow_control_counters(self) -> FlowControlCounters:
        """What the pull tasks did: flow-control delays by check, pulls, errors."""
        return self._counters

    def metrics(self) -> ConsumerMetrics:
        """What this consumer did since it was made (pulls, messages pulled and polled,
        errors, flow-control delays, rebalances, the pull latency) and its cache now.
        Caller: the application, any thread. Affects: nothing."""
        counters = self._counters
        rebalance = self._rebalance
        cached = cached_bytes = 0
        for state in self._assigned.states():
            cached += state.process_queue.msg_count
            cached_bytes += state.process_queue.msg_size
        return ConsumerMetrics(
            pulls=counters.pulls,
            messages_pulled=counters.messages_pulled,
            messages_polled=counters.messages_polled,
            pull_errors=counters.pull_errors + counters.broker_busy + counters.corrupt_pulls,
            flow_control_events=counters.consume_request + counters.queue + counters.queue_max_span,
            paused_delays=counters.paused,
            rebalances=0 if rebalance is None else rebalance.runs,
            assigned_queues=len(self._assigned),
            cached_messages=cached,
            cached_bytes=cached_bytes,
            pull_latency=counters.pull_latency.snapshot(),
        )

    def serve_metrics(self, host: str = "127.0.0.1", port: int = 0) -> MetricsServer:
        """Serve :meth:`metrics` at ``http://host:port/metrics`` for Prometheus
        (``aeromq_consumer_*``, labelled with the group and client id); ``close()`` the answer
        to stop."""
        labels = {"group": self.consumer_group, "client_id": self._client_id}
        return serve_metrics("aeromq_consumer", self.metrics, labels, host=host, port=port)

    @property
    def offset_store(self) -> OffsetStore | None:
        return self._offset_store

    @property
    def rebalance_service(self) -> RebalanceService | None:
        return self._rebalance

    @property
    def assigned_queues(self) -> AssignedMessageQueue:
        """The owned queues' state (process queues, pause, offsets): for tests and metrics."""
        return self._assigned

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start pulling. Caller: the application, once. Affects: connects to the brokers,
        registers with the group (subscribe), starts the rebalance service, the pull tasks
        and the timers. Raises IllegalStateError when started before."""
        with self._lock:
            if self._state is not ServiceState.CREATE_JUST:
                raise IllegalStateError(
                    "the consumer service state is not OK, maybe started once",
                    state=self._state.name,
                )
            self._state = ServiceState.START_FAILED
            try:
                self._start_services()
            except BaseException:
                self._stop_services(persist=False)
                raise
            self._state = ServiceState.RUNNING
            _log.info(
                "consumer started: group=%s client_id=%s", self.consumer_group, self._client_id
            )
            for warning in self._config.flow_control_warnings():
                _log.warning("consumer %s: %s", self.consumer_group, warning)
            self._operate_after_running()

    def _start_services(self) -> None:
        config = self._config
        instance = config.instance_name
        if instance is None:
            if config.message_model is MessageModel.BROADCASTING:
                instance = "DEFAULT"
            else:
                number = next(_instance_numbers)
                instance = str(os.getpid()) if number == 0 else f"{os.getpid()}#{number}"
        self._client_id = f"{_local_ip()}@{instance}"
        api = self._api = self._given_api or _default_broker_api(config, self._client_id)
        if config.message_model is MessageModel.BROADCASTING:
            store: OffsetStore = LocalFileOffsetStore(
                config.offset_store_dir, self._client_id, config.consumer_group
            )
        else:
            store = RemoteBrokerOffsetStore(api, config.consumer_group)
        store.load()
        self._offset_store = store
        scheduler = self._scheduler = TaskScheduler(f"aeromq-pull-{config.consumer_group}")
        executor = self._executor = ThreadPoolExecutor(
            max_workers=config.pull_thread_nums, thread_name_prefix="aeromq-consumer-io"
        )
        context = PullTaskContext(
            config=config,
            broker_api=api,
            assigned=self._assigned,
            cache=self._cache,
            scheduler=scheduler,
            executor=executor.submit,
            subscription_for=self._subscription_for,
            compute_start_offset=self._compute_start_offset,
            counters=self._counters,
            failures=self._failures,
            acquire=self._acquire_queue,
        )
        self._tasks = PullTaskTable(context)
        self._rebalance = RebalanceService(
            config=config,
            client_id=self._client_id,
            strategy=self._strategy,
            broker_api=api,
            assigned=self._assigned,
            tasks=self._tasks,
            offset_store=store,
            cache=self._cache,
            listener=self._message_queue_listener,
            subscriptions=self._subscriptions,
        )
        scheduler.start()
        if self._subscription_type is SubscriptionType.SUBSCRIBE:
            self._start_heartbeat()
        self._rebalance.start()  # the first run is in this thread: start offsets are fixed
        if self._subscription_type is SubscriptionType.ASSIGN:
            self._fix_start_offsets(self._assigned.states())
        if config.auto_commit:
            self._every(config.persist_consumer_offset_interval_ms, self._persist_all)
        self._every(config.heartbeat_broker_interval_ms, self._heartbeat)
        self._every(config.topic_metadata_check_interval_ms, self._check_topic_metadata)

    def _operate_after_running(self) -> None:
        if self._subscription_type is SubscriptionType.ASSIGN:
            assert self._tasks is not None
            self._tasks.start(self._assigned.queues())
        for topic in list(self._topic_listeners):
            try:
                self._topic_queues[topic] = self.fetch_message_queues(topic)
            except ClientError as error:
                _log.warning("fetching the queues of topic=%s failed: %s", topic, error)

    def shutdown(self) -> None:
        """Stop. Caller: the application. Affects: stops pulling and rebalancing, commits
        consumed offsets (auto commit), persists committed offsets, leaves the group (the
        broker tells the other members at once), releases threads. A second call does
        nothing; ``poll`` raises afterwards."""
        with self._lock:
            if self._state is not ServiceState.RUNNING:
                if self._state is ServiceState.START_FAILED:
                    self._state = ServiceState.SHUTDOWN_ALREADY
                return
            self._state = ServiceState.SHUTDOWN_ALREADY
            self._stop_services(persist=True)
            _log.info(
                "consumer shut down: group=%s client_id=%s", self.consumer_group, self._client_id
            )

    def _stop_services(self, persist: bool) -> None:
        self._cache.close()
        if self._rebalance is not None:
            self._rebalance.shutdown()
        if self._tasks is not None:
            self._tasks.cancel_all()
        if self._scheduler is not None:
            self._scheduler.shutdown()
        if persist and self._offset_store is not None:
            self._commit_and_drop_all()
            try:
                self._offset_store.persist_all(self._assigned.queues())
            except ClientError as error:
                _log.warning("persisting offsets at shutdown failed: %s", error)
        if self._heartbeating and self._api is not None:
            try:
                self._api.unregister(self._client_id, self.consumer_group)
            except ClientError as error:
                _log.warning("leaving the group failed: %s", error)
            self._heartbeating = False
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        if self._api is not None and self._given_api is None:
            self._api.close()

    def __enter__(self) -> DefaultLitePullConsumer:
        """Start the consumer unless it runs already (``with`` after ``start()`` is fine).
        Raises IllegalStateError when it was shut down."""
        if self._state is ServiceState.CREATE_JUST:
            self.start()
        elif self._state is not ServiceState.RUNNING:
            raise IllegalStateError(
                "a shut down consumer cannot be entered again", state=self._state.name
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.shutdown()

    def __iter__(self) -> Iterator[MessageExt]:
        """Each message as ``poll`` returns them, blocking; ends when the consumer shuts down
        (from another thread, or a signal handler). Caller: the application, from one
        thread. Raises IllegalStateError when not running."""
        self._check_running()
        while self.is_running:
            try:
                messages = self.poll()
            except IllegalStateError:
                if self.is_running:
                    raise
                return
            yield from messages

    # -- subscribe and assign ----------------------------------------------------------

    def subscribe(
        self,
        topic: str,
        sub_expression: str | MessageSelector | None = "*",
    ) -> None:
        """Subscribe to ``topic`` with a tag expression (``"TagA || TagB"``, ``"*"``) or a
        :class:`~client.MessageSelector`. Caller: the application, before or after start.
        Affects: the group's subscription (heartbeat) and the owned queues: at ``start()``, or,
        when running, by a rebalance before this returns (so their start offsets are fixed). Raises IllegalStateError after ``assign`` or shutdown,
        InvalidExpressionError for an expression that does not parse (a SQL92 one names the
        position of the error)."""
        check_topic(topic)
        subscription = build_subscription_data(topic, sub_expression)
        with self._lock:
            self._check_not_shut_down("subscribe")
            self._subscription_type = self._subscription_type.switch_to(SubscriptionType.SUBSCRIBE)
            rebalance = self._rebalance
            if rebalance is None:
                self._subscriptions[topic] = subscription
                return
            with rebalance.lock:
                self._subscriptions[topic] = subscription
            if self.is_running:
                if self._heartbeating:
                    self._heartbeat()
                else:
                    self._start_heartbeat()
                # Allocate now, so the topic's queues (with their start offsets) are owned
                # when this returns; the service thread retries soon if this run cannot.
                if not rebalance.run_now():
                    rebalance.wakeup()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic``. Caller: the application. Affects: its queues are dropped
        (their offsets committed and persisted as on a rebalance) and the group is told.
        Raises IllegalStateError after shutdown."""
        with self._lock:
            self._check_not_shut_down("unsubscribe")
            rebalance = self._rebalance
            if rebalance is None:
                self._subscriptions.pop(topic, None)
                self._assigned.remove_topic(topic)
                return
            with rebalance.lock:
                self._subscriptions.pop(topic, None)
                for queue in [q for q in self._assigned.queues() if q.topic == topic]:
                    rebalance.drop_queue(queue)
                rebalance.forget_topic(topic)
            if self.is_running and self._heartbeating:
                self._heartbeat()

    def assign(self, queues: Collection[MessageQueue]) -> None:
        """Own exactly ``queues`` (manual assignment, no group rebalancing). Caller: the
        application, before or after start. Affects: queues not in ``queues`` are dropped;
        new ones get their start offset (when running: before they show in ``assignment()``)
        and start pulling. Raises IllegalArgumentError when empty or a queue is malformed (its
        topic checked as ``subscribe`` checks it), IllegalStateError after ``subscribe`` or
        shutdown."""
        wanted = set(queues)
        if not wanted:
            raise IllegalArgumentError("message queues can not be null or empty")
        for queue in wanted:
            _check_queue(queue)
        with self._lock:
            self._check_not_shut_down("assign")
            self._subscription_type = self._subscription_type.switch_to(SubscriptionType.ASSIGN)
            offsets: dict[MessageQueue, int] = {}
            if self.is_running:
                offsets = self._start_offsets(q for q in wanted if q not in self._assigned)
            removed = self._assigned.update_all(wanted, offsets)
            if self._rebalance is not None:
                for state in removed:
                    self._rebalance.release(state.queue, state)
            if self.is_running and self._tasks is not None:
                self._tasks.retain(wanted)

    def assignment(self) -> set[MessageQueue]:
        """The queues owned now (assigned, or allocated by the last rebalance)."""
        return self._assigned.queues()

    def set_sub_expression_for_assign(self, topic: str, sub_expression: str) -> None:
        """Filter the assigned queues of ``topic`` by a tag expression. Caller: the
        application, before start. Affects: the pulls of those queues. Raises
        IllegalArgumentError for a bad topic or an empty expression, InvalidExpressionError
        for one that does not parse, IllegalStateError once started."""
        check_topic(topic)
        if not sub_expression or sub_expression.isspace():
            raise IllegalArgumentError("sub_expression can not be null or empty", topic=topic)
        with self._lock:
            if self._state is not ServiceState.CREATE_JUST:
                raise IllegalStateError(
                    "set_sub_expression_for_assign only before start", state=self._state.name
                )
            self._subscription_type = self._subscription_type.switch_to(SubscriptionType.ASSIGN)
            self._assign_expressions[topic] = build_subscription_data(topic, sub_expression)

    def _subscription_for(self, topic: str) -> SubscriptionData | None:
        if self._subscription_type is SubscriptionType.SUBSCRIBE:
            return self._subscriptions.get(topic)
        subscription = self._assign_expressions.get(topic)
        if subscription is None:
            subscription = self._assign_expressions[topic] = build_subscription_data(topic, "*")
        return subscription

    # -- poll ----------------------------------------------------------------------------

    def poll(self, timeout_ms: int | None = None) -> list[MessageExt]:
        """Up to ``max_poll_records`` messages gathered across queues, waiting up to
        ``timeout_ms`` (default ``poll_timeout_ms``) for the first; ``[]`` on timeout.
        Caller: the application, from one thread at a time. Affects: auto commit (when due)
        commits what earlier polls returned; each queue's consume offset moves past the
        messages returned. Raises :class:`~client.CorruptMessageError` once for each pulled
        batch that failed its check (its queue does not move past it: seek to skip it)."""
        out: list[MessageExt] = []
        for chunk in self._poll_chunks(timeout_ms, self._config.max_poll_records):
            out.extend(chunk)
        if out and self._consume_hooks:
            self._run_consume_hooks(ConsumeMessageContext(self._config.consumer_group, out))
        return self._with_values(out)

    def poll_batch(
        self, timeout_ms: int | None = None, max_records: int | None = None
    ) -> MessageBatch:
        """``poll`` in columns: up to ``max_records`` (default ``max_poll_records``) messages
        as one :class:`~consumer.MessageBatch` (numpy columns, Arrow bodies, ``to_arrow()``),
        made without a Python object per message. Same waiting, commit and errors as ``poll``;
        an empty batch on timeout."""
        limit = self._config.max_poll_records if max_records is None else max_records
        if limit <= 0:
            raise IllegalArgumentError("max_records must be positive", max_records=limit)
        chunks = self._poll_chunks(timeout_ms, limit)
        batch = MessageBatch.concat([as_message_batch(chunk) for chunk in chunks])
        if chunks and self._consume_hooks:
            group = self._config.consumer_group
            self._run_consume_hooks(ConsumeMessageContext(group, batch=batch))
        return batch

    def _poll_chunks(self, timeout_ms: int | None, limit: int) -> list[Sequence[MessageExt]]:
        self._check_running()
        if timeout_ms is None:
            timeout_ms = self._config.poll_timeout_ms
        if timeout_ms < 0:
            raise IllegalArgumentError("timeout must not be negative", timeout_ms=timeout_ms)
        with self._poll_lock:
            failures = self._failures
            if failures:
                raise failures.popleft()
            if self._config.auto_commit:
                self._maybe_auto_commit()
            return self._take(timeout_ms, limit)

    def _with_values(self, messages: list[MessageExt]) -> list[MessageExt]:
        """Set each message's ``value`` by the ``value_deserializer`` (if any)."""
        deserializer = self._value_deserializer
        if deserializer is not None:
            for message in messages:
                message.value = deserializer(message.body)
        return messages

    def _take(self, timeout_ms: int, limit: int) -> list[Sequence[MessageExt]]:
        cache = self._cache
        assigned = self._assigned
        deadline = time.monotonic() + timeout_ms / 1000.0
        result: list[Sequence[MessageExt]] = []
        taken = 0
        while taken < limit:
            wait_s = deadline - time.monotonic() if not taken else 0.0
            request = cache.take(wait_s)
            if request is None:
                break
            process_queue = request.process_queue
            state = assigned.state(request.queue)
            if state is None:
                continue
            with state.lock:
                # Under the queue's lock, so a drop or seek either comes after (and commits
                # or replaces what this poll returns) or before (and these messages, not
                # committed, are not returned: the queue's next owner or read delivers them).
                if process_queue.dropped or state.process_queue is not process_queue:
                    continue
                messages = request.messages
                room = limit - taken
                if len(messages) > room:
                    cache.put_back(ConsumeRequest(messages[room:], request.queue, process_queue))
                    messages = messages[:room]
                offset = process_queue.remove_messages(messages)
                if offset >= 0:
                    state.consume_offset = offset
            result.append(messages)
            taken += len(messages)
            if not self.is_running:
                break
        self._counters.messages_polled += taken
        return result

    # -- position ------------------------------------------------------------------------

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Make ``queue``'s next pull start at ``offset`` (min <= offset <= max).
        Caller: the application. Affects: the queue's cached messages are discarded, its
        consume offset becomes ``offset``, its pull task restarts at once. Raises
        IllegalStateError if the queue is not owned, OffsetIllegalError out of range."""
        self._check_running()
        with self._lock:
            if queue not in self._assigned:
                message = "the message queue is not in the assigned list"
                if self._subscription_type is SubscriptionType.SUBSCRIBE:
                    message += ", may be rebalancing"
                raise IllegalStateError(message, queue=str(queue))
            api = self._require_api()
            min_offset = api.min_offset(queue)
            max_offset = api.max_offset(queue)
            if not min_offset <= offset <= max_offset:
                raise OffsetIllegalError(
                    "seek offset illegal",
                    offset=offset,
                    min_offset=min_offset,
                    max_offset=max_offset,
                )
            if self._assigned.seek(queue, offset) is not None:
                self._cache.remove_queue(queue)
                assert self._tasks is not None
                self._tasks.restart(queue)

    def seek_to_begin(self, queue: MessageQueue) -> None:
        """``seek`` to the queue's min offset."""
        self._check_running()
        self.seek(queue, self._require_api().min_offset(queue))

    def seek_to_end(self, queue: MessageQueue) -> None:
        """``seek`` to the queue's max offset (only messages sent from now on)."""
        self._check_running()
        self.seek(queue, self._require_api().max_offset(queue))

    def position(self, queue: MessageQueue) -> int:
        """The offset of the next message ``poll`` returns from ``queue`` (kafka-python's
        ``position``): what was polled last + 1, a pending seek, the first cached message,
        else the start offset fixed at allocation. Raises IllegalStateError when the queue is
        not owned, a ClientError when its start offset is not known yet and the broker cannot
        say."""
        self._check_running()
        state = self._assigned.state(queue)
        if state is None:
            raise IllegalStateError(
                "the message queue is not in the assigned list", queue=str(queue)
            )
        with state.lock:
            for offset in (state.consume_offset, state.seek_offset):
                if offset >= 0:
                    return offset
            first = state.process_queue.first_offset()
            if first >= 0:
                return first
            if state.pull_offset >= 0:
                return state.pull_offset
        offset = self._compute_start_offset(queue)
        with state.lock:
            if state.pull_offset < 0 and state.seek_offset == -1:
                state.pull_offset = offset
            return offset

    def beginning_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's min offset (the first the broker still has), kafka-python's
        ``beginning_offsets``; any queue, owned or not."""
        self._check_running()
        api = self._require_api()
        return {queue: api.min_offset(_check_queue(queue)) for queue in queues}

    def end_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's max offset (the offset its next message gets), kafka-python's
        ``end_offsets``; any queue, owned or not."""
        self._check_running()
        api = self._require_api()
        return {queue: api.max_offset(_check_queue(queue)) for queue in queues}

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling ``queues`` (owned ones; others are ignored). Affects: their pull
        tasks idle, checking again every 1000 ms; cached messages are still polled."""
        self._assigned.pause(queues)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        """Pull ``queues`` again (within ``pull_time_delay_ms_when_pause``)."""
        self._assigned.resume(queues)

    # -- commit ----------------------------------------------------------------------------

    def commit(
        self,
        offsets: Mapping[MessageQueue, int] | Collection[MessageQueue] | None = None,
        persist: bool = True,
    ) -> None:
        """Commit offsets. Caller: the application. ``commit()``: every owned queue's consume
        offset; ``commit({queue: offset})``: those offsets (the next offset to consume);
        ``commit({queue, ...})``: those queues' consume offsets. Queues not owned (or being
        dropped) are skipped with a warning, as RocketMQ does. Affects: the offset store in
        memory and, with ``persist`` (default), the broker (or local file) now; otherwise the
        auto-commit timer (if on), a rebalance or shutdown persists them."""
        self._check_running()
        store = self._require_store()
        if offsets is None:
            queues = self._assigned.queues()
            committed = self._commit_consumed(queues)
        elif isinstance(offsets, Mapping):
            committed = []
            for queue, offset in offsets.items():
                if offset < 0:
                    raise IllegalArgumentError(
                        "a committed offset must be >= 0", queue=str(queue), offset=offset
                    )
                if self._commit_owned(queue, offset):
                    committed.append(queue)
        else:
            committed = self._commit_consumed(offsets)
        if persist or self._config.message_model is MessageModel.BROADCASTING:
            store.persist_all(committed)

    def commit_sync(self) -> None:
        """``commit()``: every owned queue's consume offset, persisted now."""
        self.commit()

    def _commit_consumed(self, queues: Iterable[MessageQueue]) -> list[MessageQueue]:
        committed = []
        for queue in queues:
            if self._commit_owned(queue, None):
                committed.append(queue)
        return committed

    def _commit_owned(self, queue: MessageQueue, offset: int | None) -> bool:
        """Commit ``offset`` (None: the consume offset, if any) of an owned queue, under its
        lock: once a drop marked it dropped (under the same lock), nothing commits it again,
        so no stale offset can follow the one the drop persisted."""
        state = self._assigned.state(queue)
        if state is not None:
            with state.lock:
                if not state.process_queue.dropped:
                    value = state.consume_offset if offset is None else offset
                    if value < 0:
                        return False
                    self._require_store().update_offset(queue, value)
                    return True
        _log.warning("commit skipped, queue not owned: %s", queue)
        return False

    def _commit_and_drop_all(self) -> None:
        """At shutdown: under each queue's lock, commit its consume offset (auto commit) and
        mark its process queue dropped, so a ``poll`` still running returns nothing it has not
        committed (a clean leave delivers nothing twice)."""
        store = self._require_store()
        auto_commit = self._config.auto_commit
        for state in self._assigned.states():
            with state.lock:
                process_queue = state.process_queue
                if auto_commit and not process_queue.dropped and state.consume_offset >= 0:
                    store.update_offset(state.queue, state.consume_offset)
                process_queue.dropped = True

    def _maybe_auto_commit(self) -> None:
        now_s = time.monotonic()
        if now_s >= self._next_auto_commit_s:
            try:
                self._commit_consumed(self._assigned.queues())
                if self._config.message_model is MessageModel.BROADCASTING:
                    self._require_store().persist_all(self._assigned.queues())
            except ClientError as error:
                _log.warning("auto commit failed: %s", error)
            self._next_auto_commit_s = now_s + self._config.auto_commit_interval_ms / 1000.0

    def committed(self, queue: MessageQueue) -> int:
        """The group's committed offset of ``queue`` (memory first, then the broker); -1 if
        none. Raises a ClientError when the broker cannot say."""
        self._check_running()
        return self._require_store().read_offset(queue, ReadOffsetType.MEMORY_FIRST_THEN_STORE)

    # -- metadata --------------------------------------------------------------------------

    def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        """Every readable queue of ``topic``."""
        self._check_running()
        return self._require_api().fetch_subscribe_queues(topic)

    def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of ``queue`` stored at or after ``timestamp_ms``."""
        self._check_running()
        return self._require_api().search_offset(queue, timestamp_ms)

    def register_consume_message_hook(self, hook: ConsumeMessageHook) -> None:
        """Run ``hook`` on every poll that returns messages from now on, after the hooks
        registered before it (see ``consumer.ConsumeMessageHook``; RocketMQ's
        ``registerConsumeMessageHook``)."""
        self._consume_hooks = [*self._consume_hooks, hook]

    def _run_consume_hooks(self, context: ConsumeMessageContext) -> None:
        hooks = self._consume_hooks
        call_hooks(hooks, "consume_message_before", context)
        context.success = True
        call_hooks(hooks, "consume_message_after", context)

    def register_topic_message_queue_change_listener(
        self, topic: str, listener: TopicMessageQueueChangeListener
    ) -> None:
        """Call ``listener(topic, queues)`` when the topic's queues change (checked every
        ``topic_metadata_check_interval_ms``). A second listener for a topic replaces the
        first."""
        check_topic(topic)
        if not callable(listener):
            raise IllegalArgumentError("the listener must be callable", topic=topic)
        with self._lock:
            if topic in self._topic_listeners:
                _log.warning("replacing the queue change listener of topic=%s", topic)
            self._topic_listeners[topic] = listener
            if self.is_running:
                self._topic_queues[topic] = self.fetch_message_queues(topic)

    def update_name_server_address(self, addresses: str | Sequence[str]) -> None:
        """Use these name server (or broker) gRPC addresses: ``"h1:p1;h2:p2"`` or a list."""
        if isinstance(addresses, str):
            addresses = [a for a in addresses.replace(",", ";").split(";") if a.strip()]
        endpoints = tuple(a.strip() for a in addresses)
        with self._lock:
            self._config = self._config.replace(endpoints=endpoints)
            if self._api is not None:
                self._api.update_endpoints(endpoints)

    update_endpoints = update_name_server_address

    # -- internals -------------------------------------------------------------------------

    def _check_running(self) -> None:
        if self._state is not ServiceState.RUNNING:
            raise IllegalStateError(
                "the consumer is not running, please start it first", state=self._state.name
            )

    def _require_api(self) -> BrokerApi:
        if self._api is None:
            raise IllegalStateError("the consumer is not started", state=self._state.name)
        return self._api

    def _require_store(self) -> OffsetStore:
        if self._offset_store is None:
            raise IllegalStateError("the consumer is not started", state=self._state.name)
        return self._offset_store

    def _check_not_shut_down(self, operation: str) -> None:
        if self._state in (ServiceState.SHUTDOWN_ALREADY, ServiceState.START_FAILED):
            raise IllegalStateError(
                f"{operation} on a consumer that was shut down", state=self._state.name
            )

    def _compute_start_offset(self, queue: MessageQueue) -> int:
        assert self._rebalance is not None
        return self._rebalance.compute_pull_from_where(queue)

    def _acquire_queue(self, queue: MessageQueue, force: bool) -> QueueGrant:
        """The broker's grant of ``queue`` to this consumer (a pull task's take-over); a
        granted committed offset is what the offset store holds from now on."""
        grant = self._require_api().acquire_queue(
            self.consumer_group, queue, self._client_id, force
        )
        if grant.granted and grant.committed_offset >= 0:
            self._require_store().note_stored(queue, grant.committed_offset)
        return grant

    def _start_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """The start offsets of ``queues`` about to be assigned; a queue the broker cannot
        say for is left out (its pull task computes it later)."""
        offsets: dict[MessageQueue, int] = {}
        for queue in queues:
            try:
                offsets[queue] = self._compute_start_offset(queue)
            except ClientError as error:
                _log.warning("start offset of queue=%s not known yet: %s", queue, error)
        return offsets

    def _fix_start_offsets(self, states: Iterable[QueueState]) -> None:
        """At ``start()``: fix the start offset of every assigned queue that has none."""
        for state in states:
            if state.pull_offset >= 0 or state.seek_offset != -1:
                continue
            offset = self._start_offsets((state.queue,)).get(state.queue, -1)
            with state.lock:
                if state.pull_offset < 0 and state.seek_offset == -1:
                    state.pull_offset = offset

    def _heartbeat_data(self) -> ConsumerHeartbeat:
        config = self._config
        return ConsumerHeartbeat(
            client_id=self._client_id,
            consumer_group=config.consumer_group,
            message_model=config.message_model,
            consume_from_where=config.consume_from_where,
            subscriptions=tuple(self._subscriptions.values()),
        )

    def _start_heartbeat(self) -> None:
        assert self._rebalance is not None
        self._require_api().start_heartbeat(self._heartbeat_data(), self._rebalance.on_membership)
        self._heartbeating = True

    def _heartbeat(self) -> None:
        if self._heartbeating:
            self._require_api().send_heartbeat(self._heartbeat_data())

    def _persist_all(self) -> None:
        self._require_store().persist_all(self._assigned.queues())

    def _check_topic_metadata(self) -> None:
        """The route check: a subscribed topic whose queues changed rebalances at once; a
        listened topic's listener hears of the change."""
        api = self._require_api()
        rebalance = self._rebalance
        for topic in sorted(set(self._topic_listeners) | set(self._subscriptions)):
            try:
                queues = api.fetch_subscribe_queues(topic)
            except ClientError as error:
                _log.info("route check of topic=%s failed: %s", topic, error)
                continue
            if rebalance is not None:
                rebalance.on_route(topic, queues)
            listener = self._topic_listeners.get(topic)
            if listener is not None and queues != self._topic_queues.get(topic):
                self._topic_queues[topic] = queues
                listener(topic, set(queues))

    def _every(
        self, interval_ms: int, job: Callable[[], None], first_delay_ms: int | None = None
    ) -> None:
        """Run ``job`` on the executor every ``interval_ms`` (never two at once)."""
        scheduler = self._scheduler
        executor = self._executor
        assert scheduler is not None and executor is not None

        def run() -> None:
            try:
                if self.is_running:  # a tick before start() has set RUNNING skips only the job
                    job()
            except Exception:
                _log.exception("periodic job failed: %s", getattr(job, "__name__", job))
            # Always the next tick: the chain ends when shutdown (or a failed start) stops the
            # scheduler (then schedule is a no-op), not at a tick that came before RUNNING.
            scheduler.schedule(interval_ms, tick)

        def tick() -> None:
            with contextlib.suppress(RuntimeError):  # the executor shut down
                executor.submit(run)

        scheduler.schedule(interval_ms if first_delay_ms is None else first_delay_ms, tick)

    def add_delivery_listener(self, listener: DeliveryListener) -> None:
        """Call ``listener()`` whenever pulled messages are queued for ``poll``, and at
        shutdown (the asyncio consumer wakes its waiters this way). Caller: :mod:`aeromq.aio`."""
        self._cache.add_listener(listener)

    def remove_delivery_listener(self, listener: DeliveryListener) -> None:
        self._cache.remove_listener(listener)

    def __repr__(self) -> str:
        return (
            f"DefaultLitePullConsumer(group={self.consumer_group!r}, state={self._state.name}, "
            f"client_id={self._client_id!r}, queues={len(self._assigned)})"
        )


def _check_queue(queue: object) -> MessageQueue:
    """A well-formed queue: a MessageQueue with a valid topic, a broker name and an id >= 0."""
    if not isinstance(queue, MessageQueue):
        raise IllegalArgumentError("not a MessageQueue", queue=repr(queue))
    check_topic(queue.topic)
    if not queue.broker_name or queue.broker_name.isspace():
        raise IllegalArgumentError("the queue has no broker name", queue=str(queue))
    if (
        isinstance(queue.queue_id, bool)
        or not isinstance(queue.queue_id, int)
        or queue.queue_id < 0
    ):
        raise IllegalArgumentError("a queue id must be an int >= 0", queue=str(queue))
    return queue
