"""Topic routes for producers and consumers: which brokers hold a topic's queues and how to
reach them, looked up over gRPC from a name server or a broker, and cached.

``RouteResolver(endpoints)`` takes one or more ``host:port`` addresses. Each is a name server
(``NameServer.QueryRoute``: routes merged across brokers) or a single broker
(``BrokerAdmin.QueryRoute``: the broker serves its own routes); ``kind="auto"`` asks the name
server service first and falls back to the broker's when the address does not serve it, then
remembers. An unreachable address is skipped for the next; a topic that does not exist raises
``TopicNotFoundError`` without trying further.

Routes are cached for ``ttl_ms`` (RocketMQ's clients refresh every 30 s); ``invalidate`` drops
one after a send failed so the next lookup refreshes it. ``broker_client(name)`` gives a cached
``GrpcClient`` to one broker of a route.

Caller: producers (write queues), consumers (read queues), the admin tool. Thread-safe.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Self

from aeromq.client._security import ClientTls, Credentials
from aeromq.client.grpc_client import DEFAULT_TIMEOUT_S, GrpcClient
from aeromq.client.message import MessageQueue
from aeromq.common import (
    BrokerUnavailableError,
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    NotSupportedError,
    TopicNotFoundError,
    is_readable,
    is_writeable,
)
from aeromq.proto import common_pb2

__all__ = ["DEFAULT_ROUTE_TTL_MS", "BrokerRoute", "QueueSpec", "RouteResolver", "TopicRoute"]

DEFAULT_ROUTE_TTL_MS: Final = 30_000

EndpointKind = Literal["auto", "namesrv", "broker"]


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class BrokerRoute:
    """One broker of a route and its endpoints."""

    cluster_name: str
    broker_name: str
    grpc_address: str
    ipc_channel: str
    ipc_stream_id: int
    udp_channel: str
    udp_stream_id: int
    aeron_dir: str
    hostname: str

    @classmethod
    def from_proto(cls, data: common_pb2.BrokerData) -> BrokerRoute:
        """The broker of a ``QueryRoute`` answer, its endpoints flattened (an empty channel:
        the broker does not offer that ingress)."""
        e = data.endpoints
        return cls(
            cluster_name=data.cluster_name,
            broker_name=data.broker_name,
            grpc_address=e.grpc_address,
            ipc_channel=e.ipc_channel,
            ipc_stream_id=e.ipc_stream_id,
            udp_channel=e.udp_channel,
            udp_stream_id=e.udp_stream_id,
            aeron_dir=e.aeron_dir,
            hostname=e.hostname,
        )

    def is_same_host(self, hostname: str | None = None) -> bool:
        """Whether the broker runs on this host (so its IPC ingress is reachable)."""
        return bool(self.ipc_channel) and self.hostname == (hostname or socket.gethostname())

    def ingress(self, prefer_ipc: bool | None = None) -> tuple[str, int]:
        """The (channel, stream id) to send on: IPC on the broker's host (or when
        ``prefer_ipc``), else UDP; ``BrokerUnavailableError`` when the broker offers neither."""
        use_ipc = self.is_same_host() if prefer_ipc is None else prefer_ipc
        if use_ipc and self.ipc_channel:
            return self.ipc_channel, self.ipc_stream_id
        if self.udp_channel:
            return self.udp_channel, self.udp_stream_id
        if self.ipc_channel:
            return self.ipc_channel, self.ipc_stream_id
        raise BrokerUnavailableError("broker has no ingress channel", broker_name=self.broker_name)


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A topic's queue counts and permissions on one broker."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int


@dataclass(frozen=True, slots=True)
class TopicRoute:
    """A topic's queues across brokers, as of ``fetched_ms`` (monotonic)."""

    topic: str
    brokers: dict[str, BrokerRoute]
    queues: tuple[QueueSpec, ...]
    fetched_ms: int

    @classmethod
    def from_proto(cls, route: common_pb2.TopicRouteData, fetched_ms: int) -> TopicRoute:
        """The route of a ``QueryRoute`` answer received at ``fetched_ms`` (the resolver's
        monotonic clock), its queue specs sorted by broker name."""
        brokers = {b.broker_name: BrokerRoute.from_proto(b) for b in route.broker_datas}
        queues = tuple(
            QueueSpec(q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm)
            for q in sorted(route.queue_datas, key=lambda q: q.broker_name)
        )
        return cls(route.topic, brokers, queues, fetched_ms)

    def write_queues(self) -> list[MessageQueue]:
        """Queues a producer may send to (writable brokers known to the route), sorted."""
        return [
            MessageQueue(self.topic, spec.broker_name, queue_id)
            for spec in self.queues
            if is_writeable(spec.perm) and spec.broker_name in self.brokers
            for queue_id in range(spec.write_queue_nums)
        ]

    def read_queues(self) -> list[MessageQueue]:
        """Queues a consumer may pull from (readable brokers known to the route), sorted."""
        return [
            MessageQueue(self.topic, spec.broker_name, queue_id)
            for spec in self.queues
            if is_readable(spec.perm) and spec.broker_name in self.brokers
            for queue_id in range(spec.read_queue_nums)
        ]

    def broker(self, broker_name: str) -> BrokerRoute:
        """The named broker of the route; raises :class:`BrokerUnavailableError` when the
        route does not list it (it left, or a queue names a broker the route lacks)."""
        found = self.brokers.get(broker_name)
        if found is None:
            raise BrokerUnavailableError(
                "broker not in the topic's route", topic=self.topic, broker_name=broker_name
            )
        return found


