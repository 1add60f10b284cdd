"""Where a topic's writable queues are and how to reach their brokers.

A :class:`RouteSource` answers ``route(topic)`` with a ``aeromq.client.route.TopicRoute``. The
producer's default is ``aeromq.client.route.RouteResolver`` over its endpoints (name servers or
brokers, over gRPC, cached); :class:`StaticRoute` is a fixed route for brokers you already know
(their ``BrokerEndpoints``), with no control plane at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from aeromq.client import BrokerUnavailableError
from aeromq.client.route import BrokerRoute, QueueSpec, TopicRoute
from aeromq.common import PERM_READ_WRITE
from aeromq.proto import common_pb2

__all__ = ["RouteSource", "StaticRoute"]


class RouteSource(Protocol):
    """What a producer asks for a topic's route (``Producer(route=...)``)."""

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        """The topic's route; :class:`~client.TopicNotFoundError` when no broker has it."""
        ...

    def invalidate(self, topic: str) -> None:
        """Forget a cached route (a broker refused or vanished)."""
        ...

    def close(self) -> None:
        """Release what the source holds (connections, caches); the producer's shutdown calls
        it."""
        ...


class StaticRoute:
    """A fixed route: every topic has ``queue_count`` readable and writable queues on each
    broker of ``brokers`` (broker name -> its endpoints)."""

    def __init__(self, brokers: Mapping[str, common_pb2.BrokerEndpoints], queue_count: int) -> None:
        if not brokers or queue_count <= 0:
            raise BrokerUnavailableError(
                "a static route needs a broker and queues", queue_count=queue_count
            )
        self._brokers = {
            name: BrokerRoute.from_proto(common_pb2.BrokerData(broker_name=name, endpoints=e))
            for name, e in brokers.items()
        }
        self._queues = tuple(
            QueueSpec(name, queue_count, queue_count, PERM_READ_WRITE)
            for name in sorted(self._brokers)
        )

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        """The same queues on the same brokers for every topic."""
        return TopicRoute(topic, self._brokers, self._queues, 0)

    def invalidate(self, topic: str) -> None:
        """Nothing to forget: the route is fixed."""
        return None

    def close(self) -> None:
        """Nothing to release."""
        return None
