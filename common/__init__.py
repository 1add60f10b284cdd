"""What the broker and the clients share: wire codes, names, rules and the session codec.

The layer under ``broker`` and ``client`` (above ``transport`` and ``proto``): every rule that
both ends of a connection must apply alike lives here once, and neither end keeps a copy. No
I/O here.

- ``_response_code``: :class:`ResponseCode`, the status of a broker response (RocketMQ's numbers).
- ``_errors``: the errors a client sees, one root (:class:`ClientError`), each with its wire
  code, and :func:`error_for_code`, the one table from codes to classes.
- ``_properties``: the reserved property names (``TAGS``, ``KEYS``, ``UNIQ_KEY``, ``WAIT``, ...),
  the separators of the stored property string and its codec.
- ``_permission``: a topic's permission bits (``PERM_READ``, ``PERM_WRITE``, ...).
- ``_validators``: name rules (topics, groups, system topics), the default maximum message size
  and the checks of a message's parts (body, tags, keys, user properties).
- ``_java_string``: Java's ``String.hashCode`` and ``compareTo`` order.
- ``_tags``: subscription expressions and the tag hash the consume queue stores
  (:func:`tag_hash_code`).
- ``_sql92``: RocketMQ's SQL92 property filter, compiled once (:func:`compile_sql92`); its lexer
  (``_sql92_lexer``) and value semantics (``_sql92_values``) beside it.
- ``_message_id``: RocketMQ's two message ids, the producer's unique id and the broker's offset
  id.
- ``_envelope``: the session envelope codec and the session protocol's constants.
- ``_pull_answer``: :class:`PullAnswer`, a pull's control fields beside its record batches.
- ``_queue_holders``: :class:`QueueHolders`, which member of a group holds each queue (the
  broker's half of a rebalance hand-over: acquire before the first pull, release on commit).
- ``_latency``: :class:`LatencyHistogram`, durations in fixed buckets, for the broker's and the
  clients' metrics.
- ``record_batch``: the record batch, the one binary form of messages from the producer's
  send through the commit log to the consumer's pull (a public subpackage: its layout, its C
  passes and their Python references, the pull-answer reader); the names below are its most
  used, re-exported.
"""

from __future__ import annotations

