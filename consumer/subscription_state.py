"""``SubscriptionState``: what the consumer was told to read, by ``subscribe`` or by ``assign``.

aiokafka's ``subscription_state`` for the lite pull consumer: the :class:`SubscriptionType`
(``subscribe`` and ``assign`` exclude each other: mixing them raises
:class:`~client.IllegalStateError`), the subscriptions table (topic -> tag or SQL92
subscription, shared with the rebalance service and sent in heartbeats), and the expressions
that filter assigned queues (``set_sub_expression_for_assign``; ``"*"`` for a topic without
one). :func:`check_queue` is the check ``assign`` and the offset queries make of a queue.

A record with no I/O: applying a change to the running consumer (a heartbeat, a rebalance,
start offsets, pull tasks) is :class:`~consumer.services.ConsumerServices`'s.

Caller: the consumer's services (subscribe, unsubscribe, assign, start), the pull tasks
(:meth:`SubscriptionState.subscription_for` before each pull). Thread safety: changed under
the consumer's lock (the table under the rebalance service's lock too, once it runs).
"""

from __future__ import annotations

from aeromq.client import (
    IllegalArgumentError,
    MessageQueue,
    SubscriptionData,
    build_subscription_data,
)
from aeromq.common import check_topic
from aeromq.consumer.config import SubscriptionType

__all__ = ["SubscriptionState", "check_queue"]


class SubscriptionState:
    """How the consumer gets its queues, and the subscription of each topic it reads."""

    def __init__(self) -> None:
        self.type = SubscriptionType.NONE
        """NONE until the first ``subscribe`` or ``assign``; then that one for good."""
        self.subscriptions: dict[str, SubscriptionData] = {}
        """Topic -> subscription (``subscribe``); shared with the rebalance service."""
        self.assign_expressions: dict[str, SubscriptionData] = {}
        """Topic -> the filter of its assigned queues (``assign``)."""

    def switch_to(self, wanted: SubscriptionType) -> None:
        """Caller: subscribe, assign, ``set_sub_expression_for_assign``. Affects: the type
        (NONE takes ``wanted``). Raises IllegalStateError when it is the other one."""
        self.type = self.type.switch_to(wanted)

    def set_assign_expression(self, topic: str, sub_expression: str) -> None:
        """Filter the assigned queues of ``topic`` by ``sub_expression``. Caller:
        ``set_sub_expression_for_assign``. Affects: the pulls of those queues. Raises
        InvalidExpressionError for an expression that does not parse."""
        self.assign_expressions[topic] = build_subscription_data(topic, sub_expression)

    def subscription_for(self, topic: str) -> SubscriptionData | None:
        """The subscription a pull of ``topic`` carries: the subscribed one (None once
        unsubscribed), else the assign expression (``"*"`` when none was set). Caller: the pull
        tasks."""
        if self.type is SubscriptionType.SUBSCRIBE:
            return self.subscriptions.get(topic)
        subscription = self.assign_expressions.get(topic)
        if subscription is None:
            subscription = self.assign_expressions[topic] = build_subscription_data(topic, "*")
        return subscription


def check_queue(queue: object) -> MessageQueue:
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
