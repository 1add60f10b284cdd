"""The lite pull consumer's configuration: one typed, validated object with RocketMQ's defaults.

``LitePullConsumerConfig(consumer_group="g")`` has every default of RocketMQ's
``DefaultLitePullConsumer`` (``docs/lite-pull-consumer.md``); any field can be given by
keyword, and :meth:`LitePullConsumerConfig.replace` makes a changed copy. Validation runs on
construction and raises :class:`~client.IllegalArgumentError` naming the field, its value and
the rule, where RocketMQ would fail later in ``start()`` (``checkConfig``) or silently ignore a
setter (``setAutoCommitIntervalMillis`` below 1000).

The enums: :class:`ConsumeFromWhere` (where a queue with no committed offset starts),
:class:`MessageModel` (CLUSTERING shares queues in a group and keeps offsets on the broker;
BROADCASTING gives every consumer every queue and keeps offsets in a local file) and
:class:`SubscriptionType` (subscribe and assign are mutually exclusive: see
:meth:`SubscriptionType.switch_to`).

Units are in the names. Sizes: ``pull_threshold_size_for_queue_mib`` counts message bodies only,
as RocketMQ's ``ProcessQueue.msgSize`` does.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from aeromq.client import ClientTls, Credentials, IllegalArgumentError, IllegalStateError
from aeromq.common import check_group

__all__ = [
    "DEFAULT_CONSUMER_GROUP",
    "ConsumeFromWhere",
    "LitePullConsumerConfig",
    "MessageModel",
    "SubscriptionType",
    "config_of",
]

DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"
"""RocketMQ's ``MixAll.DEFAULT_CONSUMER_GROUP``: a placeholder name no consumer may use."""

_HALF_HOUR_MS = 30 * 60 * 1000


class ConsumeFromWhere(Enum):
    """Where a queue starts when its group has no committed offset for it."""

    LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    """The queue's max offset: only messages sent from now on."""
    FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    """Offset 0: everything the broker still has (it answers OFFSET_ILLEGAL and moves the
    pull to its min offset when older messages were removed)."""
    TIMESTAMP = "CONSUME_FROM_TIMESTAMP"
    """The first message stored at or after ``consume_timestamp_ms``."""


class MessageModel(Enum):
    """How a group's consumers share a topic (RocketMQ's ``MessageModel``)."""

    CLUSTERING = "CLUSTERING"
    """The group's consumers share the queues; offsets live on the broker."""
    BROADCASTING = "BROADCASTING"
    """Every consumer gets every queue; offsets live in a local file per consumer."""


class SubscriptionType(Enum):
    """How the consumer got its queues: not yet, by ``subscribe`` or by ``assign``."""

    NONE = "NONE"
    SUBSCRIBE = "SUBSCRIBE"
    ASSIGN = "ASSIGN"

    def switch_to(self, wanted: SubscriptionType) -> SubscriptionType:
        """The type after asking for ``wanted``: NONE takes any type, a type keeps itself, and
        subscribe after assign (or the reverse) raises :class:`~client.IllegalStateError`."""
        if self is SubscriptionType.NONE or self is wanted:
            return wanted
        raise IllegalStateError(
            "subscribe and assign are mutually exclusive", current=self.name, wanted=wanted.name
        )


def _default_offset_store_dir() -> Path:
    """RocketMQ's ``rocketmq.client.localOffsetStoreDir`` default: ``~/.rocketmq_offsets``."""
    configured = os.environ.get("AEROMQ_LOCAL_OFFSET_STORE_DIR")
    return Path(configured) if configured else Path.home() / ".rocketmq_offsets"


