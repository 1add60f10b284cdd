"""Messages between the protocol and the store: ``apache.rocketmq.v2.Message`` to an
:class:`~broker.store.InboundMessage` (send) and a :class:`~broker.store.StoredMessage` back
to a ``Message`` (receive). No I/O here.

A v2 message's system properties travel in the store as RocketMQ's own properties: the tag as
``TAGS``, keys as ``KEYS`` (space-separated), the client's message id as ``UNIQ_KEY``, a FIFO
message group as ``__SHARDINGKEY``; user properties keep their names, and may not take a name
RocketMQ reserves. So aeromq's own clients read what RocketMQ 5 clients send, and the other
way round (a message without ``UNIQ_KEY`` gets its offset message id).
"""

from __future__ import annotations

import zlib
from typing import Final

from aeromq.broker.rocketmq._status import ProtocolStatusError
from aeromq.broker.store import InboundMessage, StoredMessage, create_message_id
from aeromq.common import (
    KEY_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    RESERVED_PROPERTY_NAMES,
)
from aeromq.proto.apache.rocketmq.v2 import definition_pb2

__all__ = ["PROPERTY_MESSAGE_GROUP", "body_digest", "message_id_of", "to_inbound", "to_v2_message"]

_TIMER_OUT_MS = "TIMER_OUT_MS"

Code = definition_pb2.Code

PROPERTY_MESSAGE_GROUP: Final = "__SHARDINGKEY"
"""RocketMQ's property of a FIFO message's group (``MessageConst.PROPERTY_SHARDING_KEY``)."""

_SYSTEM_NAMES: Final = RESERVED_PROPERTY_NAMES | {PROPERTY_MESSAGE_GROUP}


def to_inbound(message: definition_pb2.Message, queue_id: int, born_host: bytes) -> InboundMessage:
    """The store's form of a v2 message for ``queue_id``; raises ProtocolStatusError for a
    user property named as a system one."""
    properties: dict[str, str] = {}
    for name, value in message.user_properties.items():
        if name in _SYSTEM_NAMES:
            raise ProtocolStatusError(
                Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                "a user property may not take a system property's name",
                property=name,
            )
        properties[name] = value
    system = message.system_properties
    if system.HasField("tag") and system.tag:
        properties[PROPERTY_TAGS] = system.tag
    keys = [key for key in system.keys if key]
    if keys:
        properties[PROPERTY_KEYS] = KEY_SEPARATOR.join(keys)
    if system.message_id:
        properties[PROPERTY_UNIQ_KEY] = system.message_id
    if system.HasField("message_group") and system.message_group:
        properties[PROPERTY_MESSAGE_GROUP] = system.message_group
    born_ms = system.born_timestamp.ToMilliseconds() if system.HasField("born_timestamp") else None
    return InboundMessage(
        message.topic.name,
        queue_id,
        message.body,
        properties,
        born_timestamp_ms=born_ms or None,
        born_host=born_host,
    )


def body_digest(body: bytes) -> definition_pb2.Digest:
    """The CRC32 digest clients check a received body against (upper-case hex)."""
    return definition_pb2.Digest(type=definition_pb2.CRC32, checksum=f"{zlib.crc32(body):08X}")


def message_id_of(stored: StoredMessage) -> str:
    """The client's message id (``UNIQ_KEY``), else the stored message's offset message id."""
    unique = stored.properties.get(PROPERTY_UNIQ_KEY)
    return unique or create_message_id(stored.store_host, stored.physical_offset)


def to_v2_message(
    stored: StoredMessage,
    *,
    namespace: str,
    receipt_handle: str,
    attempt: int,
    invisible_ms: int,
    store_host: str,
) -> definition_pb2.Message:
    """A received message as the client reads it, with its receipt handle and attempt."""
    properties = stored.properties
    message = definition_pb2.Message(body=stored.body)
    message.topic.name = stored.topic
    message.topic.resource_namespace = namespace
    for name, value in properties.items():
        if name not in _SYSTEM_NAMES:
            message.user_properties[name] = value
    system = message.system_properties
    tag = properties.get(PROPERTY_TAGS)
    if tag:
        system.tag = tag
    keys = properties.get(PROPERTY_KEYS)
    if keys:
        system.keys.extend(k for k in keys.split(KEY_SEPARATOR) if k)
    group = properties.get(PROPERTY_MESSAGE_GROUP)
    system.message_type = definition_pb2.FIFO if group else definition_pb2.NORMAL
    if group:
        system.message_group = group
    due = properties.get(_TIMER_OUT_MS)  # put back by the broker's timer (broker.timer)
    if due and not group:
        system.message_type = definition_pb2.DELAY
        system.delivery_timestamp.FromMilliseconds(int(due))
    system.message_id = message_id_of(stored)
    system.body_digest.CopyFrom(body_digest(stored.body))
    system.body_encoding = definition_pb2.IDENTITY
    system.born_timestamp.FromMilliseconds(stored.born_timestamp_ms)
    system.store_timestamp.FromMilliseconds(stored.store_timestamp_ms)
    system.store_host = store_host
    system.receipt_handle = receipt_handle
    system.queue_id = stored.queue_id
    system.queue_offset = stored.queue_offset
    system.invisible_duration.FromMilliseconds(invisible_ms)
    system.delivery_attempt = attempt
    return message