from aeromq.common._credentials import SECRET_METADATA, USER_METADATA
from aeromq.common._envelope import (
    ANSWER_TOO_LONG,
    CORRELATION_ID_FIELD,
    DEFAULT_INGRESS_STREAM_ID,
    ENVELOPE_HEAD_MAX_LENGTH,
    IPC_SESSION_MTU,
    RAW_SECTION_FIELD,
    REQUEST_FIELD_NUMBERS,
    RESPONSE_FIELD_NUMBERS,
    SESSION_CLOSED_CODE,
    SESSION_ID_FIELD,
    SESSION_PROTOCOL_VERSION,
    RawSection,
    encode_envelope,
    encode_envelope_around,
    raw_section_past_message,
    salvage_envelope_ids,
    split_raw_section,
    with_ipc_mtu,
)
from aeromq.common._errors import (
    ERROR_FOR_CODE,
    AccessDeniedError,
    AuthenticationError,
    BrokerBusyError,
    BrokerInternalError,
    BrokerUnavailableError,
    ClientError,
    CorruptMessageError,
    DiskFullError,
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
from aeromq.common._java_string import (
    compare_key,
    hash_code,
)
from aeromq.common._latency import (
    DEFAULT_LATENCY_BUCKETS_S,
    LatencyHistogram,
    LatencySnapshot,
)
from aeromq.common._message_id import (
    IPV6_EXTRA_LENGTH,
    OFFSET_COMMIT_LOG_OFFSET_OFFSET,
    OFFSET_HOST_OFFSET,
    OFFSET_MESSAGE_ID_LENGTH,
    OFFSET_PORT_OFFSET,
    UNIQUE_CLIENT_HASH_OFFSET,
    UNIQUE_COUNTER_OFFSET,
    UNIQUE_IP_OFFSET,
    UNIQUE_MESSAGE_ID_LENGTH,
    UNIQUE_PID_OFFSET,
    UNIQUE_TIME_OFFSET,
    OffsetMessageId,
    UniqueMessageId,
    UniqueMessageIdGenerator,
    create_unique_message_id,
    decode_offset_message_id,
    decode_unique_message_id,
    encode_offset_message_id,
    encode_unique_message_id,
    unique_message_id_time_ms,
)
from aeromq.common._native import NATIVE_MODULES, missing_native_modules
from aeromq.common._permission import (
    PERM_INHERIT,
    PERM_PRIORITY,
    PERM_READ,
    PERM_READ_WRITE,
    PERM_WRITE,
    is_readable,
    is_writeable,
)
from aeromq.common._properties import (
    KEY_SEPARATOR,
    NAME_VALUE_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_SEPARATOR,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    PROPERTY_WAIT_STORE_MSG_OK,
    RESERVED_PROPERTY_NAMES,
    decode_properties,
    encode_properties,
)
from aeromq.common._pull_answer import PullAnswer
from aeromq.common._queue_holders import QueueHolders
from aeromq.common._response_code import (
    ResponseCode,
)
from aeromq.common._sql92 import Sql92Filter, compile_sql92
from aeromq.common._tags import (
    SUB_ALL,
    ExpressionType,
    MessageSelector,
    SubscriptionData,
    build_subscription_data,
    parse_tag_expression,
    tag_hash_code,
)
from aeromq.common._validators import (
    DEFAULT_MAX_MESSAGE_SIZE,
    GROUP_MAX_LENGTH,
    NOT_ALLOWED_SEND_TOPICS,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
    TOPIC_MAX_LENGTH,
    VALID_NAME_PATTERN,
    check_body,
    check_group,
    check_key,
    check_topic,
    check_topic_sendable,
    check_user_property,
    is_system_topic,
    is_valid_group_name,
    is_valid_topic_name,
    tag_problem,
)
from aeromq.common.record_batch import (
    BATCH_MAGIC,
    FIXED_HEADER_LENGTH,
    HEADER_DTYPE,
    HEADER_STRUCT,
    MAX_FRAMING_BYTES,
    RECORD_OVERHEAD,
    BatchCheck,
    RecordBatch,
    batch_header_length,
    check_batch,
    columns_struct,
    encode_batch,
    join_tag,
    merge_batches,
    pack_host_field,
    patch_batch,
    read_total_length,
    split_tag,
    stored_properties,
    unpack_host_field,
)

__all__ = [
    "ANSWER_TOO_LONG",
    "BATCH_MAGIC",
    "CORRELATION_ID_FIELD",
    "DEFAULT_INGRESS_STREAM_ID",
    "DEFAULT_LATENCY_BUCKETS_S",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "ENVELOPE_HEAD_MAX_LENGTH",
    "ERROR_FOR_CODE",
    "FIXED_HEADER_LENGTH",
    "GROUP_MAX_LENGTH",
    "HEADER_DTYPE",
    "HEADER_STRUCT",
    "IPC_SESSION_MTU",
    "IPV6_EXTRA_LENGTH",
    "KEY_SEPARATOR",
    "MAX_FRAMING_BYTES",
    "NAME_VALUE_SEPARATOR",
    "NATIVE_MODULES",
    "NOT_ALLOWED_SEND_TOPICS",
    "OFFSET_COMMIT_LOG_OFFSET_OFFSET",
    "OFFSET_HOST_OFFSET",
    "OFFSET_MESSAGE_ID_LENGTH",
    "OFFSET_PORT_OFFSET",
    "PERM_INHERIT",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_READ_WRITE",
    "PERM_WRITE",
    "PROPERTY_KEYS",
    "PROPERTY_SEPARATOR",
    "PROPERTY_TAGS",
    "PROPERTY_UNIQ_KEY",
    "PROPERTY_WAIT_STORE_MSG_OK",
    "RAW_SECTION_FIELD",
    "RECORD_OVERHEAD",
    "REQUEST_FIELD_NUMBERS",
    "RESERVED_PROPERTY_NAMES",
    "RESPONSE_FIELD_NUMBERS",
    "SECRET_METADATA",
    "SESSION_CLOSED_CODE",
    "SESSION_ID_FIELD",
    "SESSION_PROTOCOL_VERSION",
    "SUB_ALL",
    "SYSTEM_TOPICS",
    "SYSTEM_TOPIC_PREFIX",
    "TOPIC_MAX_LENGTH",
    "UNIQUE_CLIENT_HASH_OFFSET",
    "UNIQUE_COUNTER_OFFSET",
    "UNIQUE_IP_OFFSET",
    "UNIQUE_MESSAGE_ID_LENGTH",
    "UNIQUE_PID_OFFSET",
    "UNIQUE_TIME_OFFSET",
    "USER_METADATA",
    "VALID_NAME_PATTERN",
    "AccessDeniedError",
    "AuthenticationError",
    "BatchCheck",
    "BrokerBusyError",
    "BrokerInternalError",
    "BrokerUnavailableError",
    "ClientError",
    "CorruptMessageError",
    "DiskFullError",
    "ExpressionType",
    "IllegalArgumentError",
    "IllegalStateError",
    "InvalidExpressionError",
    "LatencyHistogram",
    "LatencySnapshot",
    "MessageIllegalError",
    "MessageSelector",
    "MessageTooLargeError",
    "NoPermissionError",
    "NotSupportedError",
    "OffsetIllegalError",
    "OffsetMessageId",
    "PullAnswer",
    "QueueHolders",
    "RawSection",
    "RecordBatch",
    "RequestTimeoutError",
    "ResponseCode",
    "Sql92Filter",
    "SubscriptionData",
    "TopicNotFoundError",
    "UniqueMessageId",
    "UniqueMessageIdGenerator",
    "batch_header_length",
    "build_subscription_data",
    "check_batch",
    "check_body",
    "check_group",
    "check_key",
    "check_topic",
    "check_topic_sendable",
    "check_user_property",
    "columns_struct",
    "compare_key",
    "compile_sql92",
    "create_unique_message_id",
    "decode_offset_message_id",
    "decode_properties",
    "decode_unique_message_id",
    "encode_batch",
    "encode_envelope",
    "encode_envelope_around",
    "encode_offset_message_id",
    "encode_properties",
    "encode_unique_message_id",
    "error_for_code",
    "hash_code",
    "is_readable",
    "is_system_topic",
    "is_valid_group_name",
    "is_valid_topic_name",
    "is_writeable",
    "join_tag",
    "merge_batches",
    "missing_native_modules",
    "pack_host_field",
    "parse_tag_expression",
    "patch_batch",
    "raw_section_past_message",
    "read_total_length",
    "salvage_envelope_ids",
    "split_raw_section",
    "split_tag",
    "stored_properties",
    "tag_hash_code",
    "tag_problem",
    "unique_message_id_time_ms",
    "unpack_host_field",
    "with_ipc_mtu",
]