class RouteResolver:
    """Looks up and caches topic routes from ``endpoints`` (see the module docstring)."""

    def __init__(
        self,
        endpoints: str | Sequence[str],
        *,
        kind: EndpointKind = "auto",
        ttl_ms: int = DEFAULT_ROUTE_TTL_MS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        clock_ms: Callable[[], int] | None = None,
        credentials: Credentials | None = None,
        tls: ClientTls | None = None,
    ) -> None:
        self._credentials = credentials
        self._tls = tls
        addresses = [endpoints] if isinstance(endpoints, str) else list(endpoints)
        addresses = [a.strip() for part in addresses for a in part.split(";") if a.strip()]
        if not addresses:
            raise IllegalArgumentError("at least one endpoint is needed", endpoints=endpoints)
        if kind not in ("auto", "namesrv", "broker"):
            raise IllegalArgumentError("kind must be auto, namesrv or broker", kind=kind)
        if ttl_ms < 0:
            raise IllegalArgumentError("ttl_ms must be >= 0", ttl_ms=ttl_ms)
        self.endpoints = tuple(addresses)
        self.ttl_ms = ttl_ms
        self.timeout_s = timeout_s
        self._clock_ms = clock_ms or _monotonic_ms
        self._kinds: dict[str, EndpointKind] = dict.fromkeys(addresses, kind)
        self._clients: dict[str, GrpcClient] = {}
        self._routes: dict[str, TopicRoute] = {}
        self._lock = threading.Lock()
        self._closed = False

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        """The topic's route, from the cache unless older than ``ttl_ms`` or ``refresh``."""
        now_ms = self._clock_ms()
        cached = self._routes.get(topic)
        if cached is not None and not refresh and now_ms - cached.fetched_ms < self.ttl_ms:
            return cached
        route = TopicRoute.from_proto(self._fetch(topic), now_ms)
        if not route.queues:
            raise TopicNotFoundError("topic has no queues", topic=topic)
        with self._lock:
            self._routes[topic] = route
        return route

    def cached(self, topic: str) -> TopicRoute | None:
        """The topic's cached route if younger than ``ttl_ms``, else None: never fetches."""
        cached = self._routes.get(topic)
        if cached is None or self._clock_ms() - cached.fetched_ms >= self.ttl_ms:
            return None
        return cached

    def invalidate(self, topic: str) -> None:
        """Drop the topic's cached route, so the next :meth:`route` fetches it. Caller: a
        producer whose send to one of the route's brokers failed."""
        with self._lock:
            self._routes.pop(topic, None)

    def client(self, address: str) -> GrpcClient:
        """A cached client to ``address``."""
        with self._lock:
            if self._closed:
                raise IllegalStateError("route resolver is closed", endpoints=self.endpoints)
            found = self._clients.get(address)
            if found is None:
                found = self._clients[address] = GrpcClient(
                    address, timeout_s=self.timeout_s, credentials=self._credentials, tls=self._tls
                )
            return found

    def broker_client(self, topic: str, broker_name: str) -> GrpcClient:
        """A cached client to one broker of the topic's route."""
        return self.client(self.route(topic).broker(broker_name).grpc_address)

    def close(self) -> None:
        """Close the cached clients; :meth:`client` raises :class:`IllegalStateError`
        afterwards. Closing twice does nothing more."""
        with self._lock:
            self._closed = True
            clients = list(self._clients.values())
            self._clients.clear()
        for found in clients:
            found.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _fetch(self, topic: str) -> common_pb2.TopicRouteData:
        last: ClientError | None = None
        for address in self.endpoints:
            try:
                return self._fetch_from(address, topic)
            except (BrokerUnavailableError, NotSupportedError) as exc:
                last = exc  # try the next endpoint
            except TopicNotFoundError:
                raise
            except ClientError as exc:
                if not exc.retriable:
                    raise
                last = exc
        raise BrokerUnavailableError(
            "no endpoint answered the route query", topic=topic, endpoints=self.endpoints
        ) from last

    def _fetch_from(self, address: str, topic: str) -> common_pb2.TopicRouteData:
        grpc_client = self.client(address)
        kind = self._kinds[address]
        if kind == "broker":
            return grpc_client.query_route(topic)
        try:
            route = grpc_client.query_route(topic, namesrv=True)
        except NotSupportedError:
            if kind == "namesrv":
                raise
            self._kinds[address] = "broker"
            return grpc_client.query_route(topic)
        self._kinds[address] = "namesrv"
        return route
