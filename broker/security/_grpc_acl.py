"""``AclInterceptor``: every call to an aeromq service authenticated and checked against the
ACL before its handler runs (health checking and reflection stay open).

Credentials travel as call metadata (``common.USER_METADATA``, ``common.SECRET_METADATA``; over TLS,
so the secret is not readable on the wire). A call without valid credentials ends with
``UNAUTHENTICATED``; a call its user may not make, with ``PERMISSION_DENIED``; each status
message names the user, resource and permission, and is logged once at WARNING. What each RPC
needs is one table, :data:`RPC_PERMISSIONS`: the resources a request names and the permission
each takes; an RPC absent from it needs only a valid user (route lookups, listing topics,
membership streams).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, TypeAlias, TypeVar

import grpc

from aeromq.broker.security._acl import Acl, Permission, ResourceKind
from aeromq.common import SECRET_METADATA, USER_METADATA, retry_topic
from aeromq.proto import admin_pb2, consumer_group_pb2, transaction_pb2

__all__ = ["RPC_PERMISSIONS", "AclInterceptor"]

_log = logging.getLogger(__name__)

_GUARDED_PREFIXES: Final = ("/aeromq.v1.",)
_MEMBERSHIP_STREAM: Final = "/aeromq.v1.ConsumerGroupService/Heartbeat"

Need = tuple[ResourceKind, str, Permission]
_Request = TypeVar("_Request")
_Response = TypeVar("_Response")
_Handler: TypeAlias = "grpc.RpcMethodHandler[_Request, _Response]"
_Heartbeat = consumer_group_pb2.HeartbeatRequest
_Membership = consumer_group_pb2.HeartbeatResponse
_RpcHandler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"  # request and response: the RPC's
_TOPIC, _GROUP = ResourceKind.TOPIC, ResourceKind.GROUP
_PUB, _SUB, _ADMIN = Permission.PUB, Permission.SUB, Permission.ADMIN


class _NamesTopic(Protocol):
    @property
    def topic(self) -> str: ...


class _NamesGroupAndTopic(_NamesTopic, Protocol):
    @property
    def consumer_group(self) -> str: ...


def _topic_admin(
    request: admin_pb2.CreateTopicRequest
    | admin_pb2.UpdateTopicRequest
    | admin_pb2.DeleteTopicRequest
    | admin_pb2.ResendMessageRequest,
) -> list[Need]:
    topic = request.topic if isinstance(request.topic, str) else request.topic.topic_name
    return [(_TOPIC, topic, _ADMIN)]


def _group_and_topic(permission: Permission) -> Callable[[_NamesGroupAndTopic], list[Need]]:
    def needs(request: _NamesGroupAndTopic) -> list[Need]:
        found = [(_GROUP, request.consumer_group, permission)]
        if request.topic:
            found.append((_TOPIC, request.topic, permission))
        return found

    return needs


def _topic_sub(request: _NamesTopic) -> list[Need]:
    return [(_TOPIC, request.topic, _SUB)]


def _admin_anything(request: object) -> list[Need]:
    return [(_TOPIC, "*", _ADMIN)]


def _heartbeat_groups(request: consumer_group_pb2.HeartbeatRequest) -> list[Need]:
    return [(_GROUP, data.consumer_group, _SUB) for data in request.consumers]


def _end_transaction(request: transaction_pb2.EndTransactionRequest) -> list[Need]:
    return [(_TOPIC, request.topic, _PUB)]


def _transaction_checks(request: transaction_pb2.PollTransactionChecksRequest) -> list[Need]:
    return [(_GROUP, request.producer_group, _PUB)]


def _group_sub(
    request: consumer_group_pb2.GetConsumerIdsRequest | consumer_group_pb2.CreateRetryTopicRequest,
) -> list[Need]:
    return [(_GROUP, request.consumer_group, _SUB)]


def _send_back(request: consumer_group_pb2.ConsumerSendBackRequest) -> list[Need]:
    """Sub on the group, and on the message's topic unless it is the group's retry topic."""
    group, topic = request.consumer_group, request.topic
    needs = [(_GROUP, group, _SUB)]
    if topic != retry_topic(group):
        needs.append((_TOPIC, topic, _SUB))
    return needs


# each entry takes the request class of its RPC (the key): no one class for the whole table
RPC_PERMISSIONS: Final[Mapping[str, Callable[[Any], list[Need]]]] = {
    "/aeromq.v1.BrokerAdmin/CreateTopic": _topic_admin,
    "/aeromq.v1.BrokerAdmin/UpdateTopic": _topic_admin,
    "/aeromq.v1.BrokerAdmin/DeleteTopic": _topic_admin,
    "/aeromq.v1.BrokerAdmin/UpdateOffset": _group_and_topic(_SUB),
    "/aeromq.v1.BrokerAdmin/QueryOffset": _group_and_topic(_SUB),
    "/aeromq.v1.BrokerAdmin/SearchOffset": _topic_sub,
    "/aeromq.v1.BrokerAdmin/GetMinOffset": _topic_sub,
    "/aeromq.v1.BrokerAdmin/GetMaxOffset": _topic_sub,
    "/aeromq.v1.BrokerAdmin/GetConsumerProgress": _group_and_topic(_ADMIN),
    "/aeromq.v1.BrokerAdmin/ResetOffset": _group_and_topic(_ADMIN),
    "/aeromq.v1.BrokerAdmin/GetBrokerStats": _admin_anything,
    "/aeromq.v1.BrokerAdmin/ListGroups": _admin_anything,
    "/aeromq.v1.BrokerAdmin/QueryMessage": _topic_sub,
    "/aeromq.v1.ConsumerGroupService/SendHeartbeat": _heartbeat_groups,
    "/aeromq.v1.ConsumerGroupService/GetConsumerIds": _group_sub,
    "/aeromq.v1.BrokerAdmin/ViewMessages": _topic_sub,
    "/aeromq.v1.BrokerAdmin/ResendMessage": _topic_admin,  # the dead-letter topic's
    "/aeromq.v1.ConsumerGroupService/ConsumerSendBack": _send_back,
    "/aeromq.v1.ConsumerGroupService/CreateRetryTopic": _group_sub,
    "/aeromq.v1.ConsumerGroupService/LockBatchMQ": _group_and_topic(_SUB),
    "/aeromq.v1.ConsumerGroupService/UnlockBatchMQ": _group_and_topic(_SUB),
    "/aeromq.v1.TransactionService/EndTransaction": _end_transaction,
    "/aeromq.v1.TransactionService/PollTransactionChecks": _transaction_checks,
}
"""Full RPC name -> the (kind, name, permission) its request needs. ``topic:*`` with admin
stands for "an administrator": a rule ``*`` or ``topic:*`` granting admin."""


class AclInterceptor(grpc.aio.ServerInterceptor):
    """Authenticates and authorises calls to aeromq services (see module)."""

    def __init__(self, acl: Acl) -> None:
        self.acl = acl

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[_RpcHandler | None]],
        details: grpc.HandlerCallDetails,
    ) -> _RpcHandler | None:
        handler = await continuation(details)
        method = details.method
        if handler is None or not method.startswith(_GUARDED_PREFIXES):
            return handler
        metadata = dict(details.invocation_metadata or ())
        user = str(metadata.get(USER_METADATA, ""))
        why = self.acl.authenticate(user, str(metadata.get(SECRET_METADATA, "")))
        if why is not None:
            return _refused(handler, grpc.StatusCode.UNAUTHENTICATED, f"{why} rpc={method}")
        if method == _MEMBERSHIP_STREAM:
            return _checked_stream(handler, self.acl, user, method)
        needs = RPC_PERMISSIONS.get(method)
        if needs is None or handler.unary_unary is None:
            return handler
        return _checked(handler, self.acl, user, method, needs)


def _refused(
    handler: _Handler[_Request, _Response], code: grpc.StatusCode, why: str
) -> _Handler[_Request, _Response]:
    _log.warning("gRPC call refused: %s", why)

    async def abort(
        request: _Request, context: grpc.aio.ServicerContext[_Request, _Response]
    ) -> None:
        await context.abort(code, why)

    if handler.stream_stream is not None:
        make = grpc.stream_stream_rpc_method_handler
    elif handler.unary_stream is not None:
        make = grpc.unary_stream_rpc_method_handler
    elif handler.stream_unary is not None:
        make = grpc.stream_unary_rpc_method_handler
    else:
        make = grpc.unary_unary_rpc_method_handler
    return make(
        abort,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


def _checked(
    handler: _Handler[_Request, _Response],
    acl: Acl,
    user: str,
    method: str,
    needs: Callable[[_Request], list[Need]],
) -> _Handler[_Request, _Response]:
    behaviour = handler.unary_unary
    assert behaviour is not None  # the caller checked: a unary call

    async def checked(
        request: _Request, context: grpc.aio.ServicerContext[_Request, _Response]
    ) -> _Response:
        for kind, name, permission in needs(request):
            why = acl.refusal(user, kind, name, permission)
            if why is not None:
                _log.warning("gRPC call refused: %s rpc=%s", why, method)
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{why} rpc={method}")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, behaviour, request, context)  # type: ignore[arg-type]  # the aio server hands sync servicers its aio context too

    return grpc.unary_unary_rpc_method_handler(
        checked,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


def _checked_stream(
    handler: _Handler[_Heartbeat, _Membership], acl: Acl, user: str, method: str
) -> _Handler[_Heartbeat, _Membership]:
    """The membership stream: each heartbeat's groups need sub; the first refused heartbeat
    ends the stream with PERMISSION_DENIED (it never reaches the group manager)."""
    behaviour: Callable[
        [AsyncIterator[_Heartbeat], grpc.aio.ServicerContext[_Heartbeat, _Membership]],
        AsyncIterator[_Membership],
    ] = handler.stream_stream  # type: ignore[assignment]  # an aio servicer's: grpc's stubs type the sync one

    async def checked(
        requests: AsyncIterator[_Heartbeat],
        context: grpc.aio.ServicerContext[_Heartbeat, _Membership],
    ) -> AsyncIterator[_Membership]:
        refused: list[str] = []

        async def allowed() -> AsyncIterator[_Heartbeat]:
            async for request in requests:
                for kind, name, permission in _heartbeat_groups(request):
                    why = acl.refusal(user, kind, name, permission)
                    if why is not None:
                        refused.append(f"{why} rpc={method}")
                        return
                yield request

        async for response in behaviour(allowed(), context):
            if refused:
                break
            yield response
        if refused:
            _log.warning("gRPC call refused: %s", refused[0])
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refused[0])

    return grpc.stream_stream_rpc_method_handler(
        checked,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )
