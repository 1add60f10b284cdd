"""Messages in and out of the store, their hosts and offset message ids.

``InboundMessage`` is what ``put_messages`` takes (tests and tools; the produce path hands the
store record batches); ``StoredMessage`` is what ``get_messages`` and the lookups decode
(RocketMQ's ``MessageExtBrokerInner`` and ``MessageExt``). Properties travel in
RocketMQ's string form, ``name \\x01 value \\x02`` repeated, UTF-8 encoded; the property names,
that codec, the tag hash and the offset message id's layout are shared with the clients and
defined once in ``aeromq.common``. No I/O here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from aeromq.broker._errors import InvalidArgumentError
from aeromq.common import (
    KEY_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    IllegalArgumentError,
    decode_offset_message_id,
    encode_offset_message_id,
    pack_host_field,
    unpack_host_field,
)

__all__ = [
    "EMPTY_HOST",
    "InboundMessage",
    "StoredMessage",
    "create_message_id",
    "decode_message_id",
    "index_keys",
    "pack_host",
    "unpack_host",
]

EMPTY_HOST = bytes(8)


def pack_host(host: str) -> bytes:
    """``"a.b.c.d:port"`` as an 8-byte host field of a batch (IPv4 address, then i32 LE port)."""
    address, _, port = host.rpartition(":")
    try:
        return pack_host_field(address, int(port))
    except ValueError as exc:
        raise InvalidArgumentError("host must be 'a.b.c.d:port'", host=host) from exc


def unpack_host(packed: bytes) -> str:
    """The inverse of ``pack_host``."""
    ip, port = unpack_host_field(packed)
    return f"{ip}:{port}"


def index_keys(properties: Mapping[str, str]) -> list[str]:
    """The keys a message is indexed under: each of ``KEYS`` and its ``UNIQ_KEY``."""
    keys = properties.get(PROPERTY_KEYS)
    unique = properties.get(PROPERTY_UNIQ_KEY)
    found = [k for k in keys.split(KEY_SEPARATOR) if k] if keys else []
    if unique:
        found.append(unique)
    return found


def create_message_id(store_host: bytes, physical_offset: int) -> str:
    """RocketMQ's offset message id (:func:`~common.encode_offset_message_id`) of a packed
    store host (:func:`pack_host`) and a commit log offset."""
    host, port = unpack_host_field(store_host)
    try:
        return encode_offset_message_id(host, port, physical_offset)
    except IllegalArgumentError as exc:
        raise InvalidArgumentError(
            "not a store host and commit log offset", port=port, physical_offset=physical_offset
        ) from exc


def decode_message_id(message_id: str) -> tuple[str, int]:
    """``(store host "a.b.c.d:port", physical offset)`` of an offset message id."""
    try:
        decoded = decode_offset_message_id(message_id)
    except IllegalArgumentError as exc:
        raise InvalidArgumentError("not an offset message id", message_id=message_id) from exc
    return f"{decoded.host}:{decoded.port}", decoded.commit_log_offset


class InboundMessage:
    """A message to append: RocketMQ's ``MessageExtBrokerInner`` without the derived fields.

    ``born_host`` is the 8-byte packed form (``pack_host``); ``born_timestamp_ms`` defaults to
    now. Tags, keys and the unique key are the properties ``TAGS``, ``KEYS`` (space-separated)
    and ``UNIQ_KEY``.
    """

    __slots__ = (
        "body",
        "born_host",
        "born_timestamp_ms",
        "flag",
        "prepared_transaction_offset",
        "properties",
        "queue_id",
        "reconsume_times",
        "sys_flag",
        "topic",
    )

    def __init__(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: Mapping[str, str] | None = None,
        *,
        flag: int = 0,
        sys_flag: int = 0,
        born_timestamp_ms: int | None = None,
        born_host: bytes = EMPTY_HOST,
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.body = body
        self.properties: Mapping[str, str] = properties if properties is not None else {}
        self.flag = flag
        self.sys_flag = sys_flag
        self.born_timestamp_ms = (
            time.time_ns() // 1_000_000 if born_timestamp_ms is None else born_timestamp_ms
        )
        self.born_host = born_host
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset

    @property
    def tags(self) -> str | None:
        """The ``TAGS`` property, None without one."""
        return self.properties.get(PROPERTY_TAGS)

    def __repr__(self) -> str:
        return (
            f"InboundMessage(topic={self.topic!r}, queue_id={self.queue_id}, "
            f"body_length={len(self.body)}, properties={dict(self.properties)!r})"
        )


class StoredMessage:
    """A message read back from the commit log (RocketMQ's ``MessageExt``)."""

    __slots__ = (
        "body",
        "body_crc",
        "born_host",
        "born_timestamp_ms",
        "flag",
        "physical_offset",
        "prepared_transaction_offset",
        "properties",
        "queue_id",
        "queue_offset",
        "reconsume_times",
        "store_host",
        "store_size",
        "store_timestamp_ms",
        "sys_flag",
        "topic",
    )

    def __init__(
        self,
        *,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: dict[str, str],
        flag: int,
        sys_flag: int,
        queue_offset: int,
        physical_offset: int,
        store_size: int,
        body_crc: int,
        born_timestamp_ms: int,
        born_host: bytes,
        store_timestamp_ms: int,
        store_host: bytes,
        reconsume_times: int,
        prepared_transaction_offset: int,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.body = body
        self.properties = properties
        self.flag = flag
        self.sys_flag = sys_flag
        self.queue_offset = queue_offset
        self.physical_offset = physical_offset
        self.store_size = store_size
        self.body_crc = body_crc
        self.born_timestamp_ms = born_timestamp_ms
        self.born_host = born_host
        self.store_timestamp_ms = store_timestamp_ms
        self.store_host = store_host
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset

    @property
    def tags(self) -> str | None:
        """The ``TAGS`` property, None without one."""
        return self.properties.get(PROPERTY_TAGS)

    @property
    def keys(self) -> list[str]:
        """The ``KEYS`` property split on :data:`KEY_SEPARATOR` (empty keys dropped)."""
        value = self.properties.get(PROPERTY_KEYS)
        return [k for k in value.split(KEY_SEPARATOR) if k] if value else []

    @property
    def unique_key(self) -> str | None:
        """The producer's unique id (the ``UNIQ_KEY`` property), None without one."""
        return self.properties.get(PROPERTY_UNIQ_KEY)

    @property
    def message_id(self) -> str:
        """The offset message id (store host and commit log offset), as RocketMQ's."""
        return create_message_id(self.store_host, self.physical_offset)

    def __repr__(self) -> str:
        return (
            f"StoredMessage(topic={self.topic!r}, queue_id={self.queue_id}, "
            f"queue_offset={self.queue_offset}, physical_offset={self.physical_offset}, "
            f"body_length={len(self.body)}, properties={self.properties!r})"
        )
