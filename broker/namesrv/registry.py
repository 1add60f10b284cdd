"""The name server's table of brokers and their topics (RocketMQ's ``RouteInfoManager``).

A broker registers with its cluster, name, endpoints, every topic it holds and a data version;
a registration replaces what was known of that broker. It then heartbeats; the answer says
whether the name server wants a fresh registration (it does not know the broker, e.g. after a
restart or a drop, or holds an older data version). A broker not heard for its heartbeat
timeout is dropped by ``scan_expired``. A topic's route merges the queues of every broker that
holds it.

No I/O; the clock is injected. Thread-safe. Caller: the name server's processor.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aeromq.broker._errors import InvalidArgumentError, UnknownTopicError
from aeromq.proto import common_pb2, namesrv_pb2

__all__ = ["RouteRegistry"]

_log = logging.getLogger(__name__)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class _Broker:
    cluster_name: str
    broker_name: str
    endpoints: common_pb2.BrokerEndpoints
    topics: dict[str, common_pb2.TopicConfig]
    data_version: int
    heartbeat_timeout_ms: int
    registered_ms: int
    last_heartbeat_ms: int = field(default=0)


class RouteRegistry:
    """Registered brokers; ``default_heartbeat_timeout_ms`` applies when a registration
    does not name its own timeout."""

    def __init__(
        self, default_heartbeat_timeout_ms: int, clock_ms: Callable[[], int] | None = None
    ) -> None:
        if default_heartbeat_timeout_ms <= 0:
            raise InvalidArgumentError(
                "heartbeat timeout must be > 0", timeout_ms=default_heartbeat_timeout_ms
            )
        self.default_heartbeat_timeout_ms = default_heartbeat_timeout_ms
        self._clock_ms = clock_ms or _wall_clock_ms
        self._brokers: dict[str, _Broker] = {}
        self._lock = threading.Lock()

    def register(self, request: namesrv_pb2.RegisterBrokerRequest) -> None:
        """Record the broker, its endpoints and topics (replacing what was known of it) as
        heard now, with its heartbeat timeout (0: the default). Raises
        :class:`InvalidArgumentError` without a cluster or broker name. Caller: the
        ``RegisterBroker`` RPC."""
        if not request.broker_name or not request.cluster_name:
            raise InvalidArgumentError(
                "a registration needs a cluster and a broker name",
                cluster_name=request.cluster_name,
                broker_name=request.broker_name,
            )
        now_ms = self._clock_ms()
        broker = _Broker(
            cluster_name=request.cluster_name,
            broker_name=request.broker_name,
            endpoints=request.endpoints,
            topics={t.topic_name: t for t in request.topics},
            data_version=request.data_version,
            heartbeat_timeout_ms=request.heartbeat_timeout_ms or self.default_heartbeat_timeout_ms,
            registered_ms=now_ms,
            last_heartbeat_ms=now_ms,
        )
        with self._lock:
            known = self._brokers.get(request.broker_name)
            if known is not None:
                broker.registered_ms = known.registered_ms
            self._brokers[request.broker_name] = broker
        if known is None:
            _log.info(
                "broker registered: cluster=%s broker=%s grpc=%s topics=%d",
                request.cluster_name,
                request.broker_name,
                request.endpoints.grpc_address,
                len(request.topics),
            )

    def unregister(self, cluster_name: str, broker_name: str) -> bool:
        """Drop the broker from every route at once; False when the registry does not know
        it in that cluster. Caller: the ``UnregisterBroker`` RPC (a broker shutting down)."""
        with self._lock:
            known = self._brokers.get(broker_name)
            if known is None or known.cluster_name != cluster_name:
                return False
            del self._brokers[broker_name]
        _log.info("broker unregistered: cluster=%s broker=%s", cluster_name, broker_name)
        return True

    def heartbeat(self, cluster_name: str, broker_name: str, data_version: int) -> bool:
        """Renew the broker; True when it should register again."""
        with self._lock:
            known = self._brokers.get(broker_name)
            if known is None or known.cluster_name != cluster_name:
                return True
            known.last_heartbeat_ms = self._clock_ms()
            return known.data_version != data_version

    def scan_expired(self, now_ms: int | None = None) -> list[str]:
        """Drop every broker silent for longer than its heartbeat timeout; their names."""
        now = self._clock_ms() if now_ms is None else now_ms
        with self._lock:
            expired = [
                b
                for b in self._brokers.values()
                if now - b.last_heartbeat_ms > b.heartbeat_timeout_ms
            ]
            for broker in expired:
                del self._brokers[broker.broker_name]
        for broker in expired:
            _log.warning(
                "broker dropped: cluster=%s broker=%s silent_ms=%d",
                broker.cluster_name,
                broker.broker_name,
                now - broker.last_heartbeat_ms,
            )
        return [b.broker_name for b in expired]

    def query_route(self, topic: str) -> common_pb2.TopicRouteData:
        """The topic's queues on every broker holding it; ``UnknownTopicError`` when none."""
        with self._lock:
            holders = sorted(
                (b for b in self._brokers.values() if topic in b.topics),
                key=lambda b: b.broker_name,
            )
            route = common_pb2.TopicRouteData(topic=topic)
            for broker in holders:
                config = broker.topics[topic]
                route.queue_datas.append(
                    common_pb2.QueueData(
                        broker_name=broker.broker_name,
                        read_queue_nums=config.read_queue_nums,
                        write_queue_nums=config.write_queue_nums,
                        perm=config.perm,
                        topic_sys_flag=config.topic_sys_flag,
                    )
                )
                route.broker_datas.append(
                    common_pb2.BrokerData(
                        cluster_name=broker.cluster_name,
                        broker_name=broker.broker_name,
                        endpoints=broker.endpoints,
                    )
                )
        if not holders:
            raise UnknownTopicError("no broker holds the topic", topic=topic)
        return route

    def list_clusters(self) -> list[common_pb2.ClusterInfo]:
        """Every cluster with its live brokers (endpoints, last heartbeat, topic count),
        clusters and brokers sorted by name."""
        with self._lock:
            brokers = sorted(self._brokers.values(), key=lambda b: (b.cluster_name, b.broker_name))
            clusters: dict[str, common_pb2.ClusterInfo] = {}
            for broker in brokers:
                info = clusters.setdefault(
                    broker.cluster_name, common_pb2.ClusterInfo(cluster_name=broker.cluster_name)
                )
                info.brokers.append(
                    common_pb2.BrokerInfo(
                        broker_name=broker.broker_name,
                        endpoints=broker.endpoints,
                        last_heartbeat_ms=broker.last_heartbeat_ms,
                        topic_count=len(broker.topics),
                        registered_ms=broker.registered_ms,
                    )
                )
        return [clusters[name] for name in sorted(clusters)]

    def list_topics(self) -> list[common_pb2.TopicConfig]:
        """Every topic of every broker, one entry per topic: queue counts summed over the
        brokers that hold it, permissions or'ed."""
        merged: dict[str, common_pb2.TopicConfig] = {}
        with self._lock:
            for broker in self._brokers.values():
                for name, config in broker.topics.items():
                    found = merged.get(name)
                    if found is None:
                        found = merged[name] = common_pb2.TopicConfig()
                        found.CopyFrom(config)
                        continue
                    found.read_queue_nums += config.read_queue_nums
                    found.write_queue_nums += config.write_queue_nums
                    found.perm |= config.perm
        return [merged[name] for name in sorted(merged)]

    def broker_names(self) -> list[str]:
        """The names of the live brokers, sorted."""
        with self._lock:
            return sorted(self._brokers)
