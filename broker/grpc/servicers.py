# ruff: noqa: N802  (method names are the RPC names that gRPC dispatches on)
"""The broker's gRPC servicers: they unwrap the carrier and call the ``ControlPlane``.

Every unary method is one line: the processor answers with a response whose ``Status`` holds
any failure, so the gRPC status is OK whenever the broker processed the call. The membership
stream pumps a ``MembershipStream`` on the server's event loop (no thread per stream): a reader
task feeds it the client's heartbeats; the handler sends what it yields; the stream ends (and the client leaves its groups at once) when
the client half-closes or cancels, or the broker shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

import grpc

from aeromq.broker.processor.admin import ControlPlane
from aeromq.broker.processor.consumer_groups import MembershipStream
from aeromq.proto import (
    admin_pb2,
    admin_pb2_grpc,
    common_pb2,
    consumer_group_pb2,
    consumer_group_pb2_grpc,
    replication_pb2,
    replication_pb2_grpc,
)

__all__ = [
    "BrokerAdminServicer",
    "ConsumerGroupServicer",
    "EpochEndAnswer",
    "GroupReplicationServicer",
    "ReplicationStatusSource",
]

EpochEndAnswer = Callable[
    [replication_pb2.ReplicaEpochEndRequest], replication_pb2.ReplicaEpochEndResponse
]
"""``GroupMember.answer_epoch_end``: the truncation handshake's answer."""

ReplicationStatusSource = Callable[[], admin_pb2.ReplicationStatus]
"""A broker group member's view of its group, for ``GetBrokerStats`` (``aeromq admin
replication``)."""

_log = logging.getLogger(__name__)


class BrokerAdminServicer(admin_pb2_grpc.BrokerAdminServicer):
    def __init__(self, control_plane: ControlPlane) -> None:
        self._cp = control_plane
        self.replication_status: ReplicationStatusSource | None = None
        """Set on a broker group's member: ``GetBrokerStats`` answers its group's status too."""

    def CreateTopic(
        self, request: admin_pb2.CreateTopicRequest, context: grpc.ServicerContext
    ) -> admin_pb2.CreateTopicResponse:
        return self._cp.create_topic(request)

    def UpdateTopic(
        self, request: admin_pb2.UpdateTopicRequest, context: grpc.ServicerContext
    ) -> admin_pb2.UpdateTopicResponse:
        return self._cp.update_topic(request)

    def DeleteTopic(
        self, request: admin_pb2.DeleteTopicRequest, context: grpc.ServicerContext
    ) -> admin_pb2.DeleteTopicResponse:
        return self._cp.delete_topic(request)

    def ListTopics(
        self, request: common_pb2.ListTopicsRequest, context: grpc.ServicerContext
    ) -> common_pb2.ListTopicsResponse:
        return self._cp.list_topics(request)

    def QueryRoute(
        self, request: common_pb2.QueryRouteRequest, context: grpc.ServicerContext
    ) -> common_pb2.QueryRouteResponse:
        return self._cp.query_route(request)

    def UpdateOffset(
        self, request: admin_pb2.UpdateOffsetRequest, context: grpc.ServicerContext
    ) -> admin_pb2.UpdateOffsetResponse:
        return self._cp.commit_offset(request)

    def QueryOffset(
        self, request: admin_pb2.QueryOffsetRequest, context: grpc.ServicerContext
    ) -> admin_pb2.OffsetResponse:
        return self._cp.query_offset(request)

    def SearchOffset(
        self, request: admin_pb2.SearchOffsetRequest, context: grpc.ServicerContext
    ) -> admin_pb2.OffsetResponse:
        return self._cp.search_offset(request)

    def GetMinOffset(
        self, request: admin_pb2.GetMinOffsetRequest, context: grpc.ServicerContext
    ) -> admin_pb2.OffsetResponse:
        return self._cp.min_offset(request)

    def GetMaxOffset(
        self, request: admin_pb2.GetMaxOffsetRequest, context: grpc.ServicerContext
    ) -> admin_pb2.OffsetResponse:
        return self._cp.max_offset(request)

    def GetConsumerProgress(
        self, request: admin_pb2.GetConsumerProgressRequest, context: grpc.ServicerContext
    ) -> admin_pb2.GetConsumerProgressResponse:
        return self._cp.get_consumer_progress(request)

    def GetBrokerStats(
        self, request: admin_pb2.GetBrokerStatsRequest, context: grpc.ServicerContext
    ) -> admin_pb2.GetBrokerStatsResponse:
        response = self._cp.get_broker_stats(request)
        source = self.replication_status
        if source is not None and response.HasField("stats"):
            response.stats.replication.CopyFrom(source())
        return response

    def ListGroups(
        self, request: admin_pb2.ListGroupsRequest, context: grpc.ServicerContext
    ) -> admin_pb2.ListGroupsResponse:
        return self._cp.list_groups(request)

    def ResetOffset(
        self, request: admin_pb2.ResetOffsetRequest, context: grpc.ServicerContext
    ) -> admin_pb2.ResetOffsetResponse:
        return self._cp.reset_offset(request)

    def ListClusters(
        self, request: common_pb2.ListClustersRequest, context: grpc.ServicerContext
    ) -> common_pb2.ListClustersResponse:
        return self._cp.list_clusters(request)

    def QueryMessage(
        self, request: admin_pb2.QueryMessageRequest, context: grpc.ServicerContext
    ) -> admin_pb2.QueryMessageResponse:
        return self._cp.query_message(request)

    def ViewMessages(
        self, request: admin_pb2.ViewMessagesRequest, context: grpc.ServicerContext
    ) -> admin_pb2.QueryMessageResponse:
        return self._cp.view_messages(request)

    def ResendMessage(
        self, request: admin_pb2.ResendMessageRequest, context: grpc.ServicerContext
    ) -> admin_pb2.ResendMessageResponse:
        return self._cp.resend_message(request)


