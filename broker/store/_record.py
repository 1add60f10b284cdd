"""The commit log record: layout, encoder, checker and decoder (pure functions, no I/O).

Every message of every topic is one record, appended in order. Integers are little-endian.
Hosts are an IPv4 address (network order) and a port (i32). A record never spans two
segments: when one does not fit, the rest of the segment is a blank record (``BLANK_MAGIC``
and the remaining length) and the record starts the next segment.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                          Total Size                           |   0
    +---------------------------------------------------------------+
    |                            Magic                              |   4
    +---------------------------------------------------------------+
    |                 Body CRC (CRC-32 of the body)                 |   8
    +---------------------------------------------------------------+
    |                           Queue Id                            |  12
    +---------------------------------------------------------------+
    |                             Flag                              |  16
    +---------------------------------------------------------------+
    |                         Queue Offset                          |  20
    |                                                               |
    +---------------------------------------------------------------+
    |                       Physical Offset                         |  28
    |                                                               |
    +---------------------------------------------------------------+
    |                           Sys Flag                            |  36
    +---------------------------------------------------------------+
    |                      Born Timestamp (ms)                      |  40
    |                                                               |
    +---------------------------------------------------------------+
    |                    Born Host (IPv4 address)                   |  48
    +---------------------------------------------------------------+
    |                        Born Host Port                         |  52
    +---------------------------------------------------------------+
    |                     Store Timestamp (ms)                      |  56
    |                                                               |
    +---------------------------------------------------------------+
    |                   Store Host (IPv4 address)                   |  64
    +---------------------------------------------------------------+
    |                        Store Host Port                        |  68
    +---------------------------------------------------------------+
    |                       Reconsume Times                         |  72
    +---------------------------------------------------------------+
    |                 Prepared Transaction Offset                   |  76
    |                                                               |
    +---------------------------------------------------------------+
    |                         Body Length                           |  84
    +---------------------------------------------------------------+
    |                             Body                             ...  88
    +---------------+-----------------------------------------------+
    | Topic Length  |                 Topic (UTF-8)                ...
    +---------------+---------------+-------------------------------+
    |       Properties Length       |     Properties (UTF-8)       ...
    +-------------------------------+-------------------------------+
    |       Record CRC (CRC-32 of every byte of the record above)   |
    +---------------------------------------------------------------+

The fields are RocketMQ's message format (v1) in its order. One addition: the trailing record
CRC covers the whole record, header included, so a flipped byte anywhere is caught (RocketMQ's
body CRC covers only the body); written last, it also marks a torn write.
"""

from __future__ import annotations

import enum
import struct
import zlib
from typing import Any

from aeromq.broker.store._message import StoredMessage
from aeromq.common import decode_properties

__all__ = [
    "BLANK_MAGIC",
    "CRC_LENGTH",
    "HEADER_LENGTH",
    "MESSAGE_MAGIC",
    "MIN_BLANK_LENGTH",
    "MIN_RECORD_LENGTH",
    "RecordCheck",
    "check_record",
    "decode_record",
    "encode_record",
    "record_length",
    "record_struct",
]

TOTAL_SIZE_OFFSET = 0
MAGIC_OFFSET = 4
BODY_CRC_OFFSET = 8
QUEUE_ID_OFFSET = 12
FLAG_OFFSET = 16
QUEUE_OFFSET_OFFSET = 20
PHYSICAL_OFFSET_OFFSET = 28
SYS_FLAG_OFFSET = 36
BORN_TIMESTAMP_OFFSET = 40
BORN_HOST_OFFSET = 48
STORE_TIMESTAMP_OFFSET = 56
STORE_HOST_OFFSET = 64
RECONSUME_TIMES_OFFSET = 72
PREPARED_TRANSACTION_OFFSET_OFFSET = 76
BODY_LENGTH_OFFSET = 84
BODY_OFFSET = 88
HEADER_LENGTH = BODY_OFFSET
TOPIC_LENGTH_LENGTH = 1
PROPERTIES_LENGTH_LENGTH = 2
CRC_LENGTH = 4
MIN_RECORD_LENGTH = HEADER_LENGTH + TOPIC_LENGTH_LENGTH + 1 + PROPERTIES_LENGTH_LENGTH + CRC_LENGTH
MIN_BLANK_LENGTH = 8  # total size and magic
MAX_TOPIC_LENGTH = 255
MAX_PROPERTIES_LENGTH = 32767

MESSAGE_MAGIC = 0x314D5141  # "AQM1" in the file
BLANK_MAGIC = 0x424D5141  # "AQMB" in the file

_HEADER_FORMAT = "<iIIiiqqiq8sq8siqi"
HEADER = struct.Struct(_HEADER_FORMAT)
assert HEADER.size == HEADER_LENGTH
_PREFIX = struct.Struct("<iI")
_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")

_STRUCTS: dict[tuple[int, int, int], struct.Struct] = {}
_MAX_CACHED_STRUCTS = 4096


class RecordCheck(enum.IntEnum):
    """The outcome of ``check_record``: >= 0 is a well-formed position, < 0 a broken record."""

    OK = 0
    BLANK = 1
    END = 2
    BAD_MAGIC = -1
    BAD_SIZE = -2
    BAD_LENGTHS = -3
    BAD_CRC = -4
    BAD_POSITION = -5  # intact, but its physical offset field names another place


def record_length(body_length: int, topic_length: int, properties_length: int) -> int:
    """The encoded size of a record with these variable parts."""
    return (
        HEADER_LENGTH
        + body_length
        + TOPIC_LENGTH_LENGTH
        + topic_length
        + PROPERTIES_LENGTH_LENGTH
        + properties_length
        + CRC_LENGTH
    )


