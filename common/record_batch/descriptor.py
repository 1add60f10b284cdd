"""The record batch's layout: the one binary form of messages, from the producer's send through
the commit log to the consumer's pull (Kafka's RecordBatch v2 in spirit). Constants and pure
functions only, no I/O.

A producer encodes the messages of one send, all of one topic and one queue, into one batch,
once (:func:`~common.record_batch.encode_batch`). The broker checks it
(:func:`~common.record_batch.check_batch`, one pass), writes the fields it assigns into the
header in place (:func:`~common.record_batch.patch_batch`) and appends the bytes to its commit
log as they are; a pull answers with the stored batches as they are, and the consumer reads them
column by column (:func:`~common.record_batch.read_pulled_chunk`,
:class:`~common.record_batch.RecordBatch`). Integers are little-endian.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                  Total Length (whole batch)                   |   0
    +---------------------------------------------------------------+
    |                       Magic ("AQB1")                          |   4
    +---------------------------------------------------------------+ -
    |                      Base Queue Offset                        |   8  ^
    |                                                               |      |
    +---------------------------------------------------------------+      |  written by
    |                 Base Physical (Commit Log) Offset             |  16  |  the broker
    |                                                               |      |  (zero from
    +---------------------------------------------------------------+      |  the producer);
    |                     Store Timestamp (ms)                      |  24  |  not under
    |                                                               |      |  the CRC
    +---------------------------------------------------------------+      |
    |          Store Host (IPv4 address, then i32 port)             |  32  |
    |                                                               |      |
    +---------------------------------------------------------------+      |
    |                          Queue Id                             |  40  v
    +---------------------------------------------------------------+ -
    |             CRC-32 of every byte from offset 48 on            |  44
    +---------------------------------------------------------------+ -
    |                        Record Count                           |  48  ^
    +---------------------------------------------------------------+      |
    |                       Reconsume Times                         |  52  |
    +---------------------------------------------------------------+      |
    |                   Base Born Timestamp (ms)                    |  56  |
    |                                                               |      |  written by
    +---------------------------------------------------------------+      |  the producer;
    |          Born Host (IPv4 address, then i32 port)              |  64  |  under the
    |                                                               |      |  CRC
    +-------------------------------+-------------------------------+      |
    |     Attributes (sys flag)     |         Topic Length          |  72  |
    +-------------------------------+-------------------------------+      |
    |  Topic (UTF-8), then zeros to a multiple of 8               ...  76  |
    +---------------------------------------------------------------+      |
    |  Producer state, only with PRODUCER_STATE_FLAG (16 bytes):  ...  P   |
    |    i64 producer id, i32 base sequence, i16 producer epoch,           |
    |    i16 reserved (0)                                                  |
    +---------------------------------------------------------------+      |
    |  Columns, one value per record, in this order:              ...      |
    |    i64 tag hash (Java hashCode of the tag; 0 without a tag)          |
    |    i32 body length, i32 tags length, i32 properties length           |
    |    i32 born timestamp delta (ms, from the base), i32 flag            |
    +---------------------------------------------------------------+      |
    |  Bodies, back to back, then tags (UTF-8), then properties   ...      v
    +---------------------------------------------------------------+ -

``P`` is where the topic's padding ends (``76 + topic length``, rounded up to 8). The producer
state is there only when the Attributes have :data:`PRODUCER_STATE_FLAG` (bit 15, which RocketMQ's
sys flags leave free): an idempotent producer's id, the sequence number of the batch's first
record (records count per producer, topic and queue from 0, wrapping at 2^31) and the
producer's epoch. The broker keeps the last batches of each producer and queue and answers a
retry of one of them with its stored result instead of storing it again. The state is under the
CRC; the columns follow it. A batch without the flag (every batch of earlier versions) has
nothing between the padding and the columns: :func:`batch_header_length` says where the columns
start either way.

::

    producer state (at P, when the Attributes have PRODUCER_STATE_FLAG)
     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                          Producer Id                          |   0
    |                                                               |
    +---------------------------------------------------------------+
    |                         Base Sequence                         |   8
    +-------------------------------+-------------------------------+
    |        Producer Epoch         |         Reserved (0)          |  12
    +-------------------------------+-------------------------------+

Properties are RocketMQ's string (``name\\x01value\\x02`` repeated, UTF-8), less ``TAGS``,
which has its own column so that the broker filters on it and checks its hash without parsing.
The record at index ``i`` has queue offset ``base queue offset + i`` and commit log offset
``base physical offset + i``: every record has its own offset (and offset message id), and
since a batch takes more than one byte per record, those offsets fall inside the batch's bytes
and never collide with another batch's.

Compressed bodies. With :data:`COMPRESSED_FLAG` (and a codec in bits 8 to 10 of the
Attributes, RocketMQ's numbering: 1 LZ4 block, 2 Zstandard frame, 3 zlib stream), the bodies
are one compressed block in place of the bodies back to back; the body length column keeps
each body's length before compression, and the block's own length is what the batch has left
between the columns and the tags (total length less the header, the columns, the tags and the
properties). Tags and properties stay as they are, so the broker checks, filters and indexes a
compressed batch without inflating it; the limits on body sizes apply to the lengths before
compression, which bound what a reader inflates. The CRC covers the batch as stored
(compressed). A producer compresses a request's batch once (``compression.py``); readers
inflate it back to the plain layout before they read records.

Columns are fixed-width, so numpy reads each in one call (``np.frombuffer``), and the bodies
are contiguous, so a pulled batch becomes an Arrow binary column (offsets and data) without a
Python object per message. The CRC covers exactly what the producer wrote: the broker checks
it once per batch and never recomputes it; a consumer checks it again (corruption on disk or
in transit).

C reads the same layout from ``record_batch.h`` beside this module, whose every constant a
test (``tests/common/test_record_batch_header.py``) checks against the ones here.
"""