class ConsumerGroupServicer(consumer_group_pb2_grpc.ConsumerGroupServiceServicer):
    def __init__(self, control_plane: ControlPlane) -> None:
        self._cp = control_plane

    async def Heartbeat(
        self,
        request_iterator: AsyncIterator[consumer_group_pb2.HeartbeatRequest],
        context: grpc.aio.ServicerContext[
            consumer_group_pb2.HeartbeatRequest, consumer_group_pb2.HeartbeatResponse
        ],
    ) -> AsyncIterator[consumer_group_pb2.HeartbeatResponse]:
        # On the server's event loop: an open stream holds no thread, only this generator, a
        # reader task, and an Event the manager's pushes set (from whichever thread they run).
        loop = asyncio.get_running_loop()
        stream = self._cp.open_membership_stream()
        wake = asyncio.Event()

        def waker() -> None:
            with contextlib.suppress(RuntimeError):  # the server stopped: its loop is closed
                loop.call_soon_threadsafe(wake.set)

        stream.set_waker(waker)
        reader = asyncio.create_task(_read_heartbeats(request_iterator, stream))
        try:
            while True:
                wake.clear()
                response = stream.poll(0.0)
                if response is not None:
                    yield response
                elif stream.ended:
                    return
                else:
                    await wake.wait()
        finally:
            reader.cancel()
            stream.close()

    def SendHeartbeat(
        self, request: consumer_group_pb2.HeartbeatRequest, context: grpc.ServicerContext
    ) -> consumer_group_pb2.HeartbeatResponse:
        return self._cp.send_heartbeat(request)

    def UnregisterClient(
        self, request: consumer_group_pb2.UnregisterClientRequest, context: grpc.ServicerContext
    ) -> consumer_group_pb2.UnregisterClientResponse:
        return self._cp.unregister_client(request)

    def GetConsumerIds(
        self, request: consumer_group_pb2.GetConsumerIdsRequest, context: grpc.ServicerContext
    ) -> consumer_group_pb2.GetConsumerIdsResponse:
        return self._cp.get_consumer_ids(request)

    def ConsumerSendBack(
        self, request: consumer_group_pb2.ConsumerSendBackRequest, context: grpc.ServicerContext
    ) -> consumer_group_pb2.ConsumerSendBackResponse:
        return self._cp.consumer_send_back(request)

    def CreateRetryTopic(
        self, request: consumer_group_pb2.CreateRetryTopicRequest, context: grpc.ServicerContext
    ) -> consumer_group_pb2.CreateRetryTopicResponse:
        return self._cp.create_retry_topic(request)

    def LockBatchMQ(
        self, request: consumer_group_pb2.LockBatchRequest, context: grpc.ServicerContext
    ) -> consumer_group_pb2.LockBatchResponse:
        return self._cp.lock_batch_mq(request)

    def UnlockBatchMQ(
        self, request: consumer_group_pb2.LockBatchRequest, context: grpc.ServicerContext
    ) -> consumer_group_pb2.UnlockBatchResponse:
        return self._cp.unlock_batch_mq(request)


class GroupReplicationServicer(replication_pb2_grpc.GroupReplicationServicer):
    """A broker group's calls between members (``proto/replication.proto``), answered by the
    group member."""

    def __init__(self, answer_epoch_end: EpochEndAnswer) -> None:
        self._answer_epoch_end = answer_epoch_end

    def ReplicaEpochEnd(
        self, request: replication_pb2.ReplicaEpochEndRequest, context: grpc.ServicerContext
    ) -> replication_pb2.ReplicaEpochEndResponse:
        return self._answer_epoch_end(request)


async def _read_heartbeats(
    requests: AsyncIterator[consumer_group_pb2.HeartbeatRequest], stream: MembershipStream
) -> None:
    try:
        async for request in requests:
            stream.on_heartbeat(request)
    except (grpc.RpcError, asyncio.CancelledError):
        pass  # the call was cancelled or the connection dropped: the client is gone
    except Exception:
        _log.exception("membership stream reader failed: client_id=%s", stream.client_id)
    finally:
        stream.close()
