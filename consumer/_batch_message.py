"""``BatchMessageExt``: one pulled message, read from its column chunk when a field is asked.

A :class:`~consumer.MessageBatch` read as a sequence gives these: each is a
:class:`~client.MessageExt` over its :class:`~common.record_batch.PulledChunk` and its index
there, whose fields (body, tags, properties, offsets, hosts, timestamps) are read from the
chunk's columns and buffer on first use, the per-chunk Python lists made once for all its
messages; a field set on the message is kept on it. Caller: the consumer's ``poll``, hooks and
listeners, the application.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from aeromq.client import MessageExt
from aeromq.client.message import HostAddress
from aeromq.common import PROPERTY_TAGS, PROPERTY_UNIQ_KEY, encode_offset_message_id
from aeromq.common.record_batch import PulledChunk, join_tag, unpack_host_field

__all__ = ["BatchMessageExt", "unpack_host"]


@lru_cache(maxsize=1024)
def unpack_host(packed: bytes) -> HostAddress:
    """A batch's 8-byte host field (IPv4 address, i32 port) as ``(ip, port)``."""
    return unpack_host_field(packed)


_FIELD_DOCS = {
    "topic": "The topic of the pulled queue.",
    "body": "The message's body (bytes), sliced out of the batch on first use.",
    "flag": "The producer's ``flag`` (RocketMQ's int flag; 0 when not set).",
    "queue_id": "The id of the pulled queue on its broker.",
    "queue_offset": "The message's offset in its queue (the key of ``seek`` and ``commit``).",
    "commit_log_offset": "The message's offset in the broker's commit log.",
    "store_size": "The bytes the record takes in its batch: its column values (28) and its"
    " body, tag and properties.",
    "sys_flag": "The batch's attributes (RocketMQ's ``sysFlag``).",
    "born_timestamp_ms": "When the producer made the message (epoch ms).",
    "born_host": "The producer's ``(ip, port)``.",
    "store_timestamp_ms": "When the broker stored the message's batch (epoch ms).",
    "store_host": "The storing broker's ``(ip, port)``.",
    "reconsume_times": "RocketMQ's ``reconsumeTimes`` as the sender wrote it in the batch (0 for"
    " a first send).",
}
"""The docstring of each field property (``_field``): what the field holds, with its unit."""


# a property standing for MessageExt's attribute of that name: its type
def _field(name: str, read: Callable[[BatchMessageExt], object]) -> Any:
    """A field read from the chunk, unless set on the message."""

    def get(self: BatchMessageExt) -> Any:
        overrides = self._overrides
        if overrides is not None and name in overrides:
            return overrides[name]
        return read(self)

    def set_(self: BatchMessageExt, value: object) -> None:
        if self._overrides is None:
            self._overrides = {}
        self._overrides[name] = value

    return property(get, set_, doc=_FIELD_DOCS[name])


def _body(m: BatchMessageExt) -> bytes:
    return m._chunk.body_list()[m._i]


def _header_value(name: str) -> Callable[[BatchMessageExt], object]:
    def read(m: BatchMessageExt) -> object:
        chunk = m._chunk
        return chunk.values(name, lambda: chunk.header(name))[m._i]

    return read


def _host(name: str) -> Callable[[BatchMessageExt], HostAddress]:
    def read(m: BatchMessageExt) -> HostAddress:
        chunk = m._chunk
        batch = chunk.values("batch", lambda: chunk.batch)[m._i]
        return unpack_host(chunk.headers[name][batch].tobytes())

    return read


class BatchMessageExt(MessageExt):
    """One pulled message: a :class:`~client.MessageExt` whose fields are read from its
    :class:`~common.record_batch.PulledChunk` when asked (and kept, when set)."""

    __slots__ = ("_broker", "_chunk", "_i", "_overrides", "_props")

    _chunk: PulledChunk
    _i: int
    _broker: str
    _props: dict[str, str] | None
    _overrides: dict[str, object] | None

    @classmethod
    def wrap(cls, chunk: PulledChunk, i: int) -> BatchMessageExt:
        """The message at index ``i`` of ``chunk`` (nothing read yet)."""
        message = object.__new__(cls)
        message._chunk = chunk
        message._i = i
        message._broker = chunk.broker_name
        message._props = None
        message._overrides = None
        return message

    topic = _field("topic", lambda m: m._chunk.queue.topic)
    body = _field("body", _body)
    flag = _field("flag", lambda m: m._chunk.values("flag", lambda: m._chunk.flag)[m._i])
    queue_id = _field("queue_id", lambda m: m._chunk.queue.queue_id)
    queue_offset = _field(
        "queue_offset", lambda m: m._chunk.values("qo", lambda: m._chunk.queue_offsets)[m._i]
    )
    commit_log_offset = _field(
        "commit_log_offset",
        lambda m: m._chunk.values("clo", lambda: m._chunk.commit_log_offsets)[m._i],
    )
    store_size = _field("store_size", lambda m: m._store_size())
    sys_flag = _field("sys_flag", _header_value("attributes"))
    born_timestamp_ms = _field(
        "born_timestamp_ms",
        lambda m: m._chunk.values("born", lambda: m._chunk.born_timestamps_ms)[m._i],
    )
    born_host = _field("born_host", _host("born_host"))
    store_timestamp_ms = _field("store_timestamp_ms", _header_value("store_timestamp_ms"))
    store_host = _field("store_host", _host("store_host"))
    reconsume_times = _field("reconsume_times", _header_value("reconsume_times"))

    @property
    def broker_name(self) -> str:
        """The name of the broker the message was pulled from."""
        return self._broker

    @broker_name.setter
    def broker_name(self, value: str) -> None:
        self._broker = value

    def _store_size(self) -> int:
        """The bytes the record takes in its batch: its column values and variable parts."""
        chunk, i = self._chunk, self._i
        return 28 + int(chunk.body_length[i] + chunk.tag_length[i] + chunk.properties_length[i])

    def _tag(self) -> str | None:
        chunk, i = self._chunk, self._i
        length = chunk.values("tag_length", lambda: chunk.tag_length)[i]
        if not length:
            return None
        start = chunk.values("tag_start", lambda: chunk.tag_start)[i]
        return chunk.buffer[start : start + length].decode()

    @property
    def tags(self) -> str | None:
        if self._props is None:
            return self._tag()
        return self._props.get(PROPERTY_TAGS)

    @property
    def _properties(self) -> dict[str, str]:
        props = self._props
        if props is None:
            chunk, i = self._chunk, self._i
            start = chunk.values("properties_start", lambda: chunk.properties_start)[i]
            length = chunk.values("properties_length", lambda: chunk.properties_length)[i]
            props = self._props = join_tag(chunk.buffer[start : start + length], self._tag())
        return props

    @_properties.setter
    def _properties(self, value: dict[str, str]) -> None:
        self._props = value

    @property
    def body_crc(self) -> int:
        """CRC-32 of the body (RocketMQ's ``bodyCRC``)."""
        return zlib.crc32(self.body)

    @property
    def offset_msg_id(self) -> str:
        host, port = self.store_host
        return encode_offset_message_id(host, port, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        return self._properties.get(PROPERTY_UNIQ_KEY) or self.offset_msg_id

    def __eq__(self, other: object) -> bool:
        """Equal to any ``MessageExt`` (pulled or not) with the same fields."""
        if not isinstance(other, MessageExt):
            return NotImplemented
        return self._eq_key() == other._eq_key()

    __hash__ = None  # type: ignore[assignment]  # mutable, equal to any MessageExt: unhashable
