"""Where a topic's writable queues are and how to reach their brokers.

A :class:`RouteSource` answers ``route(topic) -> TopicRoute``. :class:`GrpcRouteSource` asks
brokers or name servers (``QueryRoute`` over gRPC, the first address that answers; name servers
merge every broker's queues) and caches each route for ``refresh_interval_ms``;
:class:`StaticRoute` is a fixed route for a broker you already know (its ``BrokerEndpoints``),
with no control plane at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from client import BrokerUnavailableError, ClientError, MessageQueue, TopicNotFoundError
from client.grpc_client import GrpcClient
from proto import common_pb2

__all__ = ["GrpcRouteSource", "RouteSource", "StaticRoute", "TopicRoute", "route_from_proto"]

_PERM_WRITE = 0x2


@dataclass(frozen=True)
class TopicRoute:
    """A topic's writable queues (sorted) and the endpoints of the brokers holding them."""

    topic: str
    queues: tuple[MessageQueue, ...]
    brokers: Mapping[str, common_pb2.BrokerEndpoints]


class RouteSource(Protocol):
    def route(self, topic: str) -> TopicRoute:
        """The topic's route; :class:`~client.TopicNotFoundError` when no broker has it."""
        ...

    def invalidate(self, topic: str) -> None:
        """Forget a cached route (a broker refused or vanished)."""
        ...

    def close(self) -> None: ...


def route_from_proto(route: common_pb2.TopicRouteData) -> TopicRoute:
    """The writable queues of a ``TopicRouteData``."""
    brokers = {data.broker_name: data.endpoints for data in route.broker_datas}
    queues = sorted(
        MessageQueue(route.topic, data.broker_name, queue_id)
        for data in route.queue_datas
        if data.perm & _PERM_WRITE and data.broker_name in brokers
        for queue_id in range(data.write_queue_nums)
    )
    if not queues:
        raise TopicNotFoundError("no writable queue for the topic", topic=route.topic)
    return TopicRoute(route.topic, tuple(queues), brokers)


class GrpcRouteSource:
    """Routes from ``QueryRoute`` on ``addresses`` (brokers, or name servers with
    ``namesrv``), cached for ``refresh_interval_ms``."""

    def __init__(
        self,
        addresses: Sequence[str],
        *,
        namesrv: bool = False,
        refresh_interval_ms: int = 30_000,
        timeout_s: float = 3.0,
    ) -> None:
        if not addresses:
            raise BrokerUnavailableError("no endpoint to ask for routes")
        self._clients = [GrpcClient(address, timeout_s=timeout_s) for address in addresses]
        self._namesrv = namesrv
        self._refresh_ns = refresh_interval_ms * 1_000_000
        self._cache: dict[str, tuple[int, TopicRoute]] = {}
        self._lock = threading.Lock()

    def route(self, topic: str) -> TopicRoute:
        cached = self._cache.get(topic)
        now_ns = time.monotonic_ns()
        if cached is not None and now_ns - cached[0] < self._refresh_ns:
            return cached[1]
        with self._lock:
            error: ClientError | None = None
            for client in self._clients:
                try:
                    found = route_from_proto(client.query_route(topic, namesrv=self._namesrv))
                except TopicNotFoundError:
                    raise
                except ClientError as exc:
                    error = exc
                    continue
                self._cache[topic] = (now_ns, found)
                return found
            assert error is not None
            raise error

    def invalidate(self, topic: str) -> None:
        self._cache.pop(topic, None)

    def close(self) -> None:
        for client in self._clients:
            client.close()


class StaticRoute:
    """A fixed route: every topic has ``queue_count`` writable queues on each broker of
    ``brokers`` (broker name -> endpoints)."""

    def __init__(self, brokers: Mapping[str, common_pb2.BrokerEndpoints], queue_count: int) -> None:
        if not brokers or queue_count <= 0:
            raise BrokerUnavailableError(
                "a static route needs a broker and queues", queue_count=queue_count
            )
        self._brokers = dict(brokers)
        self._queue_count = queue_count

    def route(self, topic: str) -> TopicRoute:
        queues = sorted(
            MessageQueue(topic, name, queue_id)
            for name in self._brokers
            for queue_id in range(self._queue_count)
        )
        return TopicRoute(topic, tuple(queues), self._brokers)

    def invalidate(self, topic: str) -> None:
        return None

    def close(self) -> None:
        return None
