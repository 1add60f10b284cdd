r"""``DefaultLitePullConsumer``: RocketMQ's lite pull consumer (``docs/lite-pull-consumer.md``).

::

    consumer = DefaultLitePullConsumer("group", "127.0.0.1:9876")
    consumer.subscribe("TopicTest", "TagA || TagB")
    with consumer:                     # starts it once; shuts it down at the end
        for message in consumer:       # blocks; ends when the consumer shuts down
            handle(message)            # offsets commit automatically (auto_commit)

or ``consumer.start()``, ``consumer.poll()`` in a loop and ``consumer.shutdown()``.

How it works: the rebalance service (subscribe) or ``assign`` decides the owned queues; one pull
task per queue long-polls the broker into the consume-request cache; ``poll`` takes up to
``max_poll_records`` messages from it, across queues, and ``poll_batch`` the same as one
:class:`~consumer.MessageBatch` of columns. Delivery is at least once; a clean rebalance hands
each moved queue over at the offset its previous owner committed as it let go. The deliberate
differences from RocketMQ's are listed in ``docs/guides/consumer.md`` ("Every RocketMQ method,
and what differs from Java"); the contract is ``docs/lite-pull-consumer.md``.

This class is the façade, as aiokafka's consumer is: each method checks what the API says it
checks and hands the work to one role (their modules are listed in ``consumer/__init__.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from types import TracebackType

from aeromq.client import (
    IllegalArgumentError,
    IllegalStateError,
    MessageExt,
    MessageQueue,
    MessageSelector,
    MetricsServer,
)
from aeromq.consumer._broker_api import BrokerApi
from aeromq.consumer._hooks import ConsumeMessageHook
from aeromq.consumer._metrics import ConsumerMetrics
from aeromq.consumer.allocate import AllocateMessageQueueAveragely, AllocateMessageQueueStrategy
from aeromq.consumer.assigned_queues import AssignedMessageQueue
from aeromq.consumer.commits import Committer
from aeromq.consumer.config import LitePullConsumerConfig, SubscriptionType, config_of
from aeromq.consumer.message_batch import MessageBatch
from aeromq.consumer.offset_store import OffsetStore
from aeromq.consumer.poller import DeliveryListener, Poller, ValueDeserializer
from aeromq.consumer.positions import Positions
from aeromq.consumer.pull_task import FlowControlCounters
from aeromq.consumer.rebalance import MessageQueueListener, RebalanceService
from aeromq.consumer.retry import SendBack, SendBackMethod
from aeromq.consumer.route_check import TopicMessageQueueChangeListener
from aeromq.consumer.services import ConsumerServices, ServiceState
from aeromq.consumer.subscription_changes import SubscriptionChanges

__all__ = [
    "DefaultLitePullConsumer",
    "DeliveryListener",
    "ServiceState",
    "TopicMessageQueueChangeListener",
    "ValueDeserializer",
]


class DefaultLitePullConsumer(SendBackMethod):
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
        services = self._services = ConsumerServices(
            config_of(consumer_group, endpoints, config),
            allocate_strategy or AllocateMessageQueueAveragely(),
            message_queue_listener,
            broker_api,
        )
        self._assigned = services.assigned
        self._cache = services.cache
        self._changes = SubscriptionChanges(services)
        self._positions = Positions(services)
        self._committer = Committer(services)
        self._poller = Poller(services, self._committer, value_deserializer)
        self._send_back = SendBack(services, self._changes.subscribe)

    # -- properties ------------------------------------------------------------------

    @property
    def config(self) -> LitePullConsumerConfig:
        """The configuration (frozen). A new one of the same group may be set before
        ``start``; setting one raises IllegalStateError once started, IllegalArgumentError
        for another group."""
        return self._services.config

    @config.setter
    def config(self, config: LitePullConsumerConfig) -> None:
        """Replace the configuration before ``start``. Caller: the application.
        Affects: everything started later. Raises IllegalStateError once started."""
        self._services.replace_config(config)

    @property
    def consumer_group(self) -> str:
        """The group this consumer consumes for (``config.consumer_group``)."""
        return self._services.config.consumer_group

    @property
    def client_id(self) -> str:
        """``ip@instance``, set by ``start``."""
        return self._services.client_id

    @property
    def is_running(self) -> bool:
        """Whether ``start`` succeeded and ``shutdown`` has not been called."""
        return self._services.state is ServiceState.RUNNING

    @property
    def service_state(self) -> ServiceState:
        """Where the consumer is in its life: CREATE_JUST, START_FAILED, RUNNING or
        SHUTDOWN_ALREADY."""
        return self._services.state

    @property
    def subscription_type(self) -> SubscriptionType:
        """How the consumer got its queues: NONE yet, SUBSCRIBE or ASSIGN (the two exclude
        each other)."""
        return self._services.subscription.type

    @property
    def flow_control_counters(self) -> FlowControlCounters:
        """What the pull tasks did: flow-control delays by check, pulls, errors."""
        return self._services.counters

    def metrics(self) -> ConsumerMetrics:
        """What this consumer did since it was made (pulls, messages pulled and polled,
        errors, flow-control delays, rebalances, the pull latency) and its cache now.
        Caller: the application, any thread. Affects: nothing."""
        return self._services.metrics()

    def serve_metrics(self, host: str = "127.0.0.1", port: int = 0) -> MetricsServer:
        """Serve :meth:`metrics` at ``http://host:port/metrics`` for Prometheus
        (``aeromq_consumer_*``, labelled with the group and client id); ``close()`` the answer
        to stop."""
        return self._services.serve_metrics(host, port)

    @property
    def offset_store(self) -> OffsetStore | None:
        """The committed offsets (on the broker for CLUSTERING, in a local file for
        BROADCASTING); None before ``start``."""
        return self._services.offset_store

    @property
    def rebalance_service(self) -> RebalanceService | None:
        """The service that allocates the subscribed topics' queues; None before ``start``."""
        return self._services.rebalance

    @property
    def assigned_queues(self) -> AssignedMessageQueue:
        """The owned queues' state (process queues, pause, offsets): for tests and metrics."""
        return self._assigned

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start pulling. Caller: the application, once. Affects: connects to the brokers,
        registers with the group (subscribe), starts the rebalance service, the pull tasks
        and the timers. Raises IllegalStateError when started before."""
        self._services.start()

    def shutdown(self) -> None:
        """Stop. Caller: the application. Affects: stops pulling and rebalancing, commits
        consumed offsets (auto commit), persists committed offsets, leaves the group (the
        broker tells the other members at once), releases threads. A second call does
        nothing; ``poll`` raises afterwards."""
        self._services.shutdown()

    def __enter__(self) -> DefaultLitePullConsumer:
        """Start the consumer unless it runs already (``with`` after ``start()`` is fine).
        Raises IllegalStateError when it was shut down."""
        state = self._services.state
        if state is ServiceState.CREATE_JUST:
            self.start()
        elif state is not ServiceState.RUNNING:
            raise IllegalStateError(
                "a shut down consumer cannot be entered again", state=state.name
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
        self._services.check_running()
        while self.is_running:
            try:
                messages = self.poll()
            except IllegalStateError:
                if self.is_running:
                    raise
                return
            yield from messages

    # -- subscribe and assign ----------------------------------------------------------

    def subscribe(self, topic: str, sub_expression: str | MessageSelector | None = "*") -> None:
        """Subscribe to ``topic`` with a tag expression (``"TagA || TagB"``, ``"*"``) or a
        :class:`~client.MessageSelector`. Caller: the application, before or after start.
        Affects: the group's subscription (heartbeat) and the owned queues: at ``start()``, or,
        when running, by a rebalance before this returns (so their start offsets are fixed).
        Raises IllegalStateError after ``assign`` or shutdown, InvalidExpressionError for an
        expression that does not parse (a SQL92 one names the position of the error)."""
        self._changes.subscribe(topic, sub_expression)

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic``. Caller: the application. Affects: its queues are dropped
        (their offsets committed and persisted as on a rebalance) and the group is told.
        Raises IllegalStateError after shutdown."""
        self._changes.unsubscribe(topic)

    def assign(self, queues: Collection[MessageQueue]) -> None:
        """Own exactly ``queues`` (manual assignment, no group rebalancing). Caller: the
        application, before or after start. Affects: queues not in ``queues`` are dropped;
        new ones get their start offset (when running: before they show in ``assignment()``)
        and start pulling. Raises IllegalArgumentError when empty or a queue is malformed (its
        topic checked as ``subscribe`` checks it), IllegalStateError after ``subscribe`` or
        shutdown."""
        self._changes.assign(queues)

    def assignment(self) -> set[MessageQueue]:
        """The queues owned now (assigned, or allocated by the last rebalance)."""
        return self._assigned.queues()

    def set_sub_expression_for_assign(self, topic: str, sub_expression: str) -> None:
        """Filter the assigned queues of ``topic`` by a tag expression. Caller: the
        application, before start. Affects: the pulls of those queues. Raises
        IllegalArgumentError for a bad topic or an empty expression, InvalidExpressionError
        for one that does not parse, IllegalStateError once started."""
        self._changes.set_sub_expression_for_assign(topic, sub_expression)

    # -- poll ----------------------------------------------------------------------------

    def poll(self, timeout_ms: int | None = None) -> list[MessageExt]:
        """Up to ``max_poll_records`` messages gathered across queues, waiting up to
        ``timeout_ms`` (default ``poll_timeout_ms``) for the first; ``[]`` on timeout.
        Caller: the application, from one thread at a time. Affects: auto commit (when due)
        commits what earlier polls returned; each queue's consume offset moves past the
        messages returned. Raises :class:`~client.CorruptMessageError` once for each pulled
        batch that failed its check (its queue does not move past it: seek to skip it)."""
        return self._poller.poll(timeout_ms)

    def poll_batch(
        self, timeout_ms: int | None = None, max_records: int | None = None
    ) -> MessageBatch:
        """``poll`` in columns: up to ``max_records`` (default ``max_poll_records``) messages
        as one :class:`~consumer.MessageBatch` (numpy columns, Arrow bodies, ``to_arrow()``),
        made without a Python object per message. Same waiting, commit and errors as ``poll``;
        an empty batch on timeout."""
        return self._poller.poll_batch(timeout_ms, max_records)

    # -- position ------------------------------------------------------------------------

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Make ``queue``'s next pull start at ``offset`` (min <= offset <= max).
        Caller: the application. Affects: the queue's cached messages are discarded, its
        consume offset becomes ``offset``, its pull task restarts at once. Raises
        IllegalStateError if the queue is not owned, OffsetIllegalError out of range."""
        self._positions.seek(queue, offset)

    def seek_to_begin(self, queue: MessageQueue) -> None:
        """``seek`` to the queue's min offset."""
        self._positions.seek_to_begin(queue)

    def seek_to_end(self, queue: MessageQueue) -> None:
        """``seek`` to the queue's max offset (only messages sent from now on)."""
        self._positions.seek_to_end(queue)

    def position(self, queue: MessageQueue) -> int:
        """The offset of the next message ``poll`` returns from ``queue`` (kafka-python's
        ``position``): what was polled last + 1, a pending seek, the first cached message,
        else the start offset fixed at allocation. Raises IllegalStateError when the queue is
        not owned, a ClientError when its start offset is not known yet and the broker cannot
        say."""
        return self._positions.position(queue)

    def beginning_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's min offset (the first the broker still has), kafka-python's
        ``beginning_offsets``; any queue, owned or not."""
        return self._positions.beginning_offsets(queues)

    def end_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's max offset (the offset its next message gets), kafka-python's
        ``end_offsets``; any queue, owned or not."""
        return self._positions.end_offsets(queues)

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
        self._committer.commit(offsets, persist)

    def commit_sync(self) -> None:
        """``commit()``: every owned queue's consume offset, persisted now."""
        self.commit()

    def committed(self, queue: MessageQueue) -> int:
        """The group's committed offset of ``queue`` (memory first, then the broker); -1 if
        none. Raises a ClientError when the broker cannot say."""
        return self._committer.committed(queue)

    # -- metadata --------------------------------------------------------------------------

    def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        """Every readable queue of ``topic``."""
        return self._services.fetch_message_queues(topic)

    def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of ``queue`` stored at or after ``timestamp_ms``."""
        return self._positions.offset_for_timestamp(queue, timestamp_ms)

    def register_consume_message_hook(self, hook: ConsumeMessageHook) -> None:
        """Run ``hook`` on every poll that returns messages from now on, after the hooks
        registered before it (see ``consumer.ConsumeMessageHook``; RocketMQ's
        ``registerConsumeMessageHook``)."""
        self._poller.register_consume_message_hook(hook)

    def register_topic_message_queue_change_listener(
        self, topic: str, listener: TopicMessageQueueChangeListener
    ) -> None:
        """Call ``listener(topic, queues)`` when the topic's queues change (checked every
        ``topic_metadata_check_interval_ms``). A second listener for a topic replaces the
        first."""
        self._services.register_topic_listener(topic, listener)

    def update_name_server_address(self, addresses: str | Sequence[str]) -> None:
        """Use these name server (or broker) gRPC addresses: ``"h1:p1;h2:p2"`` or a list."""
        self._services.update_endpoints(addresses)

    update_endpoints = update_name_server_address

    def add_delivery_listener(self, listener: DeliveryListener) -> None:
        """Call ``listener()`` whenever pulled messages are queued for ``poll``, and at
        shutdown (the asyncio consumer wakes its waiters this way). Caller: :mod:`aeromq.aio`."""
        self._cache.add_listener(listener)

    def remove_delivery_listener(self, listener: DeliveryListener) -> None:
        """Stop calling ``listener`` (added by :meth:`add_delivery_listener`; one not added is
        ignored). Caller: :mod:`aeromq.aio`."""
        self._cache.remove_listener(listener)

    def __repr__(self) -> str:
        return (
            f"DefaultLitePullConsumer(group={self.consumer_group!r}, "
            f"state={self._services.state.name}, client_id={self.client_id!r}, "
            f"queues={len(self._assigned)})"
        )
