"""The broker's durable message store: commit log, consume queues, index, flush, checkpoint,
recovery, retention, consumer offsets and topic config, behind ``MessageStore``; a single
broker's, or a broker group member's (``StoreConfig.replicated``: the committed offset, a
follower's appends and truncation, metadata through the log). A batch marked ``TIMER_FLAG``
goes through ``MessageStore.timer_redirect`` first (``broker.timer``)."""

from aeromq.broker.store._arrival import ArrivalListener
from aeromq.broker.store._atomic_file import read_json, write_atomically, write_json_atomically
from aeromq.broker.store._config import FlushMode, StoreConfig
from aeromq.broker.store._consumer_offsets import ConsumerOffsetManager, OffsetCorrection
from aeromq.broker.store._fsync_ledger import FSYNC_LEDGER_ENV, FSYNC_LEDGER_FILE
from aeromq.broker.store._message import (
    InboundMessage,
    StoredMessage,
    create_message_id,
    decode_message_id,
    pack_host,
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
from aeromq.broker.store._topic_config import TopicConfig, TopicConfigManager, TopicFilterType

__all__ = [
    "FSYNC_LEDGER_ENV",
    "FSYNC_LEDGER_FILE",
    "ArrivalListener",
    "BoundaryType",
    "ConsumerOffsetManager",
    "FlushMode",
    "GetMessageResult",
    "GetMessageStatus",
    "InboundMessage",
    "MessageStore",
    "OffsetCorrection",
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
    "read_json",
    "unpack_host",
    "write_atomically",
    "write_json_atomically",
]
