"""``WireMessageExt``: a :class:`~client.MessageExt` that reads its fields from the wire message.

Converting every pulled ``messages_pb2.MessageExt`` field by field into a ``MessageExt`` costs
about 6 us per message in CPython (each protobuf field read is a C call), more than the rest of
the consumer's per-message work together. This subclass keeps the protobuf message and reads
a field only when asked (about 0.2 us each); the properties map (with ``TAGS``, ``KEYS`` and a
unique ``UNIQ_KEY`` put back from their wire fields) is built on first use. It is a
``MessageExt`` in every other way: ``msg_id``, ``queue``, properties, and equality (with a plain
``MessageExt`` of the same fields too).

Fields are read-only, except that setting one stores a local value (as a plain ``MessageExt``
allows).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from aeromq.client import MessageExt
from aeromq.client.message import HostAddress
from aeromq.common import PROPERTY_KEYS, PROPERTY_TAGS, PROPERTY_UNIQ_KEY
from aeromq.proto import messages_pb2

__all__ = ["WireMessageExt", "parse_host"]


@lru_cache(maxsize=1024)
def parse_host(text: str) -> HostAddress:
    """``"ip:port"`` (or ``"[v6]:port"``) as ``(ip, port)``; a text without port gets 0."""
    host, _, port = text.rpartition(":")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        return text, 0


def _wire_field(name: str, convert: Callable[[Any], Any] | None = None) -> property:
    local = f"_local_{name}"

    def get(self: WireMessageExt) -> Any:
        overrides = self._overrides
        if overrides is not None and local in overrides:
            return overrides[local]
        value = getattr(self._wire, name)
        return convert(value) if convert is not None else value

    def set_(self: WireMessageExt, value: Any) -> None:
        if self._overrides is None:
            self._overrides = {}
        self._overrides[local] = value

    return property(get, set_)


class WireMessageExt(MessageExt):
    """A pulled message over its wire form (see the module doc)."""

    __slots__ = ("_broker", "_overrides", "_props", "_wire")

    _wire: messages_pb2.MessageExt
    _broker: str
    _props: dict[str, str] | None
    _overrides: dict[str, Any] | None

    @classmethod
    def wrap(cls, wire: messages_pb2.MessageExt, broker_name: str) -> WireMessageExt:
        message = object.__new__(cls)
        message._wire = wire
        message._broker = broker_name
        message._props = None
        message._overrides = None
        return message

    topic = _wire_field("topic")
    body = _wire_field("body")
    flag = _wire_field("flag")
    queue_id = _wire_field("queue_id")
    queue_offset = _wire_field("queue_offset")
    commit_log_offset = _wire_field("commit_log_offset")
    store_size = _wire_field("store_size")
    sys_flag = _wire_field("sys_flag")
    born_timestamp_ms = _wire_field("born_timestamp_ms")
    born_host = _wire_field("born_host", parse_host)
    store_timestamp_ms = _wire_field("store_timestamp_ms")
    store_host = _wire_field("store_host", parse_host)
    reconsume_times = _wire_field("reconsume_times")

    @property
    def broker_name(self) -> str:
        return self._wire.broker_name or self._broker

    @broker_name.setter
    def broker_name(self, value: str) -> None:
        self._broker = value

    @property
    def tags(self) -> str | None:
        if self._props is None:
            return self._wire.tags or None
        return self._props.get(PROPERTY_TAGS)

    @property
    def _properties(self) -> dict[str, str]:
        props = self._props
        if props is None:
            wire = self._wire
            props = dict(wire.properties) if wire.properties else {}
            if wire.tags:
                props[PROPERTY_TAGS] = wire.tags
            if wire.keys:
                props[PROPERTY_KEYS] = " ".join(wire.keys)
            if wire.msg_id and wire.msg_id != wire.offset_msg_id:
                props[PROPERTY_UNIQ_KEY] = wire.msg_id
            self._props = props
        return props

    @_properties.setter
    def _properties(self, value: dict[str, str]) -> None:
        self._props = value

    def __eq__(self, other: object) -> bool:
        """Equal to any ``MessageExt`` (wire or not) with the same fields."""
        if not isinstance(other, MessageExt):
            return NotImplemented
        return self._eq_key() == other._eq_key()

    __hash__ = None  # type: ignore[assignment]

    @property
    def offset_msg_id(self) -> str:
        return self._wire.offset_msg_id or super().offset_msg_id

    @property
    def msg_id(self) -> str:
        return self._wire.msg_id or self.offset_msg_id
