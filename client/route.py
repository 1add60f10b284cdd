"""Topic routes for producers and consumers: which brokers hold a topic's queues and how to
reach them, looked up over gRPC from a name server or a broker, and cached.

``RouteResolver(endpoints)`` takes one or more ``host:port`` addresses (a list, or one string
separated by ``,`` or ``;``: :func:`parse_endpoints`). Each is a name server
(``NameServer.QueryRoute``: routes merged across brokers) or a single broker, or a member of a
broker group (``BrokerAdmin.QueryRoute``: the broker serves its own routes; any member of a
group answers with the group's current leader); ``kind="auto"`` asks the name server service
first and falls back to the broker's when the address does not serve it, then remembers. An
unreachable address is skipped for the next, and the one that answered last is asked first next
time. A topic raises ``TopicNotFoundError`` once every address answered that it does not exist:
a group's follower does not know a topic until the topic's record reaches it through the log,
so an address that does not know it is skipped for the next like one that does not answer (one
query per address for a topic that does not exist, no wait).

Routes are cached for ``ttl_ms`` (RocketMQ's clients refresh every 30 s); ``invalidate`` drops
one after a send failed so the next lookup refreshes it. ``broker_client(name)`` gives a cached
``GrpcClient`` to one broker of a route.

The values of a route (:class:`TopicRoute`, :class:`BrokerRoute`, :class:`BrokerKey`) are in
:mod:`client._route_values`, re-exported here.

Broker groups (``client.failover``): the resolver keeps each broker name's current member (the
route cache keyed by broker name), learned from every route it fetches and from the leader a
``NOT_LEADER`` answer names; every cached route naming that broker names its current member.
:meth:`RouteResolver.follow_leader` is what a request that failed on a member calls: the hint
at once (no query), else the member another request already moved to, else one route query
(one per broker name at a time, and at most one per :data:`FOLLOW_QUERY_INTERVAL_MS`: a
failover refreshes once, not once per request). :meth:`RouteResolver.call_leader` runs a gRPC
call on a broker's current member, following the leader until its deadline.

Caller: producers (write queues), consumers (read queues), the admin tool. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Final, Literal, Self, TypeVar

from aeromq.client._route_values import (
    BrokerKey,
    BrokerRoute,
    QueueSpec,
    TopicRoute,
    origin_of,
    parse_endpoints,
)
from aeromq.client._security import ClientTls, Credentials
from aeromq.client.failover import Backoff, leader_hint, should_follow_leader
from aeromq.client.grpc_client import DEFAULT_TIMEOUT_S, GrpcClient
from aeromq.common import (
    BrokerUnavailableError,
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    NotSupportedError,
    TopicNotFoundError,
)
from aeromq.proto import common_pb2

__all__ = [
    "DEFAULT_ROUTE_TTL_MS",
    "FOLLOW_QUERY_INTERVAL_MS",
    "MAX_HOPS_WITHOUT_BACKOFF",
    "BrokerKey",
    "BrokerRoute",
    "QueueSpec",
    "RouteResolver",
    "TopicRoute",
    "origin_of",
    "parse_endpoints",
]

DEFAULT_ROUTE_TTL_MS: Final = 30_000
FOLLOW_QUERY_INTERVAL_MS: Final = 50
"""At most one route query per broker name this often while requests fail on its member and
no new one is known (each of them backs off meanwhile)."""

MAX_HOPS_WITHOUT_BACKOFF: Final = 2
"""A request follows this many new members at once; past that it backs off before each."""

_T = TypeVar("_T")

EndpointKind = Literal["auto", "namesrv", "broker"]


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _answered(error: BrokerUnavailableError) -> bool:
    """Whether ``error`` is an answer (a refusal in a response's status), not a call that
    failed on its way (gRPC's own failures carry ``grpc_code``)."""
    return "grpc_code" not in error.values


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
        addresses = parse_endpoints(endpoints)
        if not addresses:
            raise IllegalArgumentError("at least one endpoint is needed", endpoints=endpoints)
        if kind not in ("auto", "namesrv", "broker"):
            raise IllegalArgumentError("kind must be auto, namesrv or broker", kind=kind)
        if ttl_ms < 0:
            raise IllegalArgumentError("ttl_ms must be >= 0", ttl_ms=ttl_ms)
        self.endpoints = addresses
        self.origin = origin_of(addresses)
        """The origin of the brokers of its routes (:class:`BrokerKey`)."""
        self.ttl_ms = ttl_ms
        self.timeout_s = timeout_s
        self._clock_ms = clock_ms or _monotonic_ms
        self._kinds: dict[str, EndpointKind] = dict.fromkeys(addresses, kind)
        self._clients: dict[str, GrpcClient] = {}
        self._routes: dict[str, TopicRoute] = {}
        self._members: dict[str, BrokerRoute] = {}
        """Each broker name's current member (the route cache keyed by broker name)."""
        self._follow_locks: dict[str, threading.Lock] = {}
        self._queried_ms: dict[str, int] = {}
        """When :meth:`follow_leader` last queried a route for each broker name."""
        self._first = 0  # the endpoint that answered last: asked first
        self._lock = threading.Lock()
        self._closed = False

    def route(
        self, topic: str, *, refresh: bool = False, timeout_s: float | None = None
    ) -> TopicRoute:
        """The topic's route, from the cache unless older than ``ttl_ms`` or ``refresh``
        (``timeout_s``: each endpoint's query, default the resolver's). An expired route is
        still given while the endpoints that answer know no leader of a group (an election):
        refreshing it then would leave callers with none."""
        now_ms = self._clock_ms()
        cached = self._routes.get(topic)
        if cached is not None and not refresh and now_ms - cached.fetched_ms < self.ttl_ms:
            return cached
        try:
            data = self._fetch(topic, timeout_s)
        except BrokerUnavailableError as exc:
            if cached is None or refresh or not exc.values.get("leaderless"):
                raise
            return cached  # a group electing its leader: the last route until it has one
        route = TopicRoute.from_proto(data, now_ms, self.origin)
        if not route.queues:
            raise TopicNotFoundError("topic has no queues", topic=topic)
        with self._lock:
            self._routes[topic] = route
            for member in route.brokers.values():
                self._note_member(member)
        return route

    def cached(self, topic: str) -> TopicRoute | None:
        """The topic's cached route if younger than ``ttl_ms``, else None: never fetches."""
        cached = self._routes.get(topic)
        if cached is None:
            return None
        clock_ms = self._clock_ms  # the default's inline: a call fewer a pull
        now_ms = time.monotonic_ns() // 1_000_000 if clock_ms is _monotonic_ms else clock_ms()
        if now_ms - cached.fetched_ms >= self.ttl_ms:
            return None
        return cached

    def last(self, topic: str) -> TopicRoute | None:
        """The topic's cached route whatever its age, or None: never fetches. Caller: a
        producer that sends on its last route while a fetch of the next one runs elsewhere."""
        return self._routes.get(topic)

    def invalidate(self, topic: str) -> None:
        """Drop the topic's cached route, so the next :meth:`route` fetches it. Caller: a
        producer whose send to one of the route's brokers failed."""
        with self._lock:
            self._routes.pop(topic, None)

    def member(self, broker_name: str) -> BrokerRoute | None:
        """The broker's current member as last learned (a route, or a leader named), or None."""
        return self._members.get(broker_name)

    def follow_leader(
        self,
        topic: str,
        failed: BrokerRoute,
        leader: common_pb2.BrokerEndpoints | None = None,
        *,
        timeout_s: float | None = None,
    ) -> BrokerRoute:
        """The member of ``failed``'s broker to try next, after a request to ``failed`` failed
        with an error of :func:`~client.failover.should_follow_leader`; ``failed`` itself when no
        other is known yet (the caller backs off and asks again).

        ``leader`` (the hint of a ``NOT_LEADER`` answer) is taken at once, without a query.
        Otherwise the member another request already moved to, else the topic's route is
        queried from any endpoint that answers (``timeout_s`` each): one query per broker name
        at a time and per :data:`FOLLOW_QUERY_INTERVAL_MS`; ``failed`` too while the endpoints
        that answer know no leader (an election). Raises what the query raises when no endpoint
        answers (:class:`BrokerUnavailableError`) or the topic is gone.

        Caller: producers, consumers and the Spark connector, on a failed request. Affects: the
        broker's member in every cached route."""
        name = failed.broker_name
        if (
            leader is not None
            and leader.grpc_address
            and leader.grpc_address != failed.grpc_address
        ):
            member = BrokerRoute.of(failed.cluster_name, name, leader, failed.origin)
            with self._lock:
                self._note_member(member)
            return member
        current = self._members.get(name)
        if current is not None and current != failed:
            return current
        with self._lock:
            follow_lock = self._follow_locks.get(name)
            if follow_lock is None:
                follow_lock = self._follow_locks[name] = threading.Lock()
        with follow_lock:
            current = self._members.get(name)
            if current is not None and current != failed:
                return current  # another request's query found it meanwhile
            now_ms = self._clock_ms()
            queried_ms = self._queried_ms.get(name)
            if queried_ms is not None and now_ms - queried_ms < FOLLOW_QUERY_INTERVAL_MS:
                return failed
            self._queried_ms[name] = now_ms
            try:
                route = self.route(topic, refresh=True, timeout_s=timeout_s)
            except BrokerUnavailableError as exc:
                if exc.values.get("leaderless"):
                    return failed  # members answer, none knows a leader: an election
                raise
            return route.brokers.get(name, failed)  # not listed: no leader now

    def call_leader(
        self,
        topic: str,
        broker_name: str,
        call: Callable[[GrpcClient], _T],
        *,
        timeout_s: float | None = None,
    ) -> _T:
        """``call(client)`` with a gRPC client of the broker's current member, following its
        leader (:meth:`follow_leader`, backing off while none is known) until ``timeout_s``
        (default the resolver's) has passed. A member that does not know the topic is treated
        as one whose metadata lags the leader's (:func:`~client.failover.should_follow_leader`)
        until the route query finds no endpoint that knows it. Raises the call's error when it
        is not one to follow the leader after, when no endpoint answers the route query (a
        single broker that is down fails at once), when no endpoint knows the topic, or when
        time is up.

        Caller: a consumer's control calls (offsets, queue grants), the Spark connector's."""
        deadline_ns = time.monotonic_ns() + int((timeout_s or self.timeout_s) * 1e9)
        member = self.route(topic).broker(broker_name)
        backoff = Backoff()
        hops = 0
        while True:
            try:
                return call(self.client(member.grpc_address))
            except ClientError as error:
                if not should_follow_leader(error):
                    raise
                remaining_s = (deadline_ns - time.monotonic_ns()) / 1e9
                if remaining_s <= 0:
                    raise
                try:
                    moved = self.follow_leader(
                        topic, member, leader_hint(error), timeout_s=remaining_s
                    )
                except ClientError:
                    raise error from None
                hops += moved != member
                # no new member, or hints that keep moving (members that disagree for a
                # moment): wait before the next try
                if (moved == member or hops > MAX_HOPS_WITHOUT_BACKOFF) and not backoff.sleep(
                    deadline_ns
                ):
                    raise
                member = moved

    def _note_member(self, member: BrokerRoute) -> None:
        """``member`` serves its broker name from now on: every cached route says so. Under
        the lock."""
        name = member.broker_name
        known = self._members.get(name)
        if known == member:
            return
        self._members[name] = member
        if known is None:
            return
        for topic, route in list(self._routes.items()):
            moved = route.with_member(member)
            if moved is not route:
                self._routes[topic] = moved

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

    def _fetch(self, topic: str, timeout_s: float | None) -> common_pb2.TopicRouteData:
        """The topic's route from the first endpoint that answers with one.

        ``TopicNotFoundError`` only when every endpoint answered so: a group's follower learns
        a new topic when its record reaches it through the log, and answers TopicNotFound until
        then, so one member's answer is not the leader's. When no endpoint answers with a
        route, :class:`BrokerUnavailableError` whose ``leaderless`` value says whether an
        endpoint answered that it cannot serve the route now (a broker group electing its
        leader, or members that do not know the topic while the others, the leader among them,
        do not answer) rather than not answering at all."""
        last: ClientError | None = None
        leaderless = False
        not_found: list[TopicNotFoundError] = []
        addresses = self.endpoints
        first = self._first
        for index in (*range(first, len(addresses)), *range(first)):
            try:
                route = self._fetch_from(addresses[index], topic, timeout_s)
            except (BrokerUnavailableError, NotSupportedError) as exc:
                last = exc  # try the next endpoint
                leaderless |= isinstance(exc, BrokerUnavailableError) and _answered(exc)
                continue
            except TopicNotFoundError as exc:
                not_found.append(exc)  # a member whose metadata lags: ask the next
                continue
            except ClientError as exc:
                if not exc.retriable:
                    raise
                last = exc
                continue
            self._first = index
            return route
        if not_found and len(not_found) == len(addresses):
            raise not_found[0]  # every endpoint answered, the leader among them: no such topic
        raise BrokerUnavailableError(
            "no endpoint answered the route query",
            topic=topic,
            endpoints=self.endpoints,
            leaderless=leaderless or bool(not_found),
            not_found_on=len(not_found),
        ) from last

    def _fetch_from(
        self, address: str, topic: str, timeout_s: float | None
    ) -> common_pb2.TopicRouteData:
        grpc_client = self.client(address)
        kind = self._kinds[address]
        if kind == "broker":
            return grpc_client.query_route(topic, timeout_s=timeout_s)
        try:
            route = grpc_client.query_route(topic, namesrv=True, timeout_s=timeout_s)
        except NotSupportedError:
            if kind == "namesrv":
                raise
            self._kinds[address] = "broker"
            return grpc_client.query_route(topic, timeout_s=timeout_s)
        self._kinds[address] = "namesrv"
        return route
