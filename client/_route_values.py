"""The values of a topic's route: which brokers hold its queues (:class:`TopicRoute`,
:class:`QueueSpec`), how to reach each (:class:`BrokerRoute`), and what the clients' caches key a
broker by (:class:`BrokerKey`, :func:`origin_of`); and how a list of endpoints is read
(:func:`parse_endpoints`). Immutable; made from ``QueryRoute`` answers by
:class:`client.route.RouteResolver`, which re-exports them, and read by producers, consumers
and the Spark connector.

Broker identity: a broker name is unique only within one cluster (every deployment's first
broker is ``broker-a``), so what clients key their caches by is a :class:`BrokerKey`: the name
and the ``origin`` it was looked up through (a resolver's endpoints, :func:`origin_of`). A
process that reads two clusters (a Spark worker reading one topic from two deployments) keeps
their brokers apart even when their names are the same. Within a key, the broker's
``broker_id`` (made at its store's first start and kept there, reported in its routes) tells a
restarted broker (the same id: the same store and offsets) from another broker started at the
same address (another id): a :class:`BrokerRoute` differs by it, so a session or a mapping of
the old one is not taken for the new one. The key leaves the id out on purpose: the members of
a broker group (``client.failover``) are one broker with several ids, and a name's session
follows its leader from member to member.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from aeromq.client.message import MessageQueue
from aeromq.common import BrokerUnavailableError, is_readable, is_writeable
from aeromq.proto import common_pb2

__all__ = ["BrokerKey", "BrokerRoute", "QueueSpec", "TopicRoute", "origin_of", "parse_endpoints"]


def parse_endpoints(endpoints: str | Sequence[str]) -> tuple[str, ...]:
    """``"a:1,b:2"``, ``"a:1;b:2"`` (RocketMQ's separator) or a list of such strings ->
    ``("a:1", "b:2")``: blanks dropped, each address once, in the order given."""
    given = [endpoints] if isinstance(endpoints, str) else list(endpoints)
    found = (a.strip() for part in given for a in re.split(r"[,;]", part))
    return tuple(dict.fromkeys(a for a in found if a))


def origin_of(endpoints: str | Sequence[str]) -> str:
    """The origin of the brokers looked up through ``endpoints``: the endpoints, parsed
    (:func:`parse_endpoints`), joined by ``,``."""
    return ",".join(parse_endpoints(endpoints))


class BrokerKey(NamedTuple):
    """A broker as the clients' caches key it: its name within the cluster reached through
    ``origin`` (see the module)."""

    origin: str
    broker_name: str


@dataclass(frozen=True, slots=True)
class BrokerRoute:
    """One broker of a route and its endpoints; ``origin``: the endpoints it was looked up
    through (:func:`origin_of`; "" for a fixed route), ``broker_id``: its store's id ("" from a
    broker that does not report one)."""

    cluster_name: str
    broker_name: str
    grpc_address: str
    ipc_channel: str
    ipc_stream_id: int
    udp_channel: str
    udp_stream_id: int
    aeron_dir: str
    hostname: str
    broker_id: str = ""
    origin: str = ""
    key: BrokerKey = field(init=False, repr=False, compare=False)
    """What caches key this broker by: its origin and name (see the module); made once, not
    at each look-up (a consumer's pull and a producer's send look it up)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", BrokerKey(self.origin, self.broker_name))

    @classmethod
    def from_proto(cls, data: common_pb2.BrokerData, origin: str = "") -> BrokerRoute:
        """The broker of a ``QueryRoute`` answer looked up through ``origin``, its endpoints
        flattened (an empty channel: the broker does not offer that ingress)."""
        return cls.of(data.cluster_name, data.broker_name, data.endpoints, origin)

    @classmethod
    def of(
        cls,
        cluster_name: str,
        broker_name: str,
        e: common_pb2.BrokerEndpoints,
        origin: str = "",
    ) -> BrokerRoute:
        """The broker ``broker_name`` reached at endpoints ``e`` (a route's, or the leader a
        ``NOT_LEADER`` answer names), looked up through ``origin``."""
        return cls(
            cluster_name=cluster_name,
            broker_name=broker_name,
            grpc_address=e.grpc_address,
            ipc_channel=e.ipc_channel,
            ipc_stream_id=e.ipc_stream_id,
            udp_channel=e.udp_channel,
            udp_stream_id=e.udp_stream_id,
            aeron_dir=e.aeron_dir,
            hostname=e.hostname,
            broker_id=e.broker_id,
            origin=origin,
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
    def from_proto(
        cls, route: common_pb2.TopicRouteData, fetched_ms: int, origin: str = ""
    ) -> TopicRoute:
        """The route of a ``QueryRoute`` answer received at ``fetched_ms`` (the resolver's
        monotonic clock) through ``origin``, its queue specs sorted by broker name."""
        brokers = {b.broker_name: BrokerRoute.from_proto(b, origin) for b in route.broker_datas}
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

    def with_member(self, member: BrokerRoute) -> TopicRoute:
        """This route with ``member`` serving its broker name (the route itself when it does
        not list that broker or already names that member)."""
        name = member.broker_name
        if self.brokers.get(name, member) == member:
            return self
        return replace(self, brokers={**self.brokers, name: member})

    def broker(self, broker_name: str) -> BrokerRoute:
        """The named broker of the route; raises :class:`BrokerUnavailableError` when the
        route does not list it (it left, or a queue names a broker the route lacks)."""
        found = self.brokers.get(broker_name)
        if found is None:
            raise BrokerUnavailableError(
                "broker not in the topic's route", topic=self.topic, broker_name=broker_name
            )
        return found
