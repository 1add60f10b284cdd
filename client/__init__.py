"""aeromq's client side, shared by producers and consumers: the message model (``Message``,
``MessageExt``, ``MessageQueue``), validation with RocketMQ's rules, subscription expressions,
message ids, and the error tree with its wire codes. Nothing here does I/O, except the gRPC stub
wrapper (``GrpcClient``) and the route lookup (``RouteResolver``) that use it, and the
request/response session with a broker over the transport (``ClientSession``).
"""

from aeromq.client._errors import (
    ERROR_FOR_CODE,
    BrokerBusyError,
    BrokerError,
    BrokerUnavailableError,
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    InvalidExpressionError,
    MessageIllegalError,
    MessageTooLargeError,
    NoPermissionError,
    NotSupportedError,
    OffsetIllegalError,
    RequestTimeoutError,
    TopicNotFoundError,
    error_for_code,
)
from aeromq.client.grpc_client import GrpcClient, HeartbeatStream
from aeromq.client.message import HostAddress, Message, MessageExt, MessageQueue
from aeromq.client.message_id import (
    OffsetMessageId,
    UniqueMessageId,
    UniqueMessageIdGenerator,
    create_unique_message_id,
    decode_offset_message_id,
    decode_unique_message_id,
    encode_offset_message_id,
    encode_unique_message_id,
)
from aeromq.client.response_code import ResponseCode
from aeromq.client.route import BrokerRoute, RouteResolver, TopicRoute
from aeromq.client.session import BrokerSessions, ClientSession, SessionConfig
from aeromq.client.tags import (
    SUB_ALL,
    ExpressionType,
    MessageSelector,
    SubscriptionData,
    build_subscription_data,
    parse_tag_expression,
    tag_hash_code,
)

__all__ = [
    "ERROR_FOR_CODE",
    "SUB_ALL",
    "BrokerBusyError",
    "BrokerError",
    "BrokerRoute",
    "BrokerSessions",
    "BrokerUnavailableError",
    "ClientError",
    "ClientSession",
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
    "NoPermissionError",
    "NotSupportedError",
    "OffsetIllegalError",
    "OffsetMessageId",
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
    "create_unique_message_id",
    "decode_offset_message_id",
    "decode_unique_message_id",
    "encode_offset_message_id",
    "encode_unique_message_id",
    "error_for_code",
    "parse_tag_expression",
    "tag_hash_code",
]
