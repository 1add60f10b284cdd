# ruff: noqa: N802  (method names are the RPC names that gRPC dispatches on)
"""``MessagingServiceServicer``: the ``apache.rocketmq.v2.MessagingService`` calls, each handed
to the part that serves it (routes: ``_route``; sends: ``_send``; receive, ack, invisibility
and dead letters: ``_pop``; settings: ``_telemetry``).

Refusals travel as the response's ``Status`` (``_status``), with gRPC status OK, as RocketMQ's
proxy answers. On a member of a broker group that does not lead it (``leadership`` given, see
``_leader.py``), routes, assignments, sends, receives, acks, invisibility changes and dead
letters are forwarded to the leader's endpoint and answered as the leader answers them
(``HA_NOT_AVAILABLE`` while no leader is known); settings, heartbeats and refusals stay local. ``EndTransaction`` and the check-backs on a
producer's ``Telemetry`` stream are ``_transactions``'s (refused with ``UNSUPPORTED`` when the
broker has no transaction service); the calls of RocketMQ's pull
and lite consumers and of recalls (``PullMessage``, ``UpdateOffset``, ``GetOffset``,
``QueryOffset``, ``RecallMessage``, ``SyncLiteSubscription``) are refused with ``UNSUPPORTED``
too, naming the call.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import grpc

from aeromq.broker.rocketmq._convert import to_v2_message
from aeromq.broker.rocketmq._leader import EndpointLeadership, LeaderForwarder
from aeromq.broker.rocketmq._pop import MessageFilter, PopService
from aeromq.broker.rocketmq._receipt import ReceiptHandle
from aeromq.broker.rocketmq._route import assignments, endpoints_of, message_queues
from aeromq.broker.rocketmq._send import SendHandler, ensure_topic
from aeromq.broker.rocketmq._status import ProtocolStatusError, status
from aeromq.broker.rocketmq._telemetry import SettingsPolicy, answer_settings
from aeromq.broker.rocketmq._transactions import end_transaction, pump_telemetry
from aeromq.broker.store import MessageStore, TopicConfig
from aeromq.broker.transaction import TransactionService
from aeromq.common import InvalidExpressionError, build_subscription_data, compile_sql92
from aeromq.proto.apache.rocketmq.v2 import definition_pb2, service_pb2, service_pb2_grpc

__all__ = ["EndpointSettings", "MessagingServicer"]

Code = definition_pb2.Code

_MIN_INVISIBLE_MS: Final = 1_000
_MAX_INVISIBLE_MS: Final = 12 * 3_600_000
_MAX_BATCH: Final = 1024
# A receive answers this long before the client's deadline, so the answer is not lost.
_DEADLINE_MARGIN_MS: Final = 500


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """What the servicer needs of the broker's config."""

    broker_name: str
    host: str
    port: int
    auto_create_topic: bool
    default_queue_count: int
    settings: SettingsPolicy


def _need(value: str, code: definition_pb2.Code.ValueType, what: str) -> str:
    if not value:
        raise ProtocolStatusError(code, f"{what} is required")
    return value


def _filter_of(topic: str, expression: definition_pb2.FilterExpression) -> MessageFilter:
    try:
        if expression.type == definition_pb2.SQL:
            return compile_sql92(expression.expression)
        return build_subscription_data(topic, expression.expression or "*")
    except InvalidExpressionError as exc:
        raise ProtocolStatusError(
            Code.ILLEGAL_FILTER_EXPRESSION, str(exc), expression=expression.expression
        ) from exc


def _invisible_ms(duration_ms: int) -> int:
    if not _MIN_INVISIBLE_MS <= duration_ms <= _MAX_INVISIBLE_MS:
        raise ProtocolStatusError(
            Code.ILLEGAL_INVISIBLE_TIME,
            "invisible duration out of range",
            invisible_ms=duration_ms,
            min_ms=_MIN_INVISIBLE_MS,
            max_ms=_MAX_INVISIBLE_MS,
        )
    return duration_ms


