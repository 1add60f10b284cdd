"""``ConsumerServices``: the running parts of a lite pull consumer, their start and their stop.

The parts made with the consumer: the :class:`~consumer.subscription_state.SubscriptionState`,
the owned queues (:class:`~consumer.assigned_queues.AssignedMessageQueue`), the consume-request
cache, the counters, the errors waiting for ``poll``, the route check. The parts
:meth:`ConsumerServices.start` makes, in this order: the client id (``ip@instance``), the broker
API (:class:`~consumer._grpc_broker_api.GrpcBrokerApi` unless one was given), the offset store
(the broker's in CLUSTERING, a local file in BROADCASTING), the pull scheduler and the executor,
the pull tasks, the rebalance service, the heartbeat (subscribe mode) and three timers
(:meth:`ConsumerServices.every`): persisting offsets (auto commit only), heartbeats and the route
check (``consumer.route_check``). Pull tasks share the scheduler's one thread and pull
asynchronously (rather than RocketMQ's 20 pull threads: no queue waits behind another's long
poll, and no thread per queue); blocking control calls (start offsets, persisting, heartbeats,
route checks) run on the small executor. The rebalance service's first run is in the caller's
thread, and assigned queues get their start offsets before ``start()`` returns (see "The start
offset rule" in ``docs/lite-pull-consumer.md``).

:meth:`ConsumerServices.shutdown` stops them in reverse: the cache is closed, rebalancing, pull
tasks and the scheduler stop, consumed offsets are committed (auto commit) and persisted, the
consumer leaves its group (the broker tells the others at once), and the threads end.

Caller: the consumer façade (:class:`~consumer.DefaultLitePullConsumer`), its other roles
(subscription changes, positions, commits, poll) for the parts and the state checks, the pull
tasks (start offsets and take-overs, through their context). Thread safety:
:attr:`ConsumerServices.lock` (the consumer's) serialises start, shutdown and the changes.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from enum import Enum

from aeromq.client import (
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    MessageQueue,
    MetricsServer,
    serve_metrics,
)
from aeromq.consumer._broker_api import BrokerApi, ConsumerHeartbeat, QueueGrant
from aeromq.consumer._grpc_broker_api import GrpcBrokerApi
from aeromq.consumer._metrics import ConsumerMetrics
from aeromq.consumer.allocate import AllocateMessageQueueStrategy
from aeromq.consumer.assigned_queues import AssignedMessageQueue
from aeromq.consumer.config import LitePullConsumerConfig, MessageModel, SubscriptionType
from aeromq.consumer.consume_request_cache import ConsumeRequestCache
from aeromq.consumer.offset_store import LocalFileOffsetStore, OffsetStore, RemoteBrokerOffsetStore
from aeromq.consumer.pull_task import FlowControlCounters, PullTaskContext, PullTaskTable
from aeromq.consumer.rebalance import MessageQueueListener, RebalanceService
from aeromq.consumer.route_check import RouteCheck, TopicMessageQueueChangeListener
from aeromq.consumer.scheduler import TaskScheduler
from aeromq.consumer.subscription_state import SubscriptionState

__all__ = ["ConsumerServices", "ServiceState"]

_log = logging.getLogger(__name__)

_instance_numbers = itertools.count()


class ServiceState(Enum):
    """RocketMQ's ``ServiceState``: where a consumer is in its life."""

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