from __future__ import annotations

import functools
import socket
import struct
from typing import TYPE_CHECKING, Final, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "ATTRIBUTES_OFFSET",
    "BASE_BORN_TIMESTAMP_OFFSET",
    "BASE_PHYSICAL_OFFSET_OFFSET",
    "BASE_QUEUE_OFFSET_OFFSET",
    "BASE_SEQUENCE_OFFSET",
    "BATCH_MAGIC",
    "BORN_DELTA_COLUMN",
    "BORN_HOST_OFFSET",
    "BROKER_FIELDS_LENGTH",
    "COLUMN_COUNT",
    "COLUMN_WIDTHS",
    "COMPRESSED_FLAG",
    "COMPRESSION_TYPE_MASK",
    "COMPRESSION_TYPE_SHIFT",
    "CRC_OFFSET",
    "CRC_START",
    "FIXED_HEADER_LENGTH",
    "HEADER_DTYPE",
    "HEADER_STRUCT",
    "HOST_FIELD_LENGTH",
    "MAGIC_OFFSET",
    "MAX_COMPRESSION_TYPE",
    "MAX_FRAMING_BYTES",
    "MAX_PROPERTIES_LENGTH",
    "MAX_SEQUENCE",
    "MAX_TOPIC_LENGTH",
    "PRODUCER_EPOCH_OFFSET",
    "PRODUCER_ID_OFFSET",
    "PRODUCER_STATE_FLAG",
    "PRODUCER_STATE_LENGTH",
    "PRODUCER_STATE_RESERVED_OFFSET",
    "PRODUCER_STATE_STRUCT",
    "QUEUE_ID_OFFSET",
    "RECONSUME_TIMES_OFFSET",
    "RECORD_COUNT_OFFSET",
    "RECORD_OVERHEAD",
    "STORE_HOST_OFFSET",
    "STORE_TIMESTAMP_OFFSET",
    "TIMER_FLAG",
    "TOPIC_LENGTH_OFFSET",
    "TOPIC_OFFSET",
    "TOTAL_LENGTH_OFFSET",
    "ProducerState",
    "batch_header_length",
    "columns_struct",
    "compression_type",
    "pack_host_field",
    "producer_state_position",
    "read_producer_state",
    "read_total_length",
    "unpack_host_field",
]

