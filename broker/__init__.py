"""aeromq's broker: the durable store (``aeromq.broker.store``) and the services on top.

The store's public API, the broker's errors and its configuration are re-exported here. What
the broker shares with the clients (response codes, property names, permission bits, name rules,
the tag hash, message ids, the session envelope) is in ``aeromq.common``. The
services live in their subpackages and are imported from there, so ``import broker`` stays
light: ``aeromq.broker.processor`` (request processors), ``aeromq.broker.grpc`` (the gRPC server),
``aeromq.broker.namesrv`` (the name server), ``aeromq.broker.rocketmq`` (RocketMQ 5 clients'
endpoint).
"""

from aeromq.broker._errors import (
    BrokerConfigError,
    BrokerError,
    BrokerStateError,
    ConfigError,
    CorruptRecordError,
    FlushTimeoutError,
    InvalidArgumentError,
    NoSpaceError,
    StoreError,
    StoreIOError,
    StoreLockedError,
    UnknownTopicError,
    error_for_code,
)
from aeromq.broker.config import BrokerConfig
from aeromq.broker.run_file import BROKER_RUN_FILE, broker_aeron_dir, write_run_file
from aeromq.broker.store import (
    ArrivalListener,
    BoundaryType,
    ConsumerOffsetManager,
    FlushMode,
    GetMessageResult,
    GetMessageStatus,
    InboundMessage,
    MessageStore,
    OffsetCorrection,
    PutMessageResult,
    PutMessageStatus,
    RecoveryReport,
    RetentionReport,
    StoreConfig,
    StoredMessage,
    TopicConfig,
    TopicConfigManager,
    TopicFilterType,
    create_message_id,
    decode_message_id,
    pack_host,
    unpack_host,
)

__all__ = [
    "BROKER_RUN_FILE",
    "ArrivalListener",
    "BoundaryType",
    "BrokerConfig",
    "BrokerConfigError",
    "BrokerError",
    "BrokerStateError",
    "ConfigError",
    "ConsumerOffsetManager",
    "CorruptRecordError",
    "FlushMode",
    "FlushTimeoutError",
    "GetMessageResult",
    "GetMessageStatus",
    "InboundMessage",
    "InvalidArgumentError",
    "MessageStore",
    "NoSpaceError",
    "OffsetCorrection",
    "PutMessageResult",
    "PutMessageStatus",
    "RecoveryReport",
    "RetentionReport",
    "StoreConfig",
    "StoreError",
    "StoreIOError",
    "StoreLockedError",
    "StoredMessage",
    "TopicConfig",
    "TopicConfigManager",
    "TopicFilterType",
    "UnknownTopicError",
    "broker_aeron_dir",
    "create_message_id",
    "decode_message_id",
    "error_for_code",
    "pack_host",
    "unpack_host",
    "write_run_file",
]
