"""Message property names and RocketMQ's stored property string.

The system values of a message (its tags, keys, unique id, ...) travel as properties under
reserved names, as in RocketMQ (``MessageConst``); user properties may take any other name.
The commit log stores the properties as one UTF-8 string::

    name \\x01 value \\x02 name \\x01 value \\x02 ...

so no name or value may contain either separator (:data:`NAME_VALUE_SEPARATOR`,
:data:`PROPERTY_SEPARATOR`). Keys are stored joined by :data:`KEY_SEPARATOR`. No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "KEY_SEPARATOR",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_KEYS",
    "PROPERTY_REAL_QUEUE_ID",
    "PROPERTY_REAL_TOPIC",
    "PROPERTY_SEPARATOR",
    "PROPERTY_TAGS",
    "PROPERTY_UNIQ_KEY",
    "PROPERTY_WAIT_STORE_MSG_OK",
    "RESERVED_PROPERTY_NAMES",
    "decode_properties",
    "encode_properties",
]

PROPERTY_TAGS: Final = "TAGS"
PROPERTY_KEYS: Final = "KEYS"
PROPERTY_WAIT_STORE_MSG_OK: Final = "WAIT"
PROPERTY_UNIQ_KEY: Final = "UNIQ_KEY"
PROPERTY_REAL_TOPIC: Final = "REAL_TOPIC"
"""On a message the broker holds in a system topic (a timer's, a half message): its own topic."""
PROPERTY_REAL_QUEUE_ID: Final = "REAL_QID"
"""... and its own queue id."""
KEY_SEPARATOR: Final = " "
NAME_VALUE_SEPARATOR: Final = "\x01"
PROPERTY_SEPARATOR: Final = "\x02"

RESERVED_PROPERTY_NAMES: Final = frozenset(
    {
        "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC",
        "REAL_QID", "TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID",
        "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG", "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME",
        "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME", "POP_CK", "POP_CK_OFFSET",
        "1ST_POP_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "DUP_INFO", "EXTEND_UNIQ_INFO",
        "INSTANCE_ID", "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME",
        "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE", "INNER_MULTI_QUEUE_OFFSET", "TIMER_DELAY_SEC",
        "TIMER_DELIVER_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES",
        "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY", "TIMER_DELAY_LEVEL", "__BORNHOST", "BORN_TIMESTAMP",
    }
)  # fmt: skip
"""The names RocketMQ's ``MessageConst`` reserves for the system: no user property takes one."""


def encode_properties(properties: Mapping[str, str]) -> bytes:
    """RocketMQ's property string, UTF-8: ``name\\x01value\\x02`` per property."""
    if not properties:
        return b""
    return "".join(
        [f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in properties.items()]
    ).encode()


def decode_properties(data: bytes) -> dict[str, str]:
    """The inverse of :func:`encode_properties`."""
    if not data:
        return {}
    out: dict[str, str] = {}
    for item in data.decode().split(PROPERTY_SEPARATOR):
        if item:
            name, _, value = item.partition(NAME_VALUE_SEPARATOR)
            out[name] = value
    return out
