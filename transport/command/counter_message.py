"""Counter message: ADD_COUNTER, a counter allocated by the driver on a client's behalf.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                           Client ID                           |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+
 16 |                        Counter Type ID                        |
    +---------------------------------------------------------------+
 20 |                          Key Length                           |
    +---------------------------------------------------------------+
 24 |                   Key Buffer (padded to 4)                   ...
   ...                                                              |
    +---------------------------------------------------------------+
    |                         Label Length                          |
    +---------------------------------------------------------------+
    |                        Label (ASCII)                         ...
   ...                                                              |
    +---------------------------------------------------------------+

The key is padded with zeros to a multiple of 4 bytes so that the label length stays aligned
(Aeron's ``CounterMessageFlyweight`` and ``aeron_client_conductor``): the label length is at
``24 + align(key_length, 4)``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aeromq.transport.command._codec import (
    LENGTH_PREFIX,
    align4,
    check_capacity,
    check_region,
    encode_text,
    read_block,
    require,
    write_block,
)
from aeromq.transport.command.correlated_message import CLIENT_ID_OFFSET, CORRELATION_ID_OFFSET
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "COUNTER_KEY_LENGTH_OFFSET",
    "COUNTER_MESSAGE_LENGTH",
    "COUNTER_TYPE_ID_OFFSET",
    "CounterMessage",
    "counter_label_length_offset",
    "decode_counter_message",
    "encode_counter_message",
]

COUNTER_TYPE_ID_OFFSET = CORRELATION_ID_OFFSET + 8
COUNTER_MESSAGE_LENGTH = COUNTER_TYPE_ID_OFFSET + 4
"""Length of the fixed part (``aeron_counter_command_t``); the key and label blocks follow."""
COUNTER_KEY_LENGTH_OFFSET = COUNTER_MESSAGE_LENGTH

_NAME = "counter message"
_FIELDS = struct.Struct("<qqi")


def counter_label_length_offset(key_length: int) -> int:
    """Offset of the label length field after a key of ``key_length`` bytes."""
    return COUNTER_KEY_LENGTH_OFFSET + LENGTH_PREFIX + align4(key_length)


@dataclass(frozen=True, slots=True)
class CounterMessage:
    """A decoded ADD_COUNTER (layout above), client to driver.

    ``type_id``, ``key`` (opaque bytes) and ``label`` are what the driver writes into the new
    counter's metadata record; ``correlation_id`` becomes its registration id.
    """

    client_id: int
    correlation_id: int
    type_id: int
    key: bytes
    label: str


def encode_counter_message(
    buffer: AtomicBuffer,
    offset: int,
    *,
    client_id: int,
    correlation_id: int,
    type_id: int,
    key: bytes,
    label: str,
) -> int:
    """Write the message at ``offset``; return its length."""
    encoded_label = encode_text(label, "label")
    label_offset = counter_label_length_offset(len(key))
    length = label_offset + LENGTH_PREFIX + len(encoded_label)
    check_capacity(buffer, offset, length, _NAME)
    buffer.put_int64(offset + CLIENT_ID_OFFSET, client_id)
    buffer.put_int64(offset + CORRELATION_ID_OFFSET, correlation_id)
    buffer.put_int32(offset + COUNTER_TYPE_ID_OFFSET, type_id)
    key_end = COUNTER_KEY_LENGTH_OFFSET + write_block(
        buffer, offset + COUNTER_KEY_LENGTH_OFFSET, key
    )
    if key_end < label_offset:
        buffer.set_memory(offset + key_end, label_offset - key_end, 0)
    write_block(buffer, offset + label_offset, encoded_label)
    return length


def decode_counter_message(buffer: AtomicBuffer, offset: int, length: int) -> CounterMessage:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if bad.

    The label is decoded as UTF-8 with replacement: it is a description, never a name to match.
    """
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "type_id", COUNTER_TYPE_ID_OFFSET, 4, length)
    client_id, correlation_id, type_id = _FIELDS.unpack_from(buffer, offset)
    key, _ = read_block(buffer, offset, length, _NAME, "key", COUNTER_KEY_LENGTH_OFFSET)
    label_offset = counter_label_length_offset(len(key))
    raw_label, _ = read_block(buffer, offset, length, _NAME, "label", label_offset)
    label = raw_label.decode("utf-8", errors="replace")
    return CounterMessage(client_id, correlation_id, type_id, key, label)