class ConsumerServices:
    """The consumer's running parts and its :class:`ServiceState` (see the module doc)."""

    def __init__(
        self,
        config: LitePullConsumerConfig,
        strategy: AllocateMessageQueueStrategy,
        message_queue_listener: MessageQueueListener | None,
        broker_api: BrokerApi | None,
    ) -> None:
        self.config = config
        self.lock = threading.RLock()
        self.state = ServiceState.CREATE_JUST
        self.client_id = ""
        self.api: BrokerApi | None = None
        self.offset_store: OffsetStore | None = None
        self.rebalance: RebalanceService | None = None
        self.tasks: PullTaskTable | None = None
        self.subscription = SubscriptionState()
        self.assigned = AssignedMessageQueue()
        self.cache = ConsumeRequestCache()
        self.counters = FlowControlCounters()
        self.failures: collections.deque[ClientError] = collections.deque(maxlen=64)
        """Errors for the application (corrupt pulled batches): ``poll`` raises them."""
        self._strategy = strategy
        self._message_queue_listener = message_queue_listener
        self._given_api = broker_api
        self._route_check = RouteCheck(self.subscription.subscriptions)
        self._heartbeating = False
        self._scheduler: TaskScheduler | None = None
        self._executor: ThreadPoolExecutor | None = None

    # -- state ---------------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        """Whether the state is RUNNING (set once ``start()`` has started everything)."""
        return self.state is ServiceState.RUNNING

    def check_running(self) -> None:
        """Caller: every call that needs a running consumer. Raises IllegalStateError."""
        if self.state is not ServiceState.RUNNING:
            raise IllegalStateError(
                "the consumer is not running, please start it first", state=self.state.name
            )

    def check_not_shut_down(self, operation: str) -> None:
        """Caller: subscribe, unsubscribe, assign. Raises IllegalStateError after shutdown
        (or a failed start)."""
        if self.state in (ServiceState.SHUTDOWN_ALREADY, ServiceState.START_FAILED):
            raise IllegalStateError(
                f"{operation} on a consumer that was shut down", state=self.state.name
            )

    def require_api(self) -> BrokerApi:
        """The broker API; raises IllegalStateError before ``start()``."""
        if self.api is None:
            raise IllegalStateError("the consumer is not started", state=self.state.name)
        return self.api

    def require_store(self) -> OffsetStore:
        """The offset store; raises IllegalStateError before ``start()``."""
        if self.offset_store is None:
            raise IllegalStateError("the consumer is not started", state=self.state.name)
        return self.offset_store

    def replace_config(self, config: LitePullConsumerConfig) -> None:
        """Caller: the ``config`` setter. Affects: everything started later. Raises
        IllegalStateError once started, IllegalArgumentError for another group."""
        with self.lock:
            if self.state is not ServiceState.CREATE_JUST:
                raise IllegalStateError(
                    "the config can change only before start", state=self.state.name
                )
            if config.consumer_group != self.config.consumer_group:
                raise IllegalArgumentError("the consumer group cannot change")
            self.config = config

    def update_endpoints(self, addresses: str | Sequence[str]) -> None:
        """Use these gRPC addresses (``"h1:p1;h2:p2"`` or a list). Caller:
        ``update_name_server_address``. Affects: the config and the broker API's routes."""
        if isinstance(addresses, str):
            addresses = [a for a in addresses.replace(",", ";").split(";") if a.strip()]
        endpoints = tuple(a.strip() for a in addresses)
        with self.lock:
            self.config = self.config.replace(endpoints=endpoints)
            if self.api is not None:
                self.api.update_endpoints(endpoints)

    def metrics(self) -> ConsumerMetrics:
        """Caller: ``DefaultLitePullConsumer.metrics``, any thread. Affects: nothing."""
        counters = self.counters
        rebalance = self.rebalance
        cached = cached_bytes = 0
        for state in self.assigned.states():
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
            assigned_queues=len(self.assigned),
            cached_messages=cached,
            cached_bytes=cached_bytes,
            pull_latency=counters.pull_latency.snapshot(),
        )

    def serve_metrics(self, host: str, port: int) -> MetricsServer:
        """Caller: ``DefaultLitePullConsumer.serve_metrics``. Affects: a metrics server runs
        until closed."""
        labels = {"group": self.config.consumer_group, "client_id": self.client_id}
        return serve_metrics("aeromq_consumer", self.metrics, labels, host=host, port=port)

    # -- start and stop ------------------------------------------------------------------

    def start(self) -> None:
        """Caller: ``DefaultLitePullConsumer.start``, once. Affects: every part (see the
        module doc); the state becomes RUNNING, or START_FAILED with the parts stopped when
        one fails. Raises IllegalStateError when started before."""
        with self.lock:
            if self.state is not ServiceState.CREATE_JUST:
                raise IllegalStateError(
                    "the consumer service state is not OK, maybe started once",
                    state=self.state.name,
                )
            self.state = ServiceState.START_FAILED
            try:
                self._start_services()
            except BaseException:
                self._stop_services(persist=False)
                raise
            self.state = ServiceState.RUNNING
            group = self.config.consumer_group
            _log.info("consumer started: group=%s client_id=%s", group, self.client_id)
            for warning in self.config.flow_control_warnings():
                _log.warning("consumer %s: %s", group, warning)
            self._operate_after_running()

    def _start_services(self) -> None:
        config = self.config
        instance = config.instance_name
        if instance is None:
            if config.message_model is MessageModel.BROADCASTING:
                instance = "DEFAULT"
            else:
                number = next(_instance_numbers)
                instance = str(os.getpid()) if number == 0 else f"{os.getpid()}#{number}"
        self.client_id = f"{_local_ip()}@{instance}"
        api = self.api = self._given_api or _default_broker_api(config, self.client_id)
        if isinstance(api, GrpcBrokerApi):  # poll() reads the pull answers of one broker
            self.cache.pump_with(api.answer_pump)
        if config.message_model is MessageModel.BROADCASTING:
            store: OffsetStore = LocalFileOffsetStore(
                config.offset_store_dir, self.client_id, config.consumer_group
            )
        else:
            store = RemoteBrokerOffsetStore(api, config.consumer_group)
        store.load()
        self.offset_store = store
        scheduler = self._scheduler = TaskScheduler(f"aeromq-pull-{config.consumer_group}")
        executor = self._executor = ThreadPoolExecutor(
            max_workers=config.pull_thread_nums, thread_name_prefix="aeromq-consumer-io"
        )
        context = PullTaskContext(
            config=config,
            broker_api=api,
            assigned=self.assigned,
            cache=self.cache,
            scheduler=scheduler,
            executor=executor.submit,
            subscription_for=self.subscription.subscription_for,
            compute_start_offset=self.compute_start_offset,
            counters=self.counters,
            failures=self.failures,
            acquire=self._acquire_queue,
            defer_caught_up=config.defer_caught_up_pulls,
        )
        if config.defer_caught_up_pulls:  # a deferred pull waits for poll() this long at most
            self.cache.defer_at_most(config.deferred_pull_max_delay_ms, scheduler.schedule)
        self.tasks = PullTaskTable(context)
        self.rebalance = RebalanceService(
            config=config,
            client_id=self.client_id,
            strategy=self._strategy,
            broker_api=api,
            assigned=self.assigned,
            tasks=self.tasks,
            offset_store=store,
            cache=self.cache,
            listener=self._message_queue_listener,
            subscriptions=self.subscription.subscriptions,
        )
        scheduler.start()
        if self.subscription.type is SubscriptionType.SUBSCRIBE:
            self.start_heartbeat()
        self.rebalance.start()  # the first run is in this thread: start offsets are fixed
        if self.subscription.type is SubscriptionType.ASSIGN:
            self.rebalance.fix_start_offsets(self.assigned.states())
        if config.auto_commit:
            self.every(config.persist_consumer_offset_interval_ms, self._persist_all)
        self.every(config.heartbeat_broker_interval_ms, self.heartbeat)
        self.every(config.topic_metadata_check_interval_ms, self._check_topic_metadata)

    def _operate_after_running(self) -> None:
        if self.subscription.type is SubscriptionType.ASSIGN:
            assert self.tasks is not None
            self.tasks.start(self.assigned.queues())
        for topic in self._route_check.watched_topics():
            try:
                self._route_check.note_queues(topic, self.fetch_message_queues(topic))
            except ClientError as error:
                _log.warning("fetching the queues of topic=%s failed: %s", topic, error)

    def shutdown(self) -> None:
        """Caller: ``DefaultLitePullConsumer.shutdown``. Affects: every part stops (see the
        module doc); a second call does nothing."""
        with self.lock:
            if self.state is not ServiceState.RUNNING:
                if self.state is ServiceState.START_FAILED:
                    self.state = ServiceState.SHUTDOWN_ALREADY
                return
            self.state = ServiceState.SHUTDOWN_ALREADY
            self._stop_services(persist=True)
            group = self.config.consumer_group
            _log.info("consumer shut down: group=%s client_id=%s", group, self.client_id)

    def _stop_services(self, persist: bool) -> None:
        self.cache.close()
        if self.rebalance is not None:
            self.rebalance.shutdown()
        if self.tasks is not None:
            self.tasks.cancel_all()
        if self._scheduler is not None:
            self._scheduler.shutdown()
        if persist and self.offset_store is not None:
            self._commit_and_drop_all()
            try:
                self.offset_store.persist_all(self.assigned.queues())
            except ClientError as error:
                _log.warning("persisting offsets at shutdown failed: %s", error)
        if self._heartbeating and self.api is not None:
            try:
                self.api.unregister(self.client_id, self.config.consumer_group)
            except ClientError as error:
                _log.warning("leaving the group failed: %s", error)
            self._heartbeating = False
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
        if self.api is not None and self._given_api is None:
            self.api.close()

    def _commit_and_drop_all(self) -> None:
        """At shutdown: under each queue's lock, commit its consume offset (auto commit) and
        mark its process queue dropped, so a ``poll`` still running returns nothing it has not
        committed (a clean leave delivers nothing twice)."""
        store = self.require_store()
        auto_commit = self.config.auto_commit
        for state in self.assigned.states():
            with state.lock:
                process_queue = state.process_queue
                if auto_commit and not process_queue.dropped and state.consume_offset >= 0:
                    store.update_offset(state.queue, state.consume_offset)
                process_queue.dropped = True

    def every(
        self, interval_ms: int, job: Callable[[], None], first_delay_ms: int | None = None
    ) -> None:
        """Run ``job`` on the executor every ``interval_ms`` (never two at once). Caller:
        start. Affects: the scheduler, until it stops."""
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

    def _persist_all(self) -> None:
        self.require_store().persist_all(self.assigned.queues())

    # -- for the pull tasks -------------------------------------------------------------

    def compute_start_offset(self, queue: MessageQueue) -> int:
        """:meth:`RebalanceService.compute_pull_from_where` of ``queue``. Caller: pull tasks,
        ``position``. Raises a ClientError when the broker cannot say."""
        assert self.rebalance is not None
        return self.rebalance.compute_pull_from_where(queue)

    def _acquire_queue(self, queue: MessageQueue, force: bool) -> QueueGrant:
        assert self.rebalance is not None
        return self.rebalance.acquire_queue(queue, force)

    # -- heartbeats and route checks -----------------------------------------------------------

    def _heartbeat_data(self) -> ConsumerHeartbeat:
        config = self.config
        return ConsumerHeartbeat(
            client_id=self.client_id,
            consumer_group=config.consumer_group,
            message_model=config.message_model,
            consume_from_where=config.consume_from_where,
            subscriptions=tuple(self.subscription.subscriptions.values()),
        )

    @property
    def heartbeating(self) -> bool:
        """Whether the consumer registered with its group's brokers (subscribe mode)."""
        return self._heartbeating

    def start_heartbeat(self) -> None:
        """Caller: start, the first ``subscribe`` while running. Affects: registers with the
        brokers (raises if none answers) and keeps the membership streams open; pushed
        memberships go to the rebalance service."""
        assert self.rebalance is not None
        self.require_api().start_heartbeat(self._heartbeat_data(), self.rebalance.on_membership)
        self._heartbeating = True

    def heartbeat(self) -> None:
        """Caller: the heartbeat timer, subscribe and unsubscribe. Affects: once registered,
        the brokers get the current subscriptions now."""
        if self._heartbeating:
            self.require_api().send_heartbeat(self._heartbeat_data())

    def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        """Every readable queue of ``topic``. Caller: ``fetch_message_queues``, start and
        :meth:`register_topic_listener` (a watched topic's queues). Raises IllegalStateError
        when not running."""
        self.check_running()
        return self.require_api().fetch_subscribe_queues(topic)

    def register_topic_listener(
        self, topic: str, listener: TopicMessageQueueChangeListener
    ) -> None:
        """Caller: ``register_topic_message_queue_change_listener``. Affects: the route
        check tells ``listener`` of the topic's changes (see ``consumer.route_check``); when
        running, the topic's queues now are the ones it compares with."""
        with self.lock:
            self._route_check.add_listener(topic, listener)
            if self.is_running:
                self._route_check.note_queues(topic, self.fetch_message_queues(topic))

    def _check_topic_metadata(self) -> None:
        """The route check's timer job."""
        self._route_check.check(self.require_api(), self.rebalance)
