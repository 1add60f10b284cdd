"""The broker's durable message store: commit log, consume queues, index, flush, checkpoint,
recovery, retention, consumer offsets and topic config, behind ``MessageStore``."""

from aeromq.broker.store._arrival import ArrivalListener
from aeromq.broker.store._config import FlushMode, StoreConfig
from aeromq.broker.store._consumer_offsets import ConsumerOffsetManager
from aeromq.broker.store._message import (
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    InboundMessage,
    StoredMessage,
    create_message_id,
    decode_message_id,
    pack_host,
    tag_hash,
    unpack_host,
)
from aeromq.broker.store._message_store import MessageStore
from aeromq.broker.store._recovery import RecoveryReport
from aeromq.broker.store._results import (
    BoundaryType,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)
from aeromq.broker.store._retention import RetentionReport
from aeromq.broker.store._topic_config import (
    PERM_INHERIT,
    PERM_PRIORITY,
    PERM_READ,
    PERM_WRITE,
    TopicConfig,
    TopicConfigManager,
    TopicFilterType,
)

__all__ = [
    "PERM_INHERIT",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_WRITE",
    "PROPERTY_KEYS",
    "PROPERTY_TAGS",
    "PROPERTY_UNIQ_KEY",
    "ArrivalListener",
    "BoundaryType",
    "ConsumerOffsetManager",
    "FlushMode",
    "GetMessageResult",
    "GetMessageStatus",
    "InboundMessage",
    "MessageStore",
    "PutMessageResult",
    "PutMessageStatus",
    "RecoveryReport",
    "RetentionReport",
    "StoreConfig",
    "StoredMessage",
    "TopicConfig",
    "TopicConfigManager",
    "TopicFilterType",
    "create_message_id",
    "decode_message_id",
    "pack_host",
    "tag_hash",
    "unpack_host",
]