class MessagingServicer(service_pb2_grpc.MessagingServiceServicer):
    """See the module."""

    def __init__(
        self,
        store: MessageStore,
        pop: PopService,
        settings: EndpointSettings,
        leadership: EndpointLeadership | None = None,
        transactions: TransactionService | None = None,
    ) -> None:
        self._store = store
        self._transactions = transactions
        self._forwarder = (
            None if leadership is None else LeaderForwarder(leadership, settings.broker_name)
        )
        self._pop = pop
        self._settings = settings
        self._endpoints = endpoints_of(settings.host, settings.port)
        self._store_host = f"{settings.host}:{settings.port}"
        self.sender = SendHandler(
            store,
            max_body_bytes=settings.settings.max_body_bytes,
            auto_create_topic=settings.auto_create_topic,
            queue_count=settings.default_queue_count,
        )
        self._closing = threading.Event()

    def close(self) -> None:
        """End the open telemetry streams at their next command; close the channel to the
        group's leader."""
        self._closing.set()
        if self._forwarder is not None:
            self._forwarder.close()

    def _follower(self) -> LeaderForwarder | None:
        """The forwarder to the leader when this member does not serve now, else None (a
        single broker, or the leader)."""
        forwarder = self._forwarder
        return None if forwarder is None or forwarder.leadership.serves() else forwarder

    # -- routes and liveness ---------------------------------------------------------------

    def QueryRoute(
        self, request: service_pb2.QueryRouteRequest, context: grpc.ServicerContext
    ) -> service_pb2.QueryRouteResponse:
        try:
            if (follower := self._follower()) is not None:
                return follower.unary(lambda stub: stub.QueryRoute, request, context)
            config = self._topic(request.topic.name)
        except ProtocolStatusError as exc:
            return service_pb2.QueryRouteResponse(status=_refusal(exc))
        queues = message_queues(
            config, request.topic.resource_namespace, self._settings.broker_name, self._endpoints
        )
        return service_pb2.QueryRouteResponse(status=status(), message_queues=queues)

    def QueryAssignment(
        self, request: service_pb2.QueryAssignmentRequest, context: grpc.ServicerContext
    ) -> service_pb2.QueryAssignmentResponse:
        try:
            if (follower := self._follower()) is not None:
                return follower.unary(lambda stub: stub.QueryAssignment, request, context)
            config = self._topic(request.topic.name)
        except ProtocolStatusError as exc:
            return service_pb2.QueryAssignmentResponse(status=_refusal(exc))
        found = assignments(
            config, request.topic.resource_namespace, self._settings.broker_name, self._endpoints
        )
        return service_pb2.QueryAssignmentResponse(status=status(), assignments=found)

    def Heartbeat(
        self, request: service_pb2.HeartbeatRequest, context: grpc.ServicerContext
    ) -> service_pb2.HeartbeatResponse:
        return service_pb2.HeartbeatResponse(status=status())

    def NotifyClientTermination(
        self, request: service_pb2.NotifyClientTerminationRequest, context: grpc.ServicerContext
    ) -> service_pb2.NotifyClientTerminationResponse:
        return service_pb2.NotifyClientTerminationResponse(status=status())

    def Telemetry(
        self,
        request_iterator: Iterator[service_pb2.TelemetryCommand],
        context: grpc.ServicerContext,
    ) -> Iterator[service_pb2.TelemetryCommand]:
        policy = self._settings.settings
        if self._transactions is not None:  # check-backs come between the answers
            yield from pump_telemetry(
                request_iterator,
                lambda command: answer_settings(command, policy),
                self._transactions,
                self._closing,
                self._store_host,
            )
            return
        for command in request_iterator:
            if self._closing.is_set():
                return
            answer = answer_settings(command, policy)
            if answer is not None:
                yield answer

    def _topic(self, topic: str) -> TopicConfig:
        settings = self._settings
        return ensure_topic(
            self._store, topic, settings.auto_create_topic, settings.default_queue_count
        )

    # -- send ------------------------------------------------------------------------------

    def SendMessage(
        self, request: service_pb2.SendMessageRequest, context: grpc.ServicerContext
    ) -> service_pb2.SendMessageResponse:
        try:
            if (follower := self._follower()) is not None:
                return follower.unary(lambda stub: stub.SendMessage, request, context)
            return self.sender.send(request, context.peer())
        except ProtocolStatusError as exc:
            return service_pb2.SendMessageResponse(status=_refusal(exc))

    def EndTransaction(
        self, request: service_pb2.EndTransactionRequest, context: grpc.ServicerContext
    ) -> service_pb2.EndTransactionResponse:
        try:
            if (follower := self._follower()) is not None:
                return follower.unary(lambda stub: stub.EndTransaction, request, context)
        except ProtocolStatusError as exc:
            return service_pb2.EndTransactionResponse(status=_refusal(exc))
        return end_transaction(self._transactions, request)

    # -- receive, ack, invisibility, dead letters -----------------------------------------

    def ReceiveMessage(
        self, request: service_pb2.ReceiveMessageRequest, context: grpc.ServicerContext
    ) -> Iterator[service_pb2.ReceiveMessageResponse]:
        if (follower := self._follower()) is not None:
            yield from follower.receive(request, context)
            return
        topic = request.message_queue.topic.name
        try:
            group = _need(request.group.name, Code.ILLEGAL_CONSUMER_GROUP, "a consumer group")
            message_filter = _filter_of(topic, request.filter_expression)
            invisible_ms = _invisible_ms(request.invisible_duration.ToMilliseconds())
            batch = min(max(request.batch_size, 1), _MAX_BATCH)
            deliveries = self._pop.receive(
                group, topic, message_filter, batch, invisible_ms, self._wait_ms(request, context)
            )
        except ProtocolStatusError as exc:
            yield service_pb2.ReceiveMessageResponse(status=_refusal(exc))
            return
        if not deliveries:
            yield service_pb2.ReceiveMessageResponse(
                status=status(Code.MESSAGE_NOT_FOUND, f"no new message: topic={topic!r}")
            )
            return
        yield service_pb2.ReceiveMessageResponse(status=status())
        namespace = request.group.resource_namespace
        for delivery in deliveries:
            message = to_v2_message(
                delivery.message,
                namespace=namespace,
                receipt_handle=delivery.handle.encode(),
                attempt=delivery.handle.attempt,
                invisible_ms=delivery.invisible_ms,
                store_host=self._store_host,
            )
            yield service_pb2.ReceiveMessageResponse(message=message)

    def _wait_ms(
        self, request: service_pb2.ReceiveMessageRequest, context: grpc.ServicerContext
    ) -> int:
        asked_ms = request.long_polling_timeout.ToMilliseconds()
        wait_ms = min(max(asked_ms, 0), self._settings.settings.long_polling_max_ms)
        remaining_s = context.time_remaining()
        if remaining_s is not None:
            wait_ms = min(wait_ms, int(remaining_s * 1000) - _DEADLINE_MARGIN_MS)
        return max(wait_ms, 0)

    def AckMessage(
        self, request: service_pb2.AckMessageRequest, context: grpc.ServicerContext
    ) -> service_pb2.AckMessageResponse:
        if (follower := self._follower()) is not None:
            try:
                return follower.unary(lambda stub: stub.AckMessage, request, context)
            except ProtocolStatusError as exc:
                return service_pb2.AckMessageResponse(status=_refusal(exc))
        response = service_pb2.AckMessageResponse()
        failures = []
        for entry in request.entries:
            result = response.entries.add(
                message_id=entry.message_id, receipt_handle=entry.receipt_handle
            )
            try:
                group = _need(request.group.name, Code.ILLEGAL_CONSUMER_GROUP, "a consumer group")
                handle = ReceiptHandle.decode(entry.receipt_handle)
                self._pop.ack(group, request.topic.name, handle)
                result.status.CopyFrom(status())
            except ProtocolStatusError as exc:
                result.status.CopyFrom(_refusal(exc))
                failures.append(result.status)
        if not failures:
            response.status.CopyFrom(status())
        elif len(request.entries) == 1:
            response.status.CopyFrom(failures[0])
        else:
            response.status.CopyFrom(
                status(Code.MULTIPLE_RESULTS, f"{len(failures)} of {len(request.entries)} failed")
            )
        return response

    def ChangeInvisibleDuration(
        self, request: service_pb2.ChangeInvisibleDurationRequest, context: grpc.ServicerContext
    ) -> service_pb2.ChangeInvisibleDurationResponse:
        try:
            if (follower := self._follower()) is not None:
                return follower.unary(lambda stub: stub.ChangeInvisibleDuration, request, context)
            group = _need(request.group.name, Code.ILLEGAL_CONSUMER_GROUP, "a consumer group")
            invisible_ms = _invisible_ms(request.invisible_duration.ToMilliseconds())
            handle = ReceiptHandle.decode(request.receipt_handle)
            renewed = self._pop.change_invisible(group, request.topic.name, handle, invisible_ms)
        except ProtocolStatusError as exc:
            return service_pb2.ChangeInvisibleDurationResponse(status=_refusal(exc))
        return service_pb2.ChangeInvisibleDurationResponse(
            status=status(), receipt_handle=renewed.encode()
        )

    def ForwardMessageToDeadLetterQueue(
        self,
        request: service_pb2.ForwardMessageToDeadLetterQueueRequest,
        context: grpc.ServicerContext,
    ) -> service_pb2.ForwardMessageToDeadLetterQueueResponse:
        try:
            if (follower := self._follower()) is not None:
                return follower.unary(
                    lambda stub: stub.ForwardMessageToDeadLetterQueue, request, context
                )
            group = _need(request.group.name, Code.ILLEGAL_CONSUMER_GROUP, "a consumer group")
            handle = ReceiptHandle.decode(request.receipt_handle)
            self._pop.forward_to_dlq(group, request.topic.name, handle)
        except ProtocolStatusError as exc:
            return service_pb2.ForwardMessageToDeadLetterQueueResponse(status=_refusal(exc))
        return service_pb2.ForwardMessageToDeadLetterQueueResponse(status=status())

    # -- refused: transactions above; RocketMQ's pull and lite consumers and recalls -------

    def PullMessage(
        self, request: service_pb2.PullMessageRequest, context: grpc.ServicerContext
    ) -> Iterator[service_pb2.PullMessageResponse]:
        yield service_pb2.PullMessageResponse(status=_unsupported("PullMessage"))

    def UpdateOffset(
        self, request: service_pb2.UpdateOffsetRequest, context: grpc.ServicerContext
    ) -> service_pb2.UpdateOffsetResponse:
        return service_pb2.UpdateOffsetResponse(status=_unsupported("UpdateOffset"))

    def GetOffset(
        self, request: service_pb2.GetOffsetRequest, context: grpc.ServicerContext
    ) -> service_pb2.GetOffsetResponse:
        return service_pb2.GetOffsetResponse(status=_unsupported("GetOffset"))

    def QueryOffset(
        self, request: service_pb2.QueryOffsetRequest, context: grpc.ServicerContext
    ) -> service_pb2.QueryOffsetResponse:
        return service_pb2.QueryOffsetResponse(status=_unsupported("QueryOffset"))

    def RecallMessage(
        self, request: service_pb2.RecallMessageRequest, context: grpc.ServicerContext
    ) -> service_pb2.RecallMessageResponse:
        return service_pb2.RecallMessageResponse(status=_unsupported("RecallMessage"))

    def SyncLiteSubscription(
        self, request: service_pb2.SyncLiteSubscriptionRequest, context: grpc.ServicerContext
    ) -> service_pb2.SyncLiteSubscriptionResponse:
        return service_pb2.SyncLiteSubscriptionResponse(status=_unsupported("SyncLiteSubscription"))


def _unsupported(call: str) -> definition_pb2.Status:
    return status(
        Code.UNSUPPORTED,
        f"aeromq serves RocketMQ 5's producers and simple consumers, not this call: call={call}",
    )


def _refusal(exc: ProtocolStatusError) -> definition_pb2.Status:
    return status(exc.v2_code, str(exc))
