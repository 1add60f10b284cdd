"""Routes served by a broker itself: where a topic's queues are and how to reach this broker
(RocketMQ's ``GET_ROUTEINFO_BY_TOPIC`` answered without a name server), and the broker's own
cluster listing.

``BrokerIdentity`` is who this broker is (cluster, name) and its endpoints: gRPC address,
IPC and UDP ingress channels and streams, the aeron dir and host name for same-host clients.
The endpoints are known only once the broker has bound its ports, so the broker sets them with
``update_endpoints`` after start; readers always see one whole set.

Caller: the admin facade (``QueryRoute``, ``ListClusters``) and the name server registrar
(``registration``). Reads only.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from aeromq.broker._errors import BrokerStateError, UnknownTopicError
from aeromq.broker.processor.leadership import Leadership
from aeromq.broker.processor.topics import TopicProcessor, topic_config_to_proto
from aeromq.broker.store import TopicConfig
from aeromq.proto import common_pb2

__all__ = ["BrokerIdentity", "RouteProcessor", "queue_data_of"]


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class BrokerIdentity:
    """This broker's cluster and name, start time, and current endpoints."""

    def __init__(
        self,
        cluster_name: str,
        broker_name: str,
        endpoints: common_pb2.BrokerEndpoints | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.cluster_name = cluster_name
        self.broker_name = broker_name
        self._clock_ms = clock_ms or _wall_clock_ms
        self.start_time_ms = self._clock_ms()
        self._endpoints = self._complete(endpoints or common_pb2.BrokerEndpoints())

    @property
    def endpoints(self) -> common_pb2.BrokerEndpoints:
        """A copy of the current endpoints (callers may keep or change it)."""
        copy = common_pb2.BrokerEndpoints()
        copy.CopyFrom(self._endpoints)
        return copy

    def update_endpoints(self, endpoints: common_pb2.BrokerEndpoints) -> None:
        """Publish the endpoints the broker bound (whole; the host name is filled in)."""
        self._endpoints = self._complete(endpoints)

    def now_ms(self) -> int:
        return self._clock_ms()

    def broker_data(self) -> common_pb2.BrokerData:
        return common_pb2.BrokerData(
            cluster_name=self.cluster_name,
            broker_name=self.broker_name,
            endpoints=self._endpoints,
        )

    @staticmethod
    def _complete(endpoints: common_pb2.BrokerEndpoints) -> common_pb2.BrokerEndpoints:
        done = common_pb2.BrokerEndpoints()
        done.CopyFrom(endpoints)
        if not done.hostname:
            done.hostname = socket.gethostname()
        return done


def queue_data_of(broker_name: str, config: TopicConfig) -> common_pb2.QueueData:
    """The route entry of ``config`` on ``broker_name``."""
    return common_pb2.QueueData(
        broker_name=broker_name,
        read_queue_nums=config.read_queue_nums,
        write_queue_nums=config.write_queue_nums,
        perm=config.perm,
        topic_sys_flag=config.topic_sys_flag,
    )


class RouteProcessor:
    """Answers route and cluster queries about this broker alone.

    ``auto_create_topic``: a route query for an unknown topic creates it with the default queue
    count (so a producer can send to it), as RocketMQ's auto-create does on first send.

    In a broker group (``leadership`` given) the route names the group's current leader (from
    etcd), whichever member is asked; with no live leader known it is refused
    (``SERVICE_NOT_AVAILABLE``, retriable); only the leader auto-creates a topic.
    """

    def __init__(
        self,
        identity: BrokerIdentity,
        topics: TopicProcessor,
        auto_create_topic: bool,
        *,
        leadership: Leadership | None = None,
    ) -> None:
        self._identity = identity
        self._topics = topics
        self._auto_create_topic = auto_create_topic
        self._leadership = leadership

    def query_route(self, topic: str) -> common_pb2.TopicRouteData:
        """The topic's queues on this broker and how to reach it; ``UnknownTopicError`` when
        the broker does not hold the topic (and does not auto-create)."""
        leadership = self._leadership
        config = self._topics.get(topic)
        if config is None:
            if not self._auto_create_topic or (
                leadership is not None and leadership.write_refusal()
            ):
                raise UnknownTopicError("no route for topic", topic=topic)
            config = self._topics.ensure(topic)
        identity = self._identity
        broker = identity.broker_data()
        if leadership is not None:
            leader = leadership.leader_endpoints()
            if leader is None:
                raise BrokerStateError(
                    "no leader of the group is known", group=leadership.group, topic=topic
                )
            broker.endpoints.CopyFrom(leader)
        return common_pb2.TopicRouteData(
            topic=topic,
            queue_datas=[queue_data_of(identity.broker_name, config)],
            broker_datas=[broker],
        )

    def list_clusters(self) -> list[common_pb2.ClusterInfo]:
        """This broker's cluster, with this broker in it."""
        identity = self._identity
        now_ms = identity.now_ms()
        broker = common_pb2.BrokerInfo(
            broker_name=identity.broker_name,
            endpoints=identity.endpoints,
            last_heartbeat_ms=now_ms,
            topic_count=len(self._topics.topics()),
            registered_ms=identity.start_time_ms,
        )
        return [common_pb2.ClusterInfo(cluster_name=identity.cluster_name, brokers=[broker])]

    def topic_configs(self) -> list[common_pb2.TopicConfig]:
        """Every topic as the wire carries it, sorted by name (for a registration)."""
        return [topic_config_to_proto(c) for c in self._topics.topics()]
