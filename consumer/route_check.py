"""``RouteCheck``: the consumer's periodic look at the routes of the topics it reads or watches.

Every ``topic_metadata_check_interval_ms`` (a timer of the consumer's services) the check
fetches the queues of every subscribed topic and of every topic with a queue change listener
(``register_topic_message_queue_change_listener``). A subscribed topic whose queues differ from
the last rebalance's rebalances at once (:meth:`~consumer.rebalance.RebalanceService.on_route`;
RocketMQ waits for the next periodic rebalance, up to 20 s); a watched topic's listener hears
of a change, with the new queues. A fetch that fails is logged and tried at the next check.

Caller: the consumer's services (:class:`~consumer.services.ConsumerServices`), on their
executor. Affects: the rebalance service (a wake-up), the listeners. Thread safety: listeners
are added under the consumer's lock; the timer runs one check at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aeromq.client import ClientError, IllegalArgumentError, MessageQueue, SubscriptionData
from aeromq.common import check_topic
from aeromq.consumer._broker_api import BrokerApi
from aeromq.consumer.rebalance import RebalanceService

__all__ = ["RouteCheck", "TopicMessageQueueChangeListener"]

_log = logging.getLogger(__name__)

TopicMessageQueueChangeListener = Callable[[str, set[MessageQueue]], None]
"""``listener(topic, queues)``: the topic's queues changed (checked every
``topic_metadata_check_interval_ms``)."""


class RouteCheck:
    """The route check of one consumer (see the module doc); ``subscriptions`` is the
    consumer's subscriptions table, read at each check."""

    def __init__(self, subscriptions: dict[str, SubscriptionData]) -> None:
        self._subscriptions = subscriptions
        self._listeners: dict[str, TopicMessageQueueChangeListener] = {}
        self._queues: dict[str, set[MessageQueue]] = {}
        """The queues each watched topic had at the last check (what the next compares with)."""

    def add_listener(self, topic: str, listener: TopicMessageQueueChangeListener) -> None:
        """Caller: ``register_topic_message_queue_change_listener``. Affects: the checks tell
        ``listener`` of the topic's changes; a second listener for a topic replaces the first.
        Raises IllegalArgumentError for a bad topic or a listener that is not callable."""
        check_topic(topic)
        if not callable(listener):
            raise IllegalArgumentError("the listener must be callable", topic=topic)
        if topic in self._listeners:
            _log.warning("replacing the queue change listener of topic=%s", topic)
        self._listeners[topic] = listener

    def watched_topics(self) -> list[str]:
        """The topics with a listener."""
        return list(self._listeners)

    def note_queues(self, topic: str, queues: set[MessageQueue]) -> None:
        """Caller: the services, when a watched topic's queues were fetched outside a check
        (at start, when a listener is added while running). Affects: what the next check
        compares with."""
        self._queues[topic] = queues

    def check(self, api: BrokerApi, rebalance: RebalanceService | None) -> None:
        """One check (see the module doc). Caller: the services' timer."""
        listeners = self._listeners
        for topic in sorted(set(listeners) | set(self._subscriptions)):
            try:
                queues = api.fetch_subscribe_queues(topic)
            except ClientError as error:
                _log.info("route check of topic=%s failed: %s", topic, error)
                continue
            if rebalance is not None:
                rebalance.on_route(topic, queues)
            listener = listeners.get(topic)
            if listener is not None and queues != self._queues.get(topic):
                self._queues[topic] = queues
                listener(topic, set(queues))