BATCH_MAGIC: Final = 0x31425141
"""The magic of a batch: "AQB1" in the file."""
HOST_FIELD_LENGTH: Final = 8
"""A host field (store host, born host): the IPv4 address, then the port as an i32."""

# the fixed header, field by field (the diagram's right edge)
TOTAL_LENGTH_OFFSET: Final = 0
MAGIC_OFFSET: Final = TOTAL_LENGTH_OFFSET + 4
BASE_QUEUE_OFFSET_OFFSET: Final = MAGIC_OFFSET + 4
BASE_PHYSICAL_OFFSET_OFFSET: Final = BASE_QUEUE_OFFSET_OFFSET + 8
STORE_TIMESTAMP_OFFSET: Final = BASE_PHYSICAL_OFFSET_OFFSET + 8
STORE_HOST_OFFSET: Final = STORE_TIMESTAMP_OFFSET + 8
QUEUE_ID_OFFSET: Final = STORE_HOST_OFFSET + HOST_FIELD_LENGTH
CRC_OFFSET: Final = QUEUE_ID_OFFSET + 4
CRC_START: Final = CRC_OFFSET + 4
"""The CRC covers every byte from here to the end of the batch."""
RECORD_COUNT_OFFSET: Final = CRC_START
RECONSUME_TIMES_OFFSET: Final = RECORD_COUNT_OFFSET + 4
BASE_BORN_TIMESTAMP_OFFSET: Final = RECONSUME_TIMES_OFFSET + 4
BORN_HOST_OFFSET: Final = BASE_BORN_TIMESTAMP_OFFSET + 8
ATTRIBUTES_OFFSET: Final = BORN_HOST_OFFSET + HOST_FIELD_LENGTH
TOPIC_LENGTH_OFFSET: Final = ATTRIBUTES_OFFSET + 2
TOPIC_OFFSET: Final = TOPIC_LENGTH_OFFSET + 2
FIXED_HEADER_LENGTH: Final = TOPIC_OFFSET
"""The header before the topic (the topic and its padding follow)."""
BROKER_FIELDS_LENGTH: Final = CRC_OFFSET - BASE_QUEUE_OFFSET_OFFSET
"""The fields the broker writes (:func:`~common.record_batch.patch_batch`), outside the CRC."""

# the producer state, after the topic's padding, when the attributes have the flag; its offsets
# are from its own start (``producer_state_position``)
PRODUCER_STATE_FLAG: Final = 0x8000
"""The Attributes bit that says the batch carries a producer state (bit 15: RocketMQ's sys
flags use bits 0 to 10)."""
COMPRESSED_FLAG: Final = 0x0001
"""The Attributes bit that says the batch's bodies are one compressed block (RocketMQ's
``MessageSysFlag.COMPRESSED_FLAG``): see "Compressed bodies" in the module text."""
COMPRESSION_TYPE_SHIFT: Final = 8
COMPRESSION_TYPE_MASK: Final = 0x0700
"""The Attributes bits of a compressed batch's codec (RocketMQ's ``COMPRESSION_TYPE_COMPARATOR``,
bits 8 to 10): 1 LZ4, 2 ZSTD, 3 ZLIB (``common.record_batch.CompressionType``)."""
MAX_COMPRESSION_TYPE: Final = 3
"""The highest codec number a batch may name (ZLIB)."""
TIMER_FLAG: Final = 0x4000
"""The Attributes bit that says the batch's records carry a delivery time (``DELAY``,
``TIMER_DELIVER_MS`` or ``TIMER_DELAY_SEC``): the broker's store holds such a batch in its timer
topic until the time comes (``broker/timer/``) instead of its own queue; a test of one bit on the
put path. The producer sets it (bit 14, free of RocketMQ's sys flags)."""
TRANSACTION_PREPARED_FLAG: Final = 0x0004
"""The Attributes bit of a transaction's half message (RocketMQ's
``MessageSysFlag.TRANSACTION_PREPARED_TYPE``, bits 2-3 = 1): the broker's store holds such a batch
in its half topic until the producer commits or rolls it back (``broker/transaction/``); the
transaction producer sets it."""
PRODUCER_ID_OFFSET: Final = 0
BASE_SEQUENCE_OFFSET: Final = PRODUCER_ID_OFFSET + 8
PRODUCER_EPOCH_OFFSET: Final = BASE_SEQUENCE_OFFSET + 4
PRODUCER_STATE_RESERVED_OFFSET: Final = PRODUCER_EPOCH_OFFSET + 2
PRODUCER_STATE_LENGTH: Final = PRODUCER_STATE_RESERVED_OFFSET + 2
MAX_SEQUENCE: Final = (1 << 31) - 1
"""The largest sequence number: sequences count records from 0 and wrap to 0 after it."""

