"""``SubscriptionChanges``: ``subscribe``, ``unsubscribe`` and ``assign`` applied to the consumer.

Each change is recorded in the :class:`~consumer.subscription_state.SubscriptionState` and,
once the consumer's services exist, reaches them under the consumer's lock:

- ``subscribe``: the subscriptions table changes under the rebalance service's lock; when
  running, the group hears of it (the first subscription registers with the brokers) and a
  rebalance runs in the caller's thread, so the topic's queues, with their start offsets, are
  owned when ``subscribe()`` returns (the service thread retries soon if that run cannot);
- ``unsubscribe``: the topic's queues are dropped as a rebalance drops them (their offsets
  committed and persisted with their release), and the group hears of it;
- ``assign``: queues no longer wanted are dropped and released; when running, new ones get
  their start offsets before they are owned, and the pull tasks follow;
- ``set_sub_expression_for_assign``: before ``start()`` only.

Caller: the consumer façade. Affects: the subscription record, the owned queues, the rebalance
service, the pull tasks and the heartbeats (through :class:`~consumer.services.ConsumerServices`).
"""

from __future__ import annotations

from collections.abc import Collection

from aeromq.client import (
    IllegalArgumentError,
    IllegalStateError,
    MessageQueue,
    MessageSelector,
    build_subscription_data,
)
from aeromq.common import check_topic
from aeromq.consumer.config import SubscriptionType
from aeromq.consumer.services import ConsumerServices, ServiceState
from aeromq.consumer.subscription_state import check_queue

__all__ = ["SubscriptionChanges"]


class SubscriptionChanges:
    """What the consumer reads, changed by the application (see the module doc)."""

    def __init__(self, services: ConsumerServices) -> None:
        self._services = services
        self._subscription = services.subscription
        self._assigned = services.assigned

    def subscribe(self, topic: str, sub_expression: str | MessageSelector | None) -> None:
        """Caller: ``DefaultLitePullConsumer.subscribe``. Affects: see the module doc. Raises
        IllegalStateError after ``assign`` or shutdown, InvalidExpressionError for an
        expression that does not parse."""
        check_topic(topic)
        subscription = build_subscription_data(topic, sub_expression)
        services = self._services
        with services.lock:
            services.check_not_shut_down("subscribe")
            self._subscription.switch_to(SubscriptionType.SUBSCRIBE)
            subscriptions = self._subscription.subscriptions
            rebalance = services.rebalance
            if rebalance is None:
                subscriptions[topic] = subscription
                return
            with rebalance.lock:
                subscriptions[topic] = subscription
            if services.is_running:
                if services.heartbeating:
                    services.heartbeat()
                else:
                    services.start_heartbeat()
                # Allocate now, so the topic's queues (with their start offsets) are owned
                # when this returns; the service thread retries soon if this run cannot.
                if not rebalance.run_now():
                    rebalance.wakeup()

    def unsubscribe(self, topic: str) -> None:
        """Caller: ``DefaultLitePullConsumer.unsubscribe``. Affects: see the module doc.
        Raises IllegalStateError after shutdown."""
        services = self._services
        with services.lock:
            services.check_not_shut_down("unsubscribe")
            subscriptions = self._subscription.subscriptions
            rebalance = services.rebalance
            if rebalance is None:
                subscriptions.pop(topic, None)
                self._assigned.remove_topic(topic)
                return
            with rebalance.lock:
                subscriptions.pop(topic, None)
                for queue in [q for q in self._assigned.queues() if q.topic == topic]:
                    rebalance.drop_queue(queue)
                rebalance.forget_topic(topic)
            if services.is_running:
                services.heartbeat()

    def assign(self, queues: Collection[MessageQueue]) -> None:
        """Caller: ``DefaultLitePullConsumer.assign``. Affects: see the module doc. Raises
        IllegalArgumentError when ``queues`` is empty or a queue is malformed,
        IllegalStateError after ``subscribe`` or shutdown."""
        wanted = set(queues)
        if not wanted:
            raise IllegalArgumentError("message queues can not be null or empty")
        for queue in wanted:
            check_queue(queue)
        services = self._services
        with services.lock:
            services.check_not_shut_down("assign")
            self._subscription.switch_to(SubscriptionType.ASSIGN)
            rebalance = services.rebalance
            offsets: dict[MessageQueue, int] = {}
            if services.is_running and rebalance is not None:
                offsets = rebalance.start_offsets(q for q in wanted if q not in self._assigned)
            removed = self._assigned.update_all(wanted, offsets)
            if rebalance is not None:
                for state in removed:
                    rebalance.release(state.queue, state)
            if services.is_running and services.tasks is not None:
                services.tasks.retain(wanted)

    def set_sub_expression_for_assign(self, topic: str, sub_expression: str) -> None:
        """Caller: ``DefaultLitePullConsumer.set_sub_expression_for_assign``. Affects: the
        pulls of the topic's assigned queues. Raises IllegalArgumentError for a bad topic or
        an empty expression, InvalidExpressionError for one that does not parse,
        IllegalStateError once started or after ``subscribe``."""
        check_topic(topic)
        if not sub_expression or sub_expression.isspace():
            raise IllegalArgumentError("sub_expression can not be null or empty", topic=topic)
        services = self._services
        with services.lock:
            if services.state is not ServiceState.CREATE_JUST:
                raise IllegalStateError(
                    "set_sub_expression_for_assign only before start", state=services.state.name
                )
            self._subscription.switch_to(SubscriptionType.ASSIGN)
            self._subscription.set_assign_expression(topic, sub_expression)
