"""``ConsumeRetryRpcs``: the control plane's entry points for consume retry, dead letters and
orderly queue locks, one method per RPC (``ConsumerSendBack``, ``CreateRetryTopic``,
``LockBatchMQ``, ``UnlockBatchMQ``, ``ViewMessages``, ``ResendMessage``).

A part of :class:`~broker.processor.admin.ControlPlane` (its base), kept apart so the facade
stays short: each method builds its answer from one processor (``send_back``,
``dead_letters``, ``queue_locks``) through the facade's ``_answer`` (leadership refusals,
failures as the response's ``Status``). Caller: the gRPC servicers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from google.protobuf.message import Message as ProtoMessage

from aeromq.broker.processor.dead_letters import DeadLetterProcessor
from aeromq.broker.processor.messages import stored_message_pb
from aeromq.broker.processor.queue_locks import QueueLockTable
from aeromq.broker.processor.send_back import SendBackProcessor
from aeromq.proto import admin_pb2, consumer_group_pb2

__all__ = ["ConsumeRetryRpcs"]

R = TypeVar("R", bound=ProtoMessage)


class ConsumeRetryRpcs:
    """The consume-retry RPCs of the control plane (see the module)."""

    send_back: SendBackProcessor
    dead_letters: DeadLetterProcessor
    queue_locks: QueueLockTable

    def _answer(
        self,
        rpc: str,
        response_type: type[R],
        build: Callable[[], R],
        *,
        write: bool = False,
        read: bool = False,
    ) -> R:
        raise NotImplementedError  # the control plane's

    def consumer_send_back(
        self, request: consumer_group_pb2.ConsumerSendBackRequest
    ) -> consumer_group_pb2.ConsumerSendBackResponse:
        """RPC ``ConsumerSendBack``: the message to the retry or the dead-letter topic."""

        def build() -> consumer_group_pb2.ConsumerSendBackResponse:
            copy = self.send_back.send_back(
                request.consumer_group,
                request.commit_log_offset,
                request.delay_level,
                request.max_reconsume_times,
                request.topic,
            )
            return consumer_group_pb2.ConsumerSendBackResponse(
                topic=copy.topic,
                queue_id=copy.queue_id,
                queue_offset=copy.queue_offset,
                reconsume_times=copy.reconsume_times,
            )

        response = consumer_group_pb2.ConsumerSendBackResponse
        return self._answer("ConsumerSendBack", response, build, write=True)

    def create_retry_topic(
        self, request: consumer_group_pb2.CreateRetryTopicRequest
    ) -> consumer_group_pb2.CreateRetryTopicResponse:
        """RPC ``CreateRetryTopic``."""

        def build() -> consumer_group_pb2.CreateRetryTopicResponse:
            topic = self.send_back.create_retry_topic(request.consumer_group)
            return consumer_group_pb2.CreateRetryTopicResponse(topic=topic)

        response = consumer_group_pb2.CreateRetryTopicResponse
        return self._answer("CreateRetryTopic", response, build, write=True)

    def lock_batch_mq(
        self, request: consumer_group_pb2.LockBatchRequest
    ) -> consumer_group_pb2.LockBatchResponse:
        """RPC ``LockBatchMQ``: the queues of the request the client holds now."""

        def build() -> consumer_group_pb2.LockBatchResponse:
            locked = self.queue_locks.lock_batch(
                request.consumer_group, request.client_id, request.topic, request.queue_ids
            )
            return consumer_group_pb2.LockBatchResponse(locked_queue_ids=locked)

        # read: a broker group's follower refuses (NOT_LEADER), so every lock is the leader's
        return self._answer("LockBatchMQ", consumer_group_pb2.LockBatchResponse, build, read=True)

    def unlock_batch_mq(
        self, request: consumer_group_pb2.LockBatchRequest
    ) -> consumer_group_pb2.UnlockBatchResponse:
        """RPC ``UnlockBatchMQ``."""

        def build() -> consumer_group_pb2.UnlockBatchResponse:
            self.queue_locks.unlock_batch(
                request.consumer_group, request.client_id, request.topic, request.queue_ids
            )
            return consumer_group_pb2.UnlockBatchResponse()

        response = consumer_group_pb2.UnlockBatchResponse
        return self._answer("UnlockBatchMQ", response, build, read=True)

    def view_messages(
        self, request: admin_pb2.ViewMessagesRequest
    ) -> admin_pb2.QueryMessageResponse:
        """RPC ``ViewMessages``: a queue's messages from an offset."""

        def build() -> admin_pb2.QueryMessageResponse:
            found = self.dead_letters.view(
                request.topic, request.queue_id, request.offset, request.max_count
            )
            return admin_pb2.QueryMessageResponse(messages=[stored_message_pb(m) for m in found])

        return self._answer("ViewMessages", admin_pb2.QueryMessageResponse, build, read=True)

    def resend_message(
        self, request: admin_pb2.ResendMessageRequest
    ) -> admin_pb2.ResendMessageResponse:
        """RPC ``ResendMessage``: a dead-lettered message back on its first topic."""

        def build() -> admin_pb2.ResendMessageResponse:
            copy = self.dead_letters.resend(request.topic, request.queue_id, request.offset)
            return admin_pb2.ResendMessageResponse(
                topic=copy.topic, queue_id=copy.queue_id, queue_offset=copy.queue_offset
            )

        return self._answer("ResendMessage", admin_pb2.ResendMessageResponse, build, write=True)
