"""``QueueRouter``: the queue each send goes to, from its topic's route.

It asks the producer's :class:`~producer.RouteSource` (``_route.py``) for a topic's route, keeps
the route's writable queues (computed once per route object) and picks one: the send's queue,
its selector's choice, or round robin avoiding the broker that just failed (``_selector.py``);
a group of coalesced async sends goes to the queue least sent to.

Refresh ahead: a route the producer's own resolver caches for ``ttl_ms`` is fetched again in the
background (:meth:`QueueRouter.refresh_ahead`, on the producer's retry thread) by the first send
that finds it past three quarters of its TTL, so that no send waits for the gRPC round trip
(2-3 ms) of an expired route. A send that finds it expired (a producer quiet for longer than
the TTL) goes on the last route too while the fetch runs, as RocketMQ's and Kafka's producers
send on their last route between refreshes: a route gone wrong meanwhile (a broker gone, a
group's leader moved) fails that send, which drops the route (``invalidate``), and its retry
fetches a new one. Only a topic with no route yet, or one dropped, is fetched on the send's
thread.

Caller: the façade (``Producer.start``, ``fetch_publish_queues``, ``send_oneway``), the sync
attempts (``SendPath.attempt_sync``) and the async sends (``_async_sends.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from aeromq.client import (
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    MessageQueue,
    TopicNotFoundError,
)
from aeromq.client.route import TopicRoute
from aeromq.producer._attempt import Attempt
from aeromq.producer._route import RouteSource
from aeromq.producer._selector import LeastSentSelector, RoundRobinSelector, select_avoiding

__all__ = ["QueueRouter"]

_log = logging.getLogger(__name__)

RefreshRunner = Callable[[Callable[[], None]], object]
"""Runs a route refresh off the send's thread (the producer's retry thread)."""
LastRoute = Callable[[str], TopicRoute | None]
"""A topic's cached route whatever its age, or None (``RouteResolver.last``)."""


class QueueRouter:
    """Routes and queue choice of one producer (see module). ``source`` is None until the
    producer starts (then its ``RouteResolver``) unless the producer was given a route."""

    __slots__ = (
        "_ahead_ms",
        "_last",
        "_least_sent",
        "_queue_cache",
        "_refreshing",
        "_round_robin",
        "_runner",
        "group",
        "source",
    )

    def __init__(self, group: str, source: RouteSource | None) -> None:
        self.group = group
        self.source = source
        self._round_robin = RoundRobinSelector()
        self._least_sent: dict[str, LeastSentSelector] = {}
        self._queue_cache: dict[str, tuple[TopicRoute, list[MessageQueue]]] = {}
        self._ahead_ms = 0
        """A route this old (ms since fetched) is refreshed in the background; 0: never."""
        self._runner: RefreshRunner | None = None
        self._last: LastRoute | None = None
        self._refreshing: set[str] = set()

    def refresh_ahead(self, ttl_ms: int, runner: RefreshRunner, last: LastRoute) -> None:
        """Refresh a topic's route through ``runner`` once it is past three quarters of
        ``ttl_ms`` (the source's cache TTL), sending on ``last``'s route meanwhile, expired
        or not (see module). Caller: ``SendPath.start``, for the resolver it made."""
        self._ahead_ms = ttl_ms - ttl_ms // 4
        self._runner = runner
        self._last = last

    def route(self, topic: str) -> TopicRoute:
        """The topic's route from the source. Raises IllegalStateError before the start."""
        routes = self.source
        if routes is None:
            raise IllegalStateError("producer not started", group=self.group)
        last = self._last
        route = None if last is None else last(topic)
        if route is None:
            route = routes.route(topic)
        ahead_ms = self._ahead_ms
        if ahead_ms and time.monotonic_ns() // 1_000_000 - route.fetched_ms >= ahead_ms:
            self._refresh(routes, topic)
        return route

    def _refresh(self, routes: RouteSource, topic: str) -> None:
        """Fetch ``topic``'s route again on the runner, once at a time per topic."""
        runner = self._runner
        if runner is None or topic in self._refreshing:
            return
        self._refreshing.add(topic)

        def refresh() -> None:
            try:
                routes.route(topic, refresh=True)
            except ClientError as exc:  # sends go on the last route; a failed one drops it
                _log.debug("route refresh failed: topic=%s %s", topic, exc)
            finally:
                self._refreshing.discard(topic)

        try:
            runner(refresh)
        except RuntimeError:  # the runner shut down with the producer
            self._refreshing.discard(topic)

    def write_queues(self, route: TopicRoute) -> list[MessageQueue]:
        """The route's writable queues, computed once per route object. Raises
        TopicNotFoundError when it has none."""
        cached = self._queue_cache.get(route.topic)
        if cached is not None and cached[0] is route:
            return cached[1]
        queues = route.write_queues()
        if not queues:
            raise TopicNotFoundError("no writable queue for the topic", topic=route.topic)
        self._queue_cache[route.topic] = (route, queues)
        return queues

    def target(self, attempt: Attempt) -> tuple[TopicRoute, MessageQueue]:
        """The route and queue of ``attempt``'s next try: its ``retry_queue`` (once), its queue,
        its selector's, or the next round robin, avoiding its ``last_broker`` when another broker
        has queues.

        Caller: ``SendPath.attempt_sync``, ``LoneSends.submit``, ``Producer.send_oneway``.
        Affects: the round robin counter."""
        topic = attempt.messages[0].topic
        last = self._last  # route()'s common case, without its call: the cached route, fresh
        route = None if last is None else last(topic)
        ahead_ms = self._ahead_ms
        if route is None or (
            ahead_ms and time.monotonic_ns() // 1_000_000 - route.fetched_ms >= ahead_ms
        ):
            route = self.route(topic)
        if attempt.retry_queue is not None:  # the same queue again (a group's leader moved)
            target, attempt.retry_queue = attempt.retry_queue, None
        elif attempt.last_broker is None and attempt.queue is None and attempt.selector is None:
            # a first try of no queue in particular (the common send): the queues cached for
            # this route and the round robin's next, as write_queues and select_avoiding give
            # them, without their three Python calls
            cached = self._queue_cache.get(topic)
            queues = (
                cached[1] if cached is not None and cached[0] is route else self.write_queues(route)
            )
            target = queues[next(self._round_robin.counter) % len(queues)]
        elif attempt.queue is not None:
            target = attempt.queue
        elif attempt.selector is not None:
            target = attempt.selector(self.write_queues(route))
        else:
            target = select_avoiding(
                self._round_robin,
                self.write_queues(route),
                attempt.messages[0],
                attempt.last_broker,
            )
        if target.broker_name not in route.brokers:
            raise IllegalArgumentError(
                "the queue's broker is not in the topic's route", queue=target
            )
        return route, target

    def group_target(self, topic: str, count: int) -> tuple[TopicRoute, MessageQueue]:
        """The queue of a group of ``count`` messages: the least sent to (see
        ``LeastSentSelector``), groups being of many sizes.

        Caller: ``AsyncSends.submit_group``. Affects: the topic's sent counts."""
        route = self.route(topic)
        selector = self._least_sent.get(topic)
        if selector is None:
            selector = self._least_sent.setdefault(topic, LeastSentSelector())
        target = selector.pick(self.write_queues(route), count)
        if target.broker_name not in route.brokers:
            raise IllegalArgumentError(
                "the queue's broker is not in the topic's route", queue=target
            )
        return route, target