@dataclass(frozen=True, slots=True, kw_only=True)
class LitePullConsumerConfig:
    """Everything a :class:`~consumer.DefaultLitePullConsumer` can be told (see module doc)."""

    consumer_group: str
    endpoints: tuple[str, ...] = ()
    """gRPC addresses (``host:port``) of brokers or name servers to ask for routes."""
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.LAST_OFFSET
    consume_timestamp_ms: int = field(
        default_factory=lambda: int(time.time() * 1000) - _HALF_HOUR_MS
    )
    """For TIMESTAMP: epoch ms; the default is half an hour before the config was made."""
    auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    pull_batch_size: int = 10
    pull_threshold_for_all: int = 10000
    pull_threshold_for_queue: int = 1000
    pull_threshold_size_for_queue_mib: int = 100
    consume_max_span: int = 2000
    poll_timeout_ms: int = 5000
    max_poll_records: int = 500
    """At most this many messages per ``poll``, gathered across queues (RocketMQ returns one
    pull batch per poll: see ``DefaultLitePullConsumer.poll``)."""
    topic_metadata_check_interval_ms: int = 30000
    """The route check: a subscribed topic whose queues changed is rebalanced at once, and
    the queue change listeners hear of their topics' changes."""
    broker_suspend_max_time_ms: int = 20000
    consumer_timeout_ms_when_suspend: int = 30000
    consumer_pull_timeout_ms: int = 10000
    persist_consumer_offset_interval_ms: int = 5000
    heartbeat_broker_interval_ms: int = 30000
    rebalance_interval_ms: int = 20000
    rebalance_retry_interval_ms: int = 1000
    """The next rebalance after an unbalanced run (no route, no members, an offset failed)."""
    release_timeout_ms: int = 1000
    """A queue a rebalance gives this consumer is pulled once the broker grants it: at once
    when nobody else holds it, else as soon as its holder commits and releases it (it got
    the same membership push), or leaves the group. A live holder that has not let go after
    this long is passed over (the take-over is forced; see ``aeromq.consumer.rebalance``)."""
    pull_time_delay_ms_when_exception: int = 3000
    pull_time_delay_ms_when_flow_control: int = 50
    pull_time_delay_ms_when_pause: int = 1000
    pull_time_delay_ms_when_broker_busy: int = 20
    defer_caught_up_pulls: bool = True
    """A caught-up queue's next pull goes out when the application next calls ``poll()``, not
    before the ``poll()`` that read its last messages returns them (when that ``poll()`` read
    the answer itself: one broker, over IPC). Its answer would only wait at the broker for the
    next message anyway; sending it first cost each message 40-50 us of ``poll()`` here. What
    arrives while the application works between two polls then comes one round trip after its
    next ``poll()`` starts, as a Kafka consumer's fetches go out in its ``poll()``. False:
    sent at once, as RocketMQ's pull threads do (``aeromq.consumer.pull_task``)."""
    deferred_pull_max_delay_ms: int = 100
    """How long a deferred pull (``defer_caught_up_pulls``) waits for the application's next
    ``poll()`` at most: then it goes out from the consumer's scheduler, so an application that
    stops polling still has its pulls out, its broker sessions checked and a restarted or
    failed-over broker found as soon as without deferral."""
    pull_thread_nums: int = 20
    """RocketMQ's pull thread count. Here pulls are asynchronous and share one scheduler
    thread; this many threads at most serve the blocking control calls (offsets, routes)."""
    instance_name: str | None = None
    """The part of the client id after ``ip@``. None: the process id for CLUSTERING (with
    ``#n`` for the n-th consumer of a process), ``DEFAULT`` for BROADCASTING, whose local
    offset file path contains the client id and must survive restarts (as in RocketMQ)."""
    transport: str = "auto"
    """How pulls reach a broker: ``"auto"`` (IPC through the broker's own media driver when
    it runs on this host, else UDP), ``"ipc"`` or ``"udp"``."""
    aeron_dir: str | None = None
    """The local media driver for UDP sessions (None: one embedded in this process)."""
    udp_response_host: str = "127.0.0.1"
    """The address brokers answer UDP sessions on."""
    offer_timeout_ms: int = 1000
    """How long a pull is retried on a back-pressured broker ingress before it fails
    (retriable, nothing sent). A pull's wait for its answer is
    ``consumer_timeout_ms_when_suspend``, since the broker may hold it that long."""
    control_timeout_ms: int = 3000
    """The timeout of one control call (routes, offsets, members, ``start()``'s registration)
    over gRPC; a broker group's call follows its leader through a failover within it."""
    offset_store_dir: Path = field(default_factory=_default_offset_store_dir)
    """BROADCASTING only: offsets go to ``<dir>/<client_id>/<group>/offsets.json``."""
    credentials: Credentials | None = None
    """An ACL user for a secured broker: sent with every gRPC call and in session CONNECTs."""
    tls: ClientTls | None = None
    """gRPC over TLS (``ClientTls``: the CA to trust; a client certificate for mutual TLS)."""

    def __post_init__(self) -> None:
        check_group(self.consumer_group)
        if self.consumer_group == DEFAULT_CONSUMER_GROUP:
            _fail("consumer_group", self.consumer_group, f"must not be {DEFAULT_CONSUMER_GROUP}")
        if isinstance(self.endpoints, str):
            object.__setattr__(
                self, "endpoints", tuple(self.endpoints.replace(";", ",").split(","))
            )
        object.__setattr__(self, "endpoints", tuple(e.strip() for e in self.endpoints if e.strip()))
        if not isinstance(self.message_model, MessageModel):
            _fail("message_model", self.message_model, "must be a MessageModel")
        if not isinstance(self.consume_from_where, ConsumeFromWhere):
            _fail("consume_from_where", self.consume_from_where, "must be a ConsumeFromWhere")
        _check_range("auto_commit_interval_ms", self.auto_commit_interval_ms, 1000)
        _check_range("pull_batch_size", self.pull_batch_size, 1, 1024)
        _check_range("pull_threshold_for_all", self.pull_threshold_for_all, 1)
        _check_range("pull_threshold_for_queue", self.pull_threshold_for_queue, 1, 65535)
        _check_range(
            "pull_threshold_size_for_queue_mib", self.pull_threshold_size_for_queue_mib, 1, 1024
        )
        _check_range("consume_max_span", self.consume_max_span, 1, 65535)
        _check_range("poll_timeout_ms", self.poll_timeout_ms, 0)
        _check_range("max_poll_records", self.max_poll_records, 1)
        _check_range("consume_timestamp_ms", self.consume_timestamp_ms, 0)
        for name in (
            "topic_metadata_check_interval_ms",
            "consumer_pull_timeout_ms",
            "persist_consumer_offset_interval_ms",
            "heartbeat_broker_interval_ms",
            "rebalance_interval_ms",
            "rebalance_retry_interval_ms",
            "pull_thread_nums",
            "control_timeout_ms",
            "offer_timeout_ms",
            "deferred_pull_max_delay_ms",
        ):
            _check_range(name, getattr(self, name), 1)
        for name in (
            "broker_suspend_max_time_ms",
            "pull_time_delay_ms_when_exception",
            "release_timeout_ms",
            "pull_time_delay_ms_when_flow_control",
            "pull_time_delay_ms_when_pause",
            "pull_time_delay_ms_when_broker_busy",
        ):
            _check_range(name, getattr(self, name), 0)
        if self.consumer_timeout_ms_when_suspend < self.broker_suspend_max_time_ms:
            _fail(
                "consumer_timeout_ms_when_suspend",
                self.consumer_timeout_ms_when_suspend,
                "long polling: must not be less than broker_suspend_max_time_ms",
                broker_suspend_max_time_ms=self.broker_suspend_max_time_ms,
            )
        if self.instance_name is not None and (not self.instance_name or "@" in self.instance_name):
            _fail("instance_name", self.instance_name, "must be non-empty and without '@'")
        if self.transport not in ("auto", "ipc", "udp"):
            _fail("transport", self.transport, "must be auto, ipc or udp")
        object.__setattr__(self, "offset_store_dir", Path(self.offset_store_dir))

    @property
    def pull_threshold_size_for_queue_bytes(self) -> int:
        """``pull_threshold_size_for_queue_mib`` in bytes: the bodies a queue may hold in the
        cache before its pull task waits."""
        return self.pull_threshold_size_for_queue_mib * 1024 * 1024

    def flow_control_warnings(self) -> list[str]:
        """Settings that hold every queue back after about one pull: a per-queue bound
        (``pull_threshold_for_queue``, ``consume_max_span``) under two pulls
        (``pull_batch_size``) makes each queue's pull task sit out a flow-control delay
        (``pull_time_delay_ms_when_flow_control``) as soon as two answers are cached, however
        fast the application polls. RocketMQ's defaults (1,000 and 2,000) fit its pulls of 10;
        a consumer pulling 1,024 at a time should raise them with it."""
        two_pulls = 2 * self.pull_batch_size
        return [
            f"{name}={value} is under two pulls (pull_batch_size={self.pull_batch_size}): each "
            f"queue waits {self.pull_time_delay_ms_when_flow_control} ms after about every "
            f"pull; raise it to {two_pulls} or more"
            for name, value in (
                ("pull_threshold_for_queue", self.pull_threshold_for_queue),
                ("consume_max_span", self.consume_max_span),
            )
            if value < two_pulls
        ]

    def replace(self, **changes: Any) -> LitePullConsumerConfig:
        """A copy with ``changes`` applied, validated again."""
        return dataclasses.replace(self, **changes)