# the columns, after the header, its topic and the producer state
COLUMN_WIDTHS: Final = (8, 4, 4, 4, 4, 4)
"""Bytes per value of each column, in order: tag hash, body, tags and properties lengths, born
timestamp delta, flag."""
COLUMN_COUNT: Final = len(COLUMN_WIDTHS)
BORN_DELTA_COLUMN: Final = 4
"""The born timestamp deltas' place in :data:`COLUMN_WIDTHS`."""
RECORD_OVERHEAD: Final = sum(COLUMN_WIDTHS)
"""Column bytes per record (tag hash, four lengths and values)."""

MAX_TOPIC_LENGTH: Final = 255
MAX_PROPERTIES_LENGTH: Final = 32767
"""RocketMQ's cap on one message's stored property string (a Java ``short``)."""
MAX_FRAMING_BYTES: Final = (
    ((FIXED_HEADER_LENGTH + MAX_TOPIC_LENGTH + 7) & ~7) + RECORD_OVERHEAD + MAX_PROPERTIES_LENGTH
)
"""How much longer than the maximum message size a send's batch may be: a header with the
longest topic and one record's columns and properties. A batch's whole encoding counts against
the size (as RocketMQ counts a batch's), so many small messages carry their framing in it.
A producer state's 16 bytes are not counted (the brokers' caps stay as they were): they come
out of the allowance for a message's properties, which a batch near the cap rarely fills."""

HEADER_STRUCT: Final = struct.Struct("<iIqqq8siIiiq8sHH")
"""The fixed header, field by field (see the layout), for ``struct``."""
HEADER_DTYPE: Final = np.dtype(
    [
        ("total_length", "<i4"),
        ("magic", "<u4"),
        ("base_queue_offset", "<i8"),
        ("base_physical_offset", "<i8"),
        ("store_timestamp_ms", "<i8"),
        ("store_host", "V8"),
        ("queue_id", "<i4"),
        ("crc", "<u4"),
        ("count", "<i4"),
        ("reconsume_times", "<i4"),
        ("base_born_timestamp_ms", "<i8"),
        ("born_host", "V8"),
        ("attributes", "<u2"),
        ("topic_length", "<u2"),
    ]
)
"""The fixed header as a numpy structured type (many headers read at once)."""

# the size checks: the struct, the dtype and the offsets above are one layout
assert HEADER_STRUCT.size == FIXED_HEADER_LENGTH == HEADER_DTYPE.itemsize == 76
assert [field[1] for field in (HEADER_DTYPE.fields or {}).values()] == [
    TOTAL_LENGTH_OFFSET,
    MAGIC_OFFSET,
    BASE_QUEUE_OFFSET_OFFSET,
    BASE_PHYSICAL_OFFSET_OFFSET,
    STORE_TIMESTAMP_OFFSET,
    STORE_HOST_OFFSET,
    QUEUE_ID_OFFSET,
    CRC_OFFSET,
    RECORD_COUNT_OFFSET,
    RECONSUME_TIMES_OFFSET,
    BASE_BORN_TIMESTAMP_OFFSET,
    BORN_HOST_OFFSET,
    ATTRIBUTES_OFFSET,
    TOPIC_LENGTH_OFFSET,
]
assert RECORD_OVERHEAD == 28 and COLUMN_WIDTHS[BORN_DELTA_COLUMN] == 4

