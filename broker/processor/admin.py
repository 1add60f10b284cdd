"""The control plane's entry points, one method per RPC, independent of the carrier.

``ControlPlane`` bundles the topic, route, offset, consumer group and stats processors over one
store and answers every ``BrokerAdmin`` and ``ConsumerGroupService`` request with its protobuf
response. Methods take the RPC's name, except the offset ones, which take the name the
operation has in every layer (``commit_offset`` for ``UpdateOffset``, ``min_offset`` for
``GetMinOffset``, ``max_offset`` for ``GetMaxOffset``: see ``processor.offsets``). In a broker group (``leadership`` given) a member that does not lead refuses the RPCs that
change or read topics and offsets (``NOT_LEADER``, naming the leader; a leader below
``min_isr`` refuses the changes with ``NOT_ENOUGH_REPLICAS``); routes name the leader. Failures never escape: each becomes the response's ``Status`` through one table
(:func:`status_code_of`), is logged and counted (``admin.errors.<code>``). The gRPC servicers
(``aeromq.broker.grpc``) only unwrap the carrier; a later RocketMQ-protocol servicer can call the same
methods.

Caller: the broker (construction, ``start``, ``close``, ``identity.update_endpoints`` once its
ports are bound) and the servicers. Affects: the store's topic config and consumer offsets,
group membership.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from google.protobuf.message import Message as ProtoMessage

from aeromq.broker._errors import BrokerError, ConfigError, InvalidArgumentError
from aeromq.broker.config import BrokerConfig
from aeromq.broker.processor.consume_retry_rpcs import ConsumeRetryRpcs
from aeromq.broker.processor.consumer_groups import ConsumerGroupManager, MembershipStream
from aeromq.broker.processor.dead_letters import DeadLetterProcessor
from aeromq.broker.processor.leadership import Leadership, refusal
from aeromq.broker.processor.messages import MessageQueryProcessor
from aeromq.broker.processor.offsets import OffsetProcessor
from aeromq.broker.processor.queue_locks import QueueLockTable
from aeromq.broker.processor.route import BrokerIdentity, RouteProcessor
from aeromq.broker.processor.send_back import SendBackProcessor
from aeromq.broker.processor.stats import StatsProcessor, StatsRegistry
from aeromq.broker.processor.topics import TopicProcessor, topic_config_to_proto
from aeromq.broker.store import MessageStore
from aeromq.common import ResponseCode
from aeromq.proto import admin_pb2, common_pb2, consumer_group_pb2

__all__ = ["ControlPlane", "status_code_of", "status_of"]

_log = logging.getLogger(__name__)

# Control-plane codes that differ from the error class's own ``code`` (first match in the MRO).
_CODE_OVERRIDES: dict[type[BaseException], int] = {
    InvalidArgumentError: ResponseCode.INVALID_PARAMETER,  # its own code (MESSAGE_ILLEGAL) is for messages
    ConfigError: ResponseCode.INVALID_PARAMETER,
}

R = TypeVar("R", bound=ProtoMessage)


def status_code_of(exc: BaseException) -> int:
    """The response code for ``exc``: a class's own ``code`` wins over the overrides of its
    bases; anything not a ``BrokerError`` is ``SYSTEM_ERROR``."""
    if not isinstance(exc, BrokerError):
        return ResponseCode.SYSTEM_ERROR
    for cls in type(exc).__mro__:
        if cls in _CODE_OVERRIDES:
            return _CODE_OVERRIDES[cls]
        if "code" in vars(cls):
            return int(exc.code)
    return int(exc.code)


def status_of(exc: BaseException) -> common_pb2.Status:
    return common_pb2.Status(code=status_code_of(exc), message=str(exc) or type(exc).__name__)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ControlPlane(ConsumeRetryRpcs):
    """Every control-plane processor of one broker, behind one method per RPC (the consume
    retry, dead-letter and orderly-lock RPCs in :class:`ConsumeRetryRpcs`)."""

    def __init__(
        self,
        config: BrokerConfig,
        store: MessageStore,
        *,
        identity: BrokerIdentity | None = None,
        registry: StatsRegistry | None = None,
        clock_ms: Callable[[], int] | None = None,
        leadership: Leadership | None = None,
    ) -> None:
        clock = clock_ms or _wall_clock_ms
        self.config = config
        self.store = store
        self.leadership = leadership
        self.identity = identity or BrokerIdentity(
            config.cluster_name, config.broker_name, clock_ms=clock
        )
        self.registry = registry or StatsRegistry()
        self.topics = TopicProcessor(store, config.default_queue_count)
        self.groups = ConsumerGroupManager(config.client_heartbeat_timeout_ms, clock)
        self.offsets = OffsetProcessor(store, self.topics, self.groups, config.broker_name)
        self.routes = RouteProcessor(
            self.identity, self.topics, config.auto_create_topic, leadership=leadership
        )
        self.messages = MessageQueryProcessor(store)
        self.send_back = SendBackProcessor(store, self.topics)
        self.dead_letters = DeadLetterProcessor(store)
        self.queue_locks = QueueLockTable(
            lambda group, client: client in self.groups.membership(group).consumer_ids
        )
        self.stats = StatsProcessor(
            self.identity, store, self.groups, self.registry, self.offsets.known_groups
        )

    def start(self) -> None:
        """Start the consumer expiry timer."""
        self.groups.start_expiry_timer()

    def close(self) -> None:
        """Stop the timer and end every membership stream."""
        self.groups.close()

    # -- topics and routes -------------------------------------------------------------------

    def create_topic(self, request: admin_pb2.CreateTopicRequest) -> admin_pb2.CreateTopicResponse:
        def build() -> admin_pb2.CreateTopicResponse:
            config = self.topics.create(request.topic)
            _log.info("topic created: %s", config)
            return admin_pb2.CreateTopicResponse(topic=topic_config_to_proto(config))

        return self._answer("CreateTopic", admin_pb2.CreateTopicResponse, build, write=True)

    def update_topic(self, request: admin_pb2.UpdateTopicRequest) -> admin_pb2.UpdateTopicResponse:
        def build() -> admin_pb2.UpdateTopicResponse:
            config = self.topics.update(request.topic)
            _log.info("topic updated: %s", config)
            return admin_pb2.UpdateTopicResponse(topic=topic_config_to_proto(config))

        return self._answer("UpdateTopic", admin_pb2.UpdateTopicResponse, build, write=True)

    def delete_topic(self, request: admin_pb2.DeleteTopicRequest) -> admin_pb2.DeleteTopicResponse:
        def build() -> admin_pb2.DeleteTopicResponse:
            queues = self.topics.delete(request.topic)
            _log.info("topic deleted: topic=%s queues=%d", request.topic, queues)
            return admin_pb2.DeleteTopicResponse()

        return self._answer("DeleteTopic", admin_pb2.DeleteTopicResponse, build, write=True)

    def list_topics(self, request: common_pb2.ListTopicsRequest) -> common_pb2.ListTopicsResponse:
        def build() -> common_pb2.ListTopicsResponse:
            return common_pb2.ListTopicsResponse(
                topics=[topic_config_to_proto(c) for c in self.topics.topics()]
            )

        return self._answer("ListTopics", common_pb2.ListTopicsResponse, build)

    def query_route(self, request: common_pb2.QueryRouteRequest) -> common_pb2.QueryRouteResponse:
        def build() -> common_pb2.QueryRouteResponse:
            return common_pb2.QueryRouteResponse(route=self.routes.query_route(request.topic))

        return self._answer("QueryRoute", common_pb2.QueryRouteResponse, build)

    def list_clusters(
        self, request: common_pb2.ListClustersRequest
    ) -> common_pb2.ListClustersResponse:
        def build() -> common_pb2.ListClustersResponse:
            return common_pb2.ListClustersResponse(clusters=self.routes.list_clusters())

        return self._answer("ListClusters", common_pb2.ListClustersResponse, build)

    # -- offsets -----------------------------------------------------------------------------

    def commit_offset(
        self, request: admin_pb2.UpdateOffsetRequest
    ) -> admin_pb2.UpdateOffsetResponse:
        """RPC ``UpdateOffset``: a commit, or with ``release`` a commit and a release."""

        def build() -> admin_pb2.UpdateOffsetResponse:
            group, topic, queue_id = request.consumer_group, request.topic, request.queue_id
            if request.release:
                self.offsets.release_queue(
                    group, topic, queue_id, request.offset, client_id=request.client_id
                )
            else:
                self.offsets.commit_offset(group, topic, queue_id, request.offset)
            return admin_pb2.UpdateOffsetResponse()

        return self._answer("UpdateOffset", admin_pb2.UpdateOffsetResponse, build, write=True)

    def query_offset(self, request: admin_pb2.QueryOffsetRequest) -> admin_pb2.OffsetResponse:
        """RPC ``QueryOffset``: the committed offset, or with ``acquire`` the queue's grant."""

        def build() -> admin_pb2.OffsetResponse:
            if request.acquire:
                offset, holder = self.offsets.acquire_queue(
                    request.consumer_group,
                    request.topic,
                    request.queue_id,
                    request.client_id,
                    force=request.force,
                )
                return admin_pb2.OffsetResponse(offset=offset, holder=holder)
            offset = self.offsets.query_offset(
                request.consumer_group, request.topic, request.queue_id
            )
            return admin_pb2.OffsetResponse(offset=offset)

        return self._answer("QueryOffset", admin_pb2.OffsetResponse, build, read=True)

    def search_offset(self, request: admin_pb2.SearchOffsetRequest) -> admin_pb2.OffsetResponse:
        def build() -> admin_pb2.OffsetResponse:
            offset = self.offsets.search_offset(
                request.topic, request.queue_id, request.timestamp_ms, request.boundary
            )
            return admin_pb2.OffsetResponse(offset=offset)

        return self._answer("SearchOffset", admin_pb2.OffsetResponse, build, read=True)

    def min_offset(self, request: admin_pb2.GetMinOffsetRequest) -> admin_pb2.OffsetResponse:
        """RPC ``GetMinOffset``."""

        def build() -> admin_pb2.OffsetResponse:
            offset = self.offsets.min_offset(request.topic, request.queue_id)
            return admin_pb2.OffsetResponse(offset=offset)

        return self._answer("GetMinOffset", admin_pb2.OffsetResponse, build, read=True)

    def max_offset(self, request: admin_pb2.GetMaxOffsetRequest) -> admin_pb2.OffsetResponse:
        """RPC ``GetMaxOffset``."""

        def build() -> admin_pb2.OffsetResponse:
            offset = self.offsets.max_offset(request.topic, request.queue_id)
            return admin_pb2.OffsetResponse(offset=offset)

        return self._answer("GetMaxOffset", admin_pb2.OffsetResponse, build, read=True)

    def reset_offset(self, request: admin_pb2.ResetOffsetRequest) -> admin_pb2.ResetOffsetResponse:
        def build() -> admin_pb2.ResetOffsetResponse:
            moved = self.offsets.reset_offset(
                request.consumer_group,
                request.topic,
                request.target,
                request.timestamp_ms,
                request.queue_id,
            )
            _log.info(
                "offsets reset: group=%s topic=%s target=%s offsets=%s",
                request.consumer_group,
                request.topic,
                admin_pb2.ResetTarget.Name(request.target),
                moved,
            )
            return admin_pb2.ResetOffsetResponse(
                offsets=[admin_pb2.QueueOffset(queue_id=q, offset=o) for q, o in moved]
            )

        return self._answer("ResetOffset", admin_pb2.ResetOffsetResponse, build, write=True)

    def get_consumer_progress(
        self, request: admin_pb2.GetConsumerProgressRequest
    ) -> admin_pb2.GetConsumerProgressResponse:
        def build() -> admin_pb2.GetConsumerProgressResponse:
            return self.offsets.consumer_progress(request.consumer_group, request.topic)

        return self._answer(
            "GetConsumerProgress", admin_pb2.GetConsumerProgressResponse, build, read=True
        )

    # -- groups and stats --------------------------------------------------------------------

    def list_groups(self, request: admin_pb2.ListGroupsRequest) -> admin_pb2.ListGroupsResponse:
        def build() -> admin_pb2.ListGroupsResponse:
            response = admin_pb2.ListGroupsResponse()
            for group in self.offsets.known_groups():
                response.groups.append(
                    admin_pb2.GroupInfo(
                        consumer_group=group,
                        topics=self.offsets.group_topics(group),
                        consumer_count=len(self.groups.membership(group).consumer_ids),
                        message_model=self.groups.message_model(group),
                    )
                )
            return response

        return self._answer("ListGroups", admin_pb2.ListGroupsResponse, build)

    def get_broker_stats(
        self, request: admin_pb2.GetBrokerStatsRequest
    ) -> admin_pb2.GetBrokerStatsResponse:
        def build() -> admin_pb2.GetBrokerStatsResponse:
            return admin_pb2.GetBrokerStatsResponse(stats=self.stats.broker_stats())

        return self._answer("GetBrokerStats", admin_pb2.GetBrokerStatsResponse, build)

    # -- consumer group service --------------------------------------------------------------

    def send_heartbeat(
        self, request: consumer_group_pb2.HeartbeatRequest
    ) -> consumer_group_pb2.HeartbeatResponse:
        def build() -> consumer_group_pb2.HeartbeatResponse:
            return self.groups.heartbeat(request)

        return self._answer("SendHeartbeat", consumer_group_pb2.HeartbeatResponse, build)

    def open_membership_stream(self) -> MembershipStream:
        """A push stream for one client (see ``MembershipStream``); the carrier feeds it the
        client's heartbeats, sends what ``poll`` returns, and ``close``s it when done."""
        return self.groups.open_stream()

    def unregister_client(
        self, request: consumer_group_pb2.UnregisterClientRequest
    ) -> consumer_group_pb2.UnregisterClientResponse:
        def build() -> consumer_group_pb2.UnregisterClientResponse:
            if not request.client_id:
                raise InvalidArgumentError("client_id must not be empty")
            self.groups.unregister(request.client_id, request.consumer_groups)
            return consumer_group_pb2.UnregisterClientResponse()

        return self._answer("UnregisterClient", consumer_group_pb2.UnregisterClientResponse, build)

    def get_consumer_ids(
        self, request: consumer_group_pb2.GetConsumerIdsRequest
    ) -> consumer_group_pb2.GetConsumerIdsResponse:
        def build() -> consumer_group_pb2.GetConsumerIdsResponse:
            membership = self.groups.membership(request.consumer_group)
            return consumer_group_pb2.GetConsumerIdsResponse(
                consumer_ids=membership.consumer_ids, version=membership.version
            )

        return self._answer("GetConsumerIds", consumer_group_pb2.GetConsumerIdsResponse, build)

    # -- errors ------------------------------------------------------------------------------

    def query_message(
        self, request: admin_pb2.QueryMessageRequest
    ) -> admin_pb2.QueryMessageResponse:
        return self._answer(
            "QueryMessage", admin_pb2.QueryMessageResponse, lambda: self.messages.query(request)
        )

    def _answer(
        self,
        rpc: str,
        response_type: Callable[..., R],
        build: Callable[[], R],
        *,
        write: bool = False,
        read: bool = False,
    ) -> R:
        leadership = self.leadership
        if leadership is not None and (write or read):
            code = leadership.write_refusal() if write else leadership.read_refusal()
            if code:
                status = common_pb2.Status()
                refusal(leadership, code, rpc, status)
                self.registry.increment(f"admin.errors.{code}")
                return response_type(status=status)
        try:
            return build()
        except Exception as exc:
            status = status_of(exc)
            if isinstance(exc, BrokerError):
                _log.info("%s refused: code=%d %s", rpc, status.code, exc)
            else:
                _log.exception("%s failed", rpc)
            self.registry.increment(f"admin.errors.{status.code}")
            return response_type(status=status)
