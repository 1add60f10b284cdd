"""The consume-retry calls of :class:`~client.grpc_client.GrpcClient` (its base): send-back to
the retry or dead-letter topic, the group's retry topic, orderly queue locks, and the admin's
view and re-send of dead-lettered messages. Kept apart so the client module stays short; they
answer and fail as every other call of the client (``GrpcClient._call``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from google.protobuf.message import Message as ProtoMessage

from aeromq.proto import admin_pb2, admin_pb2_grpc, consumer_group_pb2, consumer_group_pb2_grpc

__all__ = ["ConsumeRetryCalls"]

_R = TypeVar("_R", bound=ProtoMessage)


class ConsumeRetryCalls:
    """RPCs ``ConsumerSendBack``, ``CreateRetryTopic``, ``LockBatchMQ``, ``UnlockBatchMQ``,
    ``ViewMessages`` and ``ResendMessage`` (``proto/consumer_group.proto``, ``admin.proto``)."""

    _admin: admin_pb2_grpc.BrokerAdminStub
    _groups: consumer_group_pb2_grpc.ConsumerGroupServiceStub

    def _call(
        self, rpc: str, stub: Callable[..., _R], request: ProtoMessage, timeout_s: float | None
    ) -> _R:
        raise NotImplementedError  # GrpcClient's

    def send_back(
        self,
        group: str,
        commit_log_offset: int,
        *,
        delay_level: int = 0,
        max_reconsume_times: int = 0,
        topic: str = "",
        timeout_s: float | None = None,
    ) -> consumer_group_pb2.ConsumerSendBackResponse:
        """Send the message stored at ``commit_log_offset`` back for ``group``: to its retry
        topic with the back-off ``delay_level`` (0: RocketMQ's), or its dead-letter topic once
        it was reconsumed ``max_reconsume_times`` (0: 16) times or ``delay_level`` < 0;
        ``topic``, the topic it was pulled from, is checked against it (and by an ACL). The
        answer names where the copy went."""
        request = consumer_group_pb2.ConsumerSendBackRequest(
            consumer_group=group,
            commit_log_offset=commit_log_offset,
            delay_level=delay_level,
            max_reconsume_times=max_reconsume_times,
            topic=topic,
        )
        return self._call("ConsumerSendBack", self._groups.ConsumerSendBack, request, timeout_s)

    def create_retry_topic(self, group: str, *, timeout_s: float | None = None) -> str:
        """Create the group's retry topic (one queue) unless it exists; its name."""
        request = consumer_group_pb2.CreateRetryTopicRequest(consumer_group=group)
        stub = self._groups.CreateRetryTopic
        return self._call("CreateRetryTopic", stub, request, timeout_s).topic

    def lock_queues(
        self,
        group: str,
        client_id: str,
        topic: str,
        queue_ids: Iterable[int],
        *,
        timeout_s: float | None = None,
    ) -> list[int]:
        """Lock (or renew) the group's queues of ``topic`` for ``client_id``: the ids it holds
        now (RocketMQ's ``lockBatchMQ``)."""
        request = _lock_request(group, client_id, topic, queue_ids)
        response = self._call("LockBatchMQ", self._groups.LockBatchMQ, request, timeout_s)
        return list(response.locked_queue_ids)

    def unlock_queues(
        self,
        group: str,
        client_id: str,
        topic: str,
        queue_ids: Iterable[int],
        *,
        timeout_s: float | None = None,
    ) -> None:
        """Let go of the locks ``client_id`` holds among the queues (``unlockBatchMQ``)."""
        request = _lock_request(group, client_id, topic, queue_ids)
        self._call("UnlockBatchMQ", self._groups.UnlockBatchMQ, request, timeout_s)

    def view_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = 0,
        *,
        timeout_s: float | None = None,
    ) -> list[admin_pb2.StoredMessage]:
        """Up to ``max_count`` (0: 32) stored messages of the queue from ``offset`` on."""
        request = admin_pb2.ViewMessagesRequest(
            topic=topic, queue_id=queue_id, offset=offset, max_count=max_count
        )
        response = self._call("ViewMessages", self._admin.ViewMessages, request, timeout_s)
        return list(response.messages)

    def resend_message(
        self, topic: str, queue_id: int, offset: int, *, timeout_s: float | None = None
    ) -> admin_pb2.ResendMessageResponse:
        """Put the dead-lettered message at ``offset`` of a ``%DLQ%`` topic's queue back on
        the topic it first came from; the answer names where it went."""
        request = admin_pb2.ResendMessageRequest(topic=topic, queue_id=queue_id, offset=offset)
        return self._call("ResendMessage", self._admin.ResendMessage, request, timeout_s)


def _lock_request(
    group: str, client_id: str, topic: str, queue_ids: Iterable[int]
) -> consumer_group_pb2.LockBatchRequest:
    return consumer_group_pb2.LockBatchRequest(
        consumer_group=group, client_id=client_id, topic=topic, queue_ids=list(queue_ids)
    )
