r"""``DefaultMQPushConsumer``: RocketMQ's push consumer on the lite pull machinery
(``docs/push-consumer.md``).

::

    consumer = DefaultMQPushConsumer("group", "127.0.0.1:9876")
    consumer.subscribe("TopicTest", "*")

    def listener(messages, context):
        for message in messages:
            handle(message)                   # an exception: RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer.register_message_listener(listener)
    consumer.start()                          # ... consumer.shutdown()

How it works: an inner :class:`~consumer.DefaultLitePullConsumer` (auto commit off) owns the
group's queues by rebalance and pulls them; one poll thread hands each polled chunk to the
consume service, which calls the listener on ``consume_thread_count`` threads:
:class:`~consumer.push.concurrently.ConcurrentConsumeService` (failed messages sent back to
``%RETRY%<group>`` with the back-off, then ``%DLQ%<group>``; offsets committed below the lowest
unfinished message) or :class:`~consumer.push.orderly.OrderlyConsumeService` (one queue at a
time per queue, under its broker lock; failures suspend the queue and retry in place). In
CLUSTERING the consumer creates and subscribes to its group's retry topic at start, as
RocketMQ's does; retried messages reach the listener with their first topic.

This class is the façade: each method checks what the API says and hands the work on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

from aeromq.client import ClientError, IllegalArgumentError, IllegalStateError, MessageQueue
from aeromq.common import retry_topic
from aeromq.consumer.allocate import AllocateMessageQueueStrategy
from aeromq.consumer.config import MessageModel
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.consumer.push._runtime import PushRuntime
from aeromq.consumer.push.concurrently import ConcurrentConsumeService
from aeromq.consumer.push.config import PushConsumerConfig, push_config_of
from aeromq.consumer.push.listeners import (
    ConcurrentlyFunction,
    MessageListenerConcurrently,
    MessageListenerOrderly,
    OrderlyFunction,
)
from aeromq.consumer.push.orderly import OrderlyConsumeService
from aeromq.consumer.push.queue_locks import QueueLockKeeper
from aeromq.consumer.retry import retry_api_of
from aeromq.consumer.scheduler import TaskScheduler
from aeromq.consumer.services import ServiceState

__all__ = ["DefaultMQPushConsumer"]

_log = logging.getLogger(__name__)

_POLL_TIMEOUT_MS = 100

Listener = MessageListenerConcurrently | MessageListenerOrderly | ConcurrentlyFunction
ConsumeService = ConcurrentConsumeService | OrderlyConsumeService


class DefaultMQPushConsumer:
    """RocketMQ's ``DefaultMQPushConsumer`` (see the module doc).

    ``DefaultMQPushConsumer(consumer_group, endpoints=(), *, config=None,
    allocate_strategy=None)``: give a group (and endpoints), or a full ``config``.
    """

    def __init__(
        self,
        consumer_group: str | None = None,
        endpoints: str | Sequence[str] = (),
        *,
        config: PushConsumerConfig | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
    ) -> None:
        self._config = push_config_of(consumer_group, endpoints, config)
        self._strategy = allocate_strategy
        self._subscriptions: dict[str, str] = {}
        self._concurrently: ConcurrentlyFunction | None = None
        self._orderly: OrderlyFunction | None = None
        self._lite: DefaultLitePullConsumer | None = None
        self._runtime: PushRuntime | None = None
        self._service: ConsumeService | None = None
        self._locks: QueueLockKeeper | None = None
        self._state = ServiceState.CREATE_JUST
        self._running = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- properties ------------------------------------------------------------------

    @property
    def config(self) -> PushConsumerConfig:
        """The configuration (frozen)."""
        return self._config

    @property
    def consumer_group(self) -> str:
        """The group this consumer consumes for."""
        return self._config.consumer_group

    @property
    def client_id(self) -> str:
        """``ip@instance``, set by ``start``."""
        return "" if self._lite is None else self._lite.client_id

    @property
    def service_state(self) -> ServiceState:
        """CREATE_JUST, START_FAILED, RUNNING or SHUTDOWN_ALREADY."""
        return self._state

    @property
    def orderly(self) -> bool:
        """Whether the registered listener is an orderly one."""
        return self._orderly is not None

    @property
    def lite_pull_consumer(self) -> DefaultLitePullConsumer | None:
        """The inner lite pull consumer (None before ``start``): for metrics and tests."""
        return self._lite

    def assignment(self) -> set[MessageQueue]:
        """The queues owned now (retry queues among them)."""
        return set() if self._lite is None else self._lite.assignment()

    def consume_counts(self) -> dict[str, int]:
        """What the listener did: ``consumed``, and ``failed`` (concurrent) or ``suspended``
        and ``dead_lettered`` (orderly)."""
        service = self._service
        if isinstance(service, ConcurrentConsumeService):
            return {"consumed": service.consumed, "failed": service.failed}
        if isinstance(service, OrderlyConsumeService):
            return {"consumed": service.consumed, "suspended": service.suspended,
                    "dead_lettered": service.dead_lettered}  # fmt: skip
        return {}

    # -- set up ----------------------------------------------------------------------

    def subscribe(self, topic: str, sub_expression: str = "*") -> None:
        """Subscribe to ``topic`` with a tag expression. Caller: the application, before
        ``start``. Raises IllegalStateError once started."""
        self._check_not_started("subscribe")
        self._subscriptions[topic] = sub_expression

    def unsubscribe(self, topic: str) -> None:
        """Forget a subscription made before ``start``."""
        self._check_not_started("unsubscribe")
        self._subscriptions.pop(topic, None)

    def register_message_listener(self, listener: Listener) -> None:
        """Register the listener: a :class:`MessageListenerConcurrently` or
        :class:`MessageListenerOrderly`, or a concurrent listener's function of
        ``(messages, context)``. Caller: the application, before ``start``. Raises
        IllegalStateError once started, IllegalArgumentError for one that is not callable."""
        self._check_not_started("register_message_listener")
        if isinstance(listener, MessageListenerOrderly):
            self._orderly, self._concurrently = listener.consume_message, None
        elif isinstance(listener, MessageListenerConcurrently):
            self._concurrently, self._orderly = listener.consume_message, None
        elif callable(listener):
            self._concurrently, self._orderly = listener, None
        else:
            raise IllegalArgumentError("the listener must be callable", listener=repr(listener))

    def register_message_listener_orderly(self, listener: OrderlyFunction) -> None:
        """Register an orderly listener's function of ``(messages, context)`` (or a
        :class:`MessageListenerOrderly`'s ``consume_message``). As
        :meth:`register_message_listener`."""
        self._check_not_started("register_message_listener_orderly")
        if not callable(listener):
            raise IllegalArgumentError("the listener must be callable", listener=repr(listener))
        self._orderly, self._concurrently = listener, None

    def _check_not_started(self, operation: str) -> None:
        if self._state is not ServiceState.CREATE_JUST:
            raise IllegalStateError(f"{operation} after start", state=self._state.name)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start consuming. Caller: the application, once. Affects: the inner lite pull
        consumer starts (group membership, rebalance, pulls); the group's retry topic is
        created and subscribed (CLUSTERING); orderly: the owned queues are locked. Raises
        IllegalStateError when started before or without a listener or subscription."""
        with self._lock:
            self._check_not_started("start")
            if self._concurrently is None and self._orderly is None:
                raise IllegalStateError("register a message listener before start")
            if not self._subscriptions:
                raise IllegalStateError("subscribe to a topic before start")
            try:
                self._start()
            except BaseException:
                self._state = ServiceState.START_FAILED
                self._stop()
                raise
            self._state = ServiceState.RUNNING

    def _start(self) -> None:
        config = self._config
        lite = self._lite = DefaultLitePullConsumer(
            config=config.pull_config(), allocate_strategy=self._strategy
        )
        for topic, expression in self._subscriptions.items():
            lite.subscribe(topic, expression)
        lite.start()
        api = retry_api_of(lite._services.require_api())  # (the consumer package's own)
        group = config.consumer_group
        executor = ThreadPoolExecutor(config.consume_thread_count, f"aeromq-consume-{group}")
        scheduler = TaskScheduler(f"aeromq-consume-later-{group}")
        scheduler.start()
        rt = self._runtime = PushRuntime(config, lite, api, executor, scheduler, lite.client_id)
        if self._orderly is not None:
            locks = self._locks = QueueLockKeeper(rt)
            self._service = OrderlyConsumeService(rt, self._orderly, locks)
        else:
            assert self._concurrently is not None
            self._service = ConcurrentConsumeService(rt, self._concurrently)
        rebalance = lite.rebalance_service
        if rebalance is not None:
            rebalance.on_release = self._service.drop
        if config.message_model is MessageModel.CLUSTERING:
            self._subscribe_retry_topic(lite, api_topics=list(self._subscriptions))
        if self._locks is not None:
            self._locks.lock_all()
        self._running = True
        self._thread = threading.Thread(
            target=self._poll_loop, name=f"aeromq-push-{group}", daemon=True
        )
        self._thread.start()

    def _subscribe_retry_topic(self, lite: DefaultLitePullConsumer, api_topics: list[str]) -> None:
        rt = self._runtime
        assert rt is not None
        queues = [q for topic in api_topics for q in lite.fetch_message_queues(topic)]
        try:
            topic = rt.retry.create_retry_topic(rt.group, queues)
        except ClientError as error:
            _log.warning("no retry topic for group=%s: %s", rt.group, error)
            return
        lite.subscribe(topic if topic else retry_topic(rt.group), "*")

    def shutdown(self) -> None:
        """Stop. Caller: the application. Affects: the poll thread stops; the listener calls
        in hand end (orderly: each queue's current one); consumed offsets are persisted;
        orderly queues are unlocked; the inner consumer leaves the group. A second call does
        nothing."""
        with self._lock:
            if self._state is ServiceState.SHUTDOWN_ALREADY:
                return
            self._state = ServiceState.SHUTDOWN_ALREADY
            self._stop()

    def _stop(self) -> None:
        self._running = False
        thread = self._thread
        if thread is not None:
            thread.join(10.0)
        if isinstance(self._service, OrderlyConsumeService):
            self._service.stop()
        rt = self._runtime
        if rt is not None:
            rt.executor.shutdown(wait=True, cancel_futures=True)
            rt.scheduler.shutdown()
            rt.persist()
        if self._locks is not None:
            self._locks.unlock(self._locks.held())
        if self._lite is not None:
            self._lite.shutdown()

    def __enter__(self) -> DefaultMQPushConsumer:
        if self._state is ServiceState.CREATE_JUST:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.shutdown()

    # -- the poll thread ---------------------------------------------------------------

    def _poll_loop(self) -> None:
        lite, rt, service = self._lite, self._runtime, self._service
        assert lite is not None and rt is not None and service is not None
        config = self._config
        next_persist = time.monotonic() + config.persist_interval_ms / 1000
        next_lock = time.monotonic() + config.lock_interval_ms / 1000
        while self._running:
            try:
                messages = lite.poll(_POLL_TIMEOUT_MS)
            except IllegalStateError:
                if not self._running:
                    return
                raise
            except ClientError as error:  # a corrupt batch: its queue stays put
                _log.warning("poll failed: group=%s: %s", rt.group, error)
                continue
            if messages:
                service.dispatch(messages)
            now = time.monotonic()
            if now >= next_persist:
                next_persist = now + config.persist_interval_ms / 1000
                rt.persist()
            if self._locks is not None and now >= next_lock:
                next_lock = now + config.lock_interval_ms / 1000
                self._locks.lock_all()

    def __repr__(self) -> str:
        return (
            f"DefaultMQPushConsumer(group={self.consumer_group!r}, state={self._state.name}, "
            f"orderly={self.orderly}, client_id={self.client_id!r})"
        )
