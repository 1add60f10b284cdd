"""The push consumer's configuration: one typed, validated object with RocketMQ's defaults.

``PushConsumerConfig(consumer_group="g")`` has the defaults of RocketMQ's
``DefaultMQPushConsumer`` for what the push consumer adds (consume threads, batch size,
retries, the orderly suspend and lock intervals); everything about pulling (transport,
timeouts, flow control, credentials) is the lite pull consumer's, given as ``pull`` (a
:class:`~consumer.LitePullConsumerConfig`; its group and endpoints are taken from here).
Validation runs on construction and raises :class:`~client.IllegalArgumentError` naming the
field, as the lite pull consumer's does; ``dataclasses.replace`` makes a changed copy
(validated again). Units are in the names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aeromq.client import IllegalArgumentError
from aeromq.common import DEFAULT_MAX_RECONSUME_TIMES, check_group
from aeromq.consumer.config import (
    ConsumeFromWhere,
    LitePullConsumerConfig,
    MessageModel,
    config_of,
)

__all__ = ["PushConsumerConfig", "push_config_of"]

_MIN_FIELDS = {
    "consume_thread_count": 1,
    "consume_message_batch_max_size": 1,
    "max_reconsume_times": 1,
    "suspend_current_queue_time_ms": 10,
    "pull_threshold_for_queue": 1,
    "lock_interval_ms": 100,
    "persist_interval_ms": 100,
    "send_back_retry_delay_ms": 10,
}


@dataclass(frozen=True)
class PushConsumerConfig:
    """What a :class:`~consumer.push.DefaultMQPushConsumer` is made with (see the module)."""

    consumer_group: str
    endpoints: tuple[str, ...] = ()
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.LAST_OFFSET
    consume_thread_count: int = 20
    """RocketMQ's ``consumeThreadMin``/``Max``: the listener's threads (concurrent) and the
    most queues consumed at once (orderly)."""
    consume_message_batch_max_size: int = 1
    """The most messages handed to one listener call."""
    max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES
    """Send-backs (concurrent) or suspended attempts (orderly) before the dead-letter queue."""
    suspend_current_queue_time_ms: int = 1000
    """How long an orderly queue waits after ``SUSPEND_CURRENT_QUEUE_A_MOMENT``."""
    pull_threshold_for_queue: int = 1000
    """A queue stops pulling while this many of its messages are unfinished."""
    lock_interval_ms: int = 20_000
    """Orderly: how often the owned queues' broker locks are renewed (RocketMQ's 20 s)."""
    persist_interval_ms: int = 5000
    """How often the consumed offsets are persisted to the broker (and at rebalance, stop)."""
    send_back_retry_delay_ms: int = 5000
    """A message whose send-back failed is handed to the listener again after this long."""
    pull: LitePullConsumerConfig | None = None
    """The lite pull consumer's settings for pulling (its group and endpoints are replaced by
    these; ``auto_commit`` is turned off: the push consumer commits)."""

    def __post_init__(self) -> None:
        check_group(self.consumer_group)
        object.__setattr__(self, "endpoints", tuple(self.endpoints))
        for name, low in _MIN_FIELDS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise IllegalArgumentError(
                    f"{name} must be an int >= {low}", field=name, value=value
                )

    def pull_config(self) -> LitePullConsumerConfig:
        """The inner lite pull consumer's configuration."""
        base = self.pull or LitePullConsumerConfig(consumer_group=self.consumer_group)
        return base.replace(
            consumer_group=self.consumer_group,
            endpoints=self.endpoints,
            message_model=self.message_model,
            consume_from_where=self.consume_from_where,
            auto_commit=False,
        )


def push_config_of(
    consumer_group: str | None, endpoints: str | Sequence[str], config: PushConsumerConfig | None
) -> PushConsumerConfig:
    """``config``, or one with every default for ``consumer_group`` and ``endpoints``, by the
    lite pull consumer's rule (:func:`~consumer.config.config_of`): IllegalArgumentError when
    neither a group nor a config is given, or they differ."""
    if config is not None:
        config_of(consumer_group, endpoints, config.pull_config())  # the same checks
        return config
    lite = config_of(consumer_group, endpoints, None)
    return PushConsumerConfig(consumer_group=lite.consumer_group, endpoints=lite.endpoints)