def record_struct(body_length: int, topic_length: int, properties_length: int) -> struct.Struct:
    """A cached ``Struct`` that packs a whole record but its trailing CRC, in one call.

    Arguments, in order: total size, magic, body CRC, queue id, flag, queue offset, physical
    offset, sys flag, born timestamp, born host, store timestamp, store host, reconsume times,
    prepared transaction offset, body length, body, topic length, topic, properties length,
    properties.
    """
    key = (body_length, topic_length, properties_length)
    found = _STRUCTS.get(key)
    if found is None:
        if len(_STRUCTS) >= _MAX_CACHED_STRUCTS:
            _STRUCTS.clear()
        found = struct.Struct(
            f"{_HEADER_FORMAT}{body_length}sB{topic_length}sH{properties_length}s"
        )
        _STRUCTS[key] = found
    return found


def put_record_crc(buffer: Any, position: int, total_size: int) -> None:
    """Compute and write the trailing record CRC of the record at ``position``."""
    end = position + total_size - CRC_LENGTH
    with memoryview(buffer) as view:
        _U32.pack_into(buffer, end, zlib.crc32(view[position:end]))


def encode_record(
    *,
    topic: bytes,
    queue_id: int,
    body: bytes,
    properties: bytes,
    queue_offset: int,
    physical_offset: int,
    store_timestamp_ms: int,
    store_host: bytes,
    flag: int = 0,
    sys_flag: int = 0,
    born_timestamp_ms: int = 0,
    born_host: bytes = bytes(8),
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
) -> bytes:
    """One whole record as bytes (the commit log packs straight into its segment instead)."""
    size = record_length(len(body), len(topic), len(properties))
    out = bytearray(size)
    record_struct(len(body), len(topic), len(properties)).pack_into(
        out,
        0,
        size,
        MESSAGE_MAGIC,
        zlib.crc32(body),
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp_ms,
        born_host,
        store_timestamp_ms,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        len(body),
        body,
        len(topic),
        topic,
        len(properties),
        properties,
    )
    put_record_crc(out, 0, size)
    return bytes(out)


def check_record(buffer: Any, position: int, limit: int) -> tuple[RecordCheck, int]:
    """Whether a whole, intact record starts at ``position`` (bytes up to ``limit`` are valid).

    Returns ``(OK, size)`` for a record, ``(BLANK, size)`` for an end-of-segment blank that
    runs exactly to ``limit``, ``(END, 0)`` for never-written (zero) space, and a negative
    check with 0 for anything else. A hot-path function: it returns, never raises.
    """
    if limit - position < MIN_BLANK_LENGTH:
        if limit == position or not any(bytes(buffer[position:limit])):
            return RecordCheck.END, 0
        return RecordCheck.BAD_SIZE, 0
    size, magic = _PREFIX.unpack_from(buffer, position)
    if magic == MESSAGE_MAGIC:
        if size < MIN_RECORD_LENGTH or size > limit - position:
            return RecordCheck.BAD_SIZE, 0
        body_length = _I32.unpack_from(buffer, position + BODY_LENGTH_OFFSET)[0]
        if body_length < 0 or HEADER_LENGTH + body_length + 1 > size:
            return RecordCheck.BAD_LENGTHS, 0
        topic_at = position + BODY_OFFSET + body_length
        topic_length = _U8.unpack_from(buffer, topic_at)[0]
        if HEADER_LENGTH + body_length + 3 + topic_length > size:
            return RecordCheck.BAD_LENGTHS, 0
        properties_length = _U16.unpack_from(buffer, topic_at + 1 + topic_length)[0]
        if record_length(body_length, topic_length, properties_length) != size:
            return RecordCheck.BAD_LENGTHS, 0
        end = position + size - CRC_LENGTH
        with memoryview(buffer) as view:
            crc = zlib.crc32(view[position:end])
        if crc != _U32.unpack_from(buffer, end)[0]:
            return RecordCheck.BAD_CRC, 0
        return RecordCheck.OK, size
    if magic == BLANK_MAGIC:
        if size == limit - position:
            return RecordCheck.BLANK, size
        return RecordCheck.BAD_SIZE, 0
    if size == 0 and magic == 0:
        return RecordCheck.END, 0
    return RecordCheck.BAD_MAGIC, 0


def decode_record(buffer: Any, position: int) -> StoredMessage:
    """The message of a record that ``check_record`` passed (fields are not re-validated)."""
    (
        size,
        _magic,
        body_crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp_ms,
        born_host,
        store_timestamp_ms,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body_length,
    ) = HEADER.unpack_from(buffer, position)
    at = position + BODY_OFFSET
    body = bytes(buffer[at : at + body_length])
    at += body_length
    topic_length = buffer[at]
    topic = bytes(buffer[at + 1 : at + 1 + topic_length]).decode()
    at += 1 + topic_length
    properties_length = _U16.unpack_from(buffer, at)[0]
    properties = decode_properties(bytes(buffer[at + 2 : at + 2 + properties_length]))
    return StoredMessage(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties=properties,
        flag=flag,
        sys_flag=sys_flag,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        store_size=size,
        body_crc=body_crc,
        born_timestamp_ms=born_timestamp_ms,
        born_host=born_host,
        store_timestamp_ms=store_timestamp_ms,
        store_host=store_host,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared_transaction_offset,
    )


def read_store_timestamp(buffer: Any, position: int) -> int:
    """The store timestamp of the record at ``position``."""
    return int(_I64.unpack_from(buffer, position + STORE_TIMESTAMP_OFFSET)[0])