PRODUCER_STATE_STRUCT: Final = struct.Struct("<qihh")
"""The producer state (producer id, base sequence, producer epoch, reserved), for ``struct``."""
assert PRODUCER_STATE_STRUCT.size == PRODUCER_STATE_LENGTH == 16
assert PRODUCER_STATE_FLAG & 0x07FF == 0  # clear of RocketMQ's sys flag bits
assert TIMER_FLAG & (0x07FF | PRODUCER_STATE_FLAG) == 0

_PREFIX: Final = struct.Struct("<iI")
_HOST_PORT: Final = struct.Struct("<i")
_ATTRIBUTES_AND_TOPIC_LENGTH: Final = struct.Struct("<HH")


class ProducerState(NamedTuple):
    """A batch's producer state (see the layout): who sent it and the sequence number of its
    first record."""

    producer_id: int
    base_sequence: int
    producer_epoch: int


def compression_type(attributes: int) -> int:
    """The codec number of a batch's Attributes (0 when its bodies are not compressed)."""
    if not attributes & COMPRESSED_FLAG:
        return 0
    return (attributes & COMPRESSION_TYPE_MASK) >> COMPRESSION_TYPE_SHIFT


def batch_header_length(topic_length: int, attributes: int = 0) -> int:
    """The header's length with a topic of ``topic_length`` bytes (padded to 8), and the
    producer state when ``attributes`` have :data:`PRODUCER_STATE_FLAG`: where the columns
    start."""
    length = (FIXED_HEADER_LENGTH + topic_length + 7) & ~7
    if attributes & PRODUCER_STATE_FLAG:
        length += PRODUCER_STATE_LENGTH
    return length


def producer_state_position(topic_length: int) -> int:
    """Where a batch's producer state starts (when it has one): after the topic's padding."""
    return (FIXED_HEADER_LENGTH + topic_length + 7) & ~7


def read_producer_state(buffer: Buffer, position: int = 0) -> ProducerState | None:
    """The producer state of the batch at ``position`` of ``buffer``, None when its attributes
    do not have :data:`PRODUCER_STATE_FLAG` (the buffer must hold the whole header)."""
    attributes, topic_length = _ATTRIBUTES_AND_TOPIC_LENGTH.unpack_from(
        buffer, position + ATTRIBUTES_OFFSET
    )
    if not attributes & PRODUCER_STATE_FLAG:
        return None
    producer_id, base_sequence, epoch, _reserved = PRODUCER_STATE_STRUCT.unpack_from(
        buffer, position + producer_state_position(topic_length)
    )
    return ProducerState(producer_id, base_sequence, epoch)


def read_total_length(buffer: Buffer, position: int = 0) -> tuple[int, int]:
    """``(total length, magic)`` of the batch at ``position``."""
    size, magic = _PREFIX.unpack_from(buffer, position)
    return int(size), int(magic)


@functools.lru_cache(maxsize=256)
def columns_struct(count: int) -> struct.Struct:
    """A batch's columns (see the layout) for ``count`` records, packed or read in one call."""
    return struct.Struct(f"<{count}q{5 * count}i")


def pack_host_field(ip: str, port: int) -> bytes:
    """A batch's 8-byte host field (born host, store host): the IPv4 address, then the port
    as a little-endian i32. Raises ``ValueError`` for anything else."""
    try:
        return socket.inet_aton(ip) + _HOST_PORT.pack(port)
    except (OSError, struct.error) as exc:
        raise ValueError(f"not an IPv4 address and port: ip={ip!r} port={port!r}") from exc


def unpack_host_field(packed: bytes) -> tuple[str, int]:
    """``(ip, port)`` of a batch's host field (the inverse of :func:`pack_host_field`)."""
    return socket.inet_ntoa(packed[:4]), int(_HOST_PORT.unpack_from(packed, 4)[0])