def _fail(name: str, value: object, rule: str, **more: Any) -> None:
    raise IllegalArgumentError(f"invalid consumer config: {name} {rule}", value=value, **more)


def _check_range(name: str, value: object, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(name, value, "must be an int")
        return
    if value < low or (high is not None and value > high):
        rule = f"must be in [{low}, {high}]" if high is not None else f"must be >= {low}"
        _fail(name, value, rule)


def config_of(
    consumer_group: str | None,
    endpoints: str | Sequence[str],
    config: LitePullConsumerConfig | None,
) -> LitePullConsumerConfig:
    """The configuration a consumer is made with: ``config``, or one with every default for
    ``consumer_group`` and ``endpoints`` (a string is one address). Caller: the consumers'
    constructors. Raises IllegalArgumentError when neither a group nor a config is given, or
    the group differs from the config's."""
    if config is None:
        if consumer_group is None:
            raise IllegalArgumentError("give a consumer_group or a config")
        given = (endpoints,) if isinstance(endpoints, str) else tuple(endpoints)
        return LitePullConsumerConfig(consumer_group=consumer_group, endpoints=given)
    if consumer_group is not None and consumer_group != config.consumer_group:
        raise IllegalArgumentError(
            "consumer_group differs from config.consumer_group",
            consumer_group=consumer_group,
            config_group=config.consumer_group,
        )
    return config
