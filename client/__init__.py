"""aeromq's client side, shared by producers and consumers: the message model (``Message``,
``MessageExt``, ``MessageQueue``), the gRPC stub wrapper (``GrpcClient``), routes
(``RouteResolver``), the request/response session with a broker over the transport
(``ClientSession``), one session per broker (``BrokerSessions``), following a broker group's
leader when it moves (``client.failover``, ``RouteResolver.follow_leader``), and a client's
optional ``/metrics`` for Prometheus (``serve_metrics``).

What the broker applies too (the error tree with its wire codes, ``ResponseCode``, subscription
expressions, message ids, validation with RocketMQ's rules) is defined in ``aeromq.common`` and
re-exported here, so that a client needs one import.
"""

from aeromq.client._hooks import call_hooks
from aeromq.client._metrics_http import MetricsServer, metric_meta, serve_metrics
from aeromq.client._security import ClientTls, Credentials
from aeromq.client.broker_sessions import BrokerSessions
from aeromq.client.grpc_client import GrpcClient, HeartbeatStream
from aeromq.client.message import HostAddress, Message, MessageExt, MessageQueue
from aeromq.client.route import BrokerRoute, RouteResolver, TopicRoute, parse_endpoints
from aeromq.client.session import BackPressuredError, ClientSession, SessionConfig

# Shared with the broker: defined once in ``aeromq.common``, part of the client's API here.
from aeromq.common import (
    ERROR_FOR_CODE,
    SUB_ALL,
    AccessDeniedError,
    AuthenticationError,
    BrokerBusyError,
    BrokerInternalError,
    BrokerUnavailableError,
    ClientError,
    CorruptMessageError,
    DiskFullError,
    ExpressionType,
    IllegalArgumentError,
    IllegalStateError,
    InvalidExpressionError,
    MessageIllegalError,
    MessageSelector,
    MessageTooLargeError,
    NoPermissionError,
    NotEnoughReplicasError,
    NotLeaderError,
    NotSupportedError,
    OffsetIllegalError,
    OffsetMessageId,
    OutOfOrderSequenceError,
    ReplicationTimeoutError,
    RequestTimeoutError,
    ResponseCode,
    SubscriptionData,
    TopicNotFoundError,
    UniqueMessageId,
    UniqueMessageIdGenerator,
    build_subscription_data,
    create_unique_message_id,
    decode_offset_message_id,
    decode_unique_message_id,
    encode_offset_message_id,
    encode_unique_message_id,
    error_for_code,
    parse_tag_expression,
    tag_hash_code,
)

__all__ = [
    "ERROR_FOR_CODE",
    "SUB_ALL",
    "AccessDeniedError",
    "AuthenticationError",
    "BackPressuredError",
    "BrokerBusyError",
    "BrokerInternalError",
    "BrokerRoute",
    "BrokerSessions",
    "BrokerUnavailableError",
    "ClientError",
    "ClientSession",
    "ClientTls",
    "CorruptMessageError",
    "Credentials",
    "DiskFullError",
    "ExpressionType",
    "GrpcClient",
    "HeartbeatStream",
    "HostAddress",
    "IllegalArgumentError",
    "IllegalStateError",
    "InvalidExpressionError",
    "Message",
    "MessageExt",
    "MessageIllegalError",
    "MessageQueue",
    "MessageSelector",
    "MessageTooLargeError",
    "MetricsServer",
    "NoPermissionError",
    "NotEnoughReplicasError",
    "NotLeaderError",
    "NotSupportedError",
    "OffsetIllegalError",
    "OffsetMessageId",
    "OutOfOrderSequenceError",
    "ReplicationTimeoutError",
    "RequestTimeoutError",
    "ResponseCode",
    "RouteResolver",
    "SessionConfig",
    "SubscriptionData",
    "TopicNotFoundError",
    "TopicRoute",
    "UniqueMessageId",
    "UniqueMessageIdGenerator",
    "build_subscription_data",
    "call_hooks",
    "create_unique_message_id",
    "decode_offset_message_id",
    "decode_unique_message_id",
    "encode_offset_message_id",
    "encode_unique_message_id",
    "error_for_code",
    "metric_meta",
    "parse_endpoints",
    "parse_tag_expression",
    "serve_metrics",
    "tag_hash_code",
]
