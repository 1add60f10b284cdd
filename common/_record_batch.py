"""The record batch: the one binary form of messages, from the producer's send through the
commit log to the consumer's pull (Kafka's RecordBatch v2 in spirit; no I/O here).

A producer encodes the messages of one send, all of one topic and one queue, into one batch,
once (:func:`encode_batch`). The broker checks it (:func:`check_batch`, one pass), writes the
fields it assigns into the header in place (:func:`patch_batch`) and appends the bytes to its
commit log as they are; a pull answers with the stored batches as they are, and the consumer reads
them column by column (:class:`RecordBatch`). Integers are little-endian.

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
    |  Columns, one value per record, in this order:              ...      |
    |    i64 tag hash (Java hashCode of the tag; 0 without a tag)          |
    |    i32 body length, i32 tags length, i32 properties length           |
    |    i32 born timestamp delta (ms, from the base), i32 flag            |
    +---------------------------------------------------------------+      |
    |  Bodies, back to back, then tags (UTF-8), then properties   ...      v
    +---------------------------------------------------------------+ -

Properties are RocketMQ's string (``name\\x01value\\x02`` repeated, UTF-8), less ``TAGS``,
which has its own column so that the broker filters on it and checks its hash without parsing.
The record at index ``i`` has queue offset ``base queue offset + i`` and commit log offset
``base physical offset + i``: every record has its own offset (and offset message id), and
since a batch takes more than one byte per record, those offsets fall inside the batch's bytes
and never collide with another batch's.

Columns are fixed-width, so numpy reads each in one call (``np.frombuffer``), and the bodies
are contiguous, so a pulled batch becomes an Arrow binary column (offsets and data) without a
Python object per message. The CRC covers exactly what the producer wrote: the broker checks
it once per batch and never recomputes it; a consumer checks it again (corruption on disk or
in transit).

:func:`encode_batch` and :func:`check_batch` run in C (``common/_batch_native.c``, one pass
over the bytes each) when that module is built; :func:`encode_batch_py` and
:func:`check_batch_py` are the same in Python: the reference the C code is tested against, the
fallback, and the words of a refusal.
"""

from __future__ import annotations

import enum
import functools
import itertools
import re
import socket
import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from aeromq.common._java_string import hash_code
from aeromq.common._properties import PROPERTY_TAGS, decode_properties

if TYPE_CHECKING:
    from typing_extensions import Buffer

try:
    from aeromq.common import _batch_native as _native
except ImportError:  # not built (a source tree without a compiler): the Python reference
    _native = None  # type: ignore[assignment]

__all__ = [
    "BATCH_MAGIC",
    "BROKER_FIELDS_LENGTH",
    "CRC_OFFSET",
    "FIXED_HEADER_LENGTH",
    "HEADER_DTYPE",
    "HEADER_STRUCT",
    "MAX_FRAMING_BYTES",
    "MAX_PROPERTIES_LENGTH",
    "MAX_TOPIC_LENGTH",
    "RECORD_OVERHEAD",
    "BatchCheck",
    "RecordBatch",
    "batch_header_length",
    "check_batch",
    "check_batch_py",
    "columns_struct",
    "encode_batch",
    "encode_batch_py",
    "join_tag",
    "merge_batches",
    "merge_batches_py",
    "pack_host_field",
    "patch_batch",
    "read_total_length",
    "split_tag",
    "stored_properties",
    "unpack_host_field",
]

TOTAL_LENGTH_OFFSET: Final = 0
MAGIC_OFFSET: Final = 4
BASE_QUEUE_OFFSET_OFFSET: Final = 8
BASE_PHYSICAL_OFFSET_OFFSET: Final = 16
STORE_TIMESTAMP_OFFSET: Final = 24
STORE_HOST_OFFSET: Final = 32
QUEUE_ID_OFFSET: Final = 40
CRC_OFFSET: Final = 44
CRC_START: Final = 48
RECORD_COUNT_OFFSET: Final = 48
RECONSUME_TIMES_OFFSET: Final = 52
BASE_BORN_TIMESTAMP_OFFSET: Final = 56
BORN_HOST_OFFSET: Final = 64
ATTRIBUTES_OFFSET: Final = 72
TOPIC_LENGTH_OFFSET: Final = 74
TOPIC_OFFSET: Final = 76
FIXED_HEADER_LENGTH: Final = TOPIC_OFFSET
BROKER_FIELDS_LENGTH: Final = CRC_OFFSET - BASE_QUEUE_OFFSET_OFFSET
RECORD_OVERHEAD: Final = 8 + 5 * 4
"""Column bytes per record (tag hash, four lengths and values)."""
MAX_TOPIC_LENGTH: Final = 255
MAX_PROPERTIES_LENGTH: Final = 32767
"""RocketMQ's cap on one message's stored property string (a Java ``short``)."""
MAX_FRAMING_BYTES: Final = (
    ((FIXED_HEADER_LENGTH + MAX_TOPIC_LENGTH + 7) & ~7) + RECORD_OVERHEAD + MAX_PROPERTIES_LENGTH
)
"""How much longer than the maximum message size a send's batch may be: a header with the
longest topic and one record's columns and properties. A batch's whole encoding counts against
the size (as RocketMQ counts a batch's), so many small messages carry their framing in it."""

BATCH_MAGIC: Final = 0x31425141  # "AQB1" in the file

_PREFIX: Final = struct.Struct("<iI")
_BROKER_FIELDS: Final = struct.Struct("<qqq8si")
HEADER_STRUCT: Final = struct.Struct("<iIqqq8siIiiq8sHH")
"""The fixed header, field by field (see the layout), for ``struct``."""
_HEADER: Final = HEADER_STRUCT
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
assert _HEADER.size == FIXED_HEADER_LENGTH == HEADER_DTYPE.itemsize
_U32: Final = struct.Struct("<I")
_I32_FIELD: Final = struct.Struct("<i")
_I64_FIELD: Final = struct.Struct("<q")
_U16: Final = struct.Struct("<H")
_COUNT_AND_BORN: Final = struct.Struct("<i4xq")  # record count, (reconsume times), base born
_COLUMN_WIDTHS: Final = (8, 4, 4, 4, 4, 4)  # tag hash, body, tags, properties lengths, born, flag
_BORN_DELTA_COLUMN: Final = 4
_I32_MAX: Final = (1 << 31) - 1
_I64_MAX: Final = (1 << 63) - 1

Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]


class BatchCheck(enum.IntEnum):
    """The outcome of :func:`check_batch`: 0 is a well-formed batch, < 0 says what is not."""

    OK = 0
    TRUNCATED = -1  # shorter than its header or its total length says
    BAD_MAGIC = -2
    BAD_LENGTHS = -3  # count, topic or column lengths that do not add up
    BAD_CRC = -4
    BAD_TOPIC = -5  # another topic than the request's, or not UTF-8
    EMPTY_BODY = -6
    BODY_TOO_LARGE = -7
    BAD_TAG = -8  # whitespace or '|' in a tag, or not UTF-8
    BAD_TAG_HASH = -9  # the tag hash column is not the tags' Java hashCode
    BAD_PROPERTIES = -10  # not name\x01value\x02 pairs with non-empty names, or not UTF-8
    TOO_MANY_RECORDS = -11


def pack_host_field(ip: str, port: int) -> bytes:
    """A batch's 8-byte host field (born host, store host): the IPv4 address, then the port
    as a little-endian i32. Raises ``ValueError`` for anything else."""
    try:
        return socket.inet_aton(ip) + _I32_FIELD.pack(port)
    except (OSError, struct.error) as exc:
        raise ValueError(f"not an IPv4 address and port: ip={ip!r} port={port!r}") from exc


def unpack_host_field(packed: bytes) -> tuple[str, int]:
    """``(ip, port)`` of a batch's host field (the inverse of :func:`pack_host_field`)."""
    return socket.inet_ntoa(packed[:4]), int(_I32_FIELD.unpack_from(packed, 4)[0])


def batch_header_length(topic_length: int) -> int:
    """The header's length with a topic of ``topic_length`` bytes (padded to 8)."""
    return (FIXED_HEADER_LENGTH + topic_length + 7) & ~7


def read_total_length(buffer: Buffer, position: int = 0) -> tuple[int, int]:
    """``(total length, magic)`` of the batch at ``position``."""
    size, magic = _PREFIX.unpack_from(buffer, position)
    return int(size), int(magic)


# -- the producer -----------------------------------------------------------------------------

_TAG_HASHES: dict[str, int] = {}
_TAG_CACHE_LIMIT: Final = 65536


def _tag_hash(tag: str) -> int:
    code = _TAG_HASHES.get(tag)
    if code is None:
        code = hash_code(tag)
        if len(_TAG_HASHES) < _TAG_CACHE_LIMIT:
            _TAG_HASHES[tag] = code
    return code


def encode_batch(
    topic: bytes,
    bodies: Sequence[bytes],
    tags: Sequence[str | None] | None = None,
    properties: Sequence[bytes] | bytes | None = None,
    *,
    property_lengths: Sequence[int] | None = None,
    flags: Sequence[int] | None = None,
    born_timestamp_ms: int = 0,
    born_deltas_ms: Sequence[int] | None = None,
    born_host: bytes = bytes(8),
    reconsume_times: int = 0,
    attributes: int = 0,
) -> bytearray:
    """One batch of ``bodies`` (with their ``tags``, encoded ``properties`` without TAGS, and
    ``flags``), born at ``born_timestamp_ms`` (plus each ``born_deltas_ms``) on ``born_host``
    (8 bytes: IPv4 address, i32 port). The broker fields are zero; the CRC is set.

    With ``property_lengths``, ``properties`` is every record's property string already
    joined into one ``bytes`` and these are their lengths (a producer that builds them in one
    string operation). One pass in C (``common/_batch_native.c``) when it is built, else
    :func:`encode_batch_py`, the reference; both give the same bytes.

    Checks nothing the broker checks (it does, in one pass); raises ``ValueError`` or
    ``struct.error`` only for values that cannot be encoded at all.
    """
    if _native is None:
        return encode_batch_py(
            topic,
            bodies,
            tags,
            properties,
            property_lengths=property_lengths,
            flags=flags,
            born_timestamp_ms=born_timestamp_ms,
            born_deltas_ms=born_deltas_ms,
            born_host=born_host,
            reconsume_times=reconsume_times,
            attributes=attributes,
        )
    return _native.encode(
        topic,
        bodies,
        tags,
        properties,
        property_lengths,
        flags,
        born_timestamp_ms,
        born_deltas_ms,
        born_host,
        reconsume_times,
        attributes,
    )


def encode_batch_py(
    topic: bytes,
    bodies: Sequence[bytes],
    tags: Sequence[str | None] | None = None,
    properties: Sequence[bytes] | bytes | None = None,
    *,
    property_lengths: Sequence[int] | None = None,
    flags: Sequence[int] | None = None,
    born_timestamp_ms: int = 0,
    born_deltas_ms: Sequence[int] | None = None,
    born_host: bytes = bytes(8),
    reconsume_times: int = 0,
    attributes: int = 0,
) -> bytearray:
    """:func:`encode_batch` in Python: the reference of the C encoder, and its fallback."""
    count = len(bodies)
    if not count:
        raise ValueError("a batch holds at least one record")
    if len(topic) > MAX_TOPIC_LENGTH:
        raise ValueError(f"topic longer than {MAX_TOPIC_LENGTH} bytes: {len(topic)}")
    header_length = batch_header_length(len(topic))
    body_lengths = [len(body) for body in bodies]
    zeros = _zeros(count)
    tag_lengths: Sequence[int]
    tag_hashes: Sequence[int]
    if tags is None or not any(tags):
        tag_data = b""
        tag_lengths = tag_hashes = zeros
    else:
        encoded = [tag.encode() if tag else b"" for tag in tags]
        tag_lengths = [len(tag) for tag in encoded]
        tag_hashes = [_tag_hash(tag) if tag else 0 for tag in tags]
        tag_data = b"".join(encoded)
    property_data: bytes
    if property_lengths is not None:
        if not isinstance(properties, bytes | bytearray | memoryview):
            raise ValueError("with property_lengths, properties is one bytes-like object")
        property_data = bytes(properties)
        if len(property_lengths) != count or sum(property_lengths) != len(property_data):
            raise ValueError(
                f"the property lengths do not add up: count={len(property_lengths)} "
                f"sum={sum(property_lengths)} length={len(property_data)}"
            )
    elif properties is None:
        property_data = b""
        property_lengths = zeros
    else:
        if isinstance(properties, bytes):
            raise ValueError("properties joined in one bytes need property_lengths")
        property_lengths = [len(item) for item in properties]
        property_data = b"".join(properties)
    columns = columns_struct(count).pack(
        *tag_hashes,
        *body_lengths,
        *tag_lengths,
        *property_lengths,
        *(born_deltas_ms if born_deltas_ms is not None else zeros),
        *(flags if flags is not None else zeros),
    )
    total = header_length + len(columns) + sum(body_lengths) + len(tag_data) + len(property_data)
    head = _HEADER.pack(
        total,
        BATCH_MAGIC,
        0,
        0,
        0,
        bytes(8),
        0,
        0,
        count,
        reconsume_times,
        born_timestamp_ms,
        born_host,
        attributes,
        len(topic),
    )
    out = bytearray().join(
        (head, topic, bytes(header_length - FIXED_HEADER_LENGTH - len(topic)), columns, *bodies)
    )
    out += tag_data
    out += property_data
    _U32.pack_into(out, CRC_OFFSET, zlib.crc32(memoryview(out)[CRC_START:]))
    return out


@functools.lru_cache(maxsize=256)
def _zeros(count: int) -> tuple[int, ...]:
    return (0,) * count


@functools.lru_cache(maxsize=256)
def columns_struct(count: int) -> struct.Struct:
    """A batch's columns (see the layout) for ``count`` records, packed or read in one call."""
    return struct.Struct(f"<{count}q{5 * count}i")


# -- the broker -------------------------------------------------------------------------------


_CHECKED_OK: Final = (BatchCheck.OK, "")
_CHECKS: Final = {check.value: check for check in BatchCheck}


def check_batch(
    data: bytes | bytearray | memoryview,
    *,
    topic: bytes | None = None,
    max_body_length: int = _I32_MAX,
    max_body_total: int = 1 << 62,
    max_records: int = _I32_MAX,
    check_crc: bool = True,
    check_content: bool = True,
) -> tuple[BatchCheck, str]:
    """Whether ``data`` is exactly one well-formed batch (of ``topic``, when given; bodies of at
    most ``max_body_length`` bytes each and ``max_body_total`` in all), and if not, why
    (``key=value`` text). One pass; never raises: a hot-path function.

    ``check_content`` False checks framing and the CRC only (enough for bytes that passed the
    full check once, as a recovering store re-reading its own log).

    One pass in C (``common/_batch_native.c``) when it is built, else :func:`check_batch_py`,
    the reference, which also words a refusal (the cold path).
    """
    if _native is None:
        return check_batch_py(
            data,
            topic=topic,
            max_body_length=max_body_length,
            max_body_total=max_body_total,
            max_records=max_records,
            check_crc=check_crc,
            check_content=check_content,
        )
    code = _native.check(
        data,
        topic,
        max_body_length if max_body_length <= _I64_MAX else _I64_MAX,
        max_body_total if max_body_total <= _I64_MAX else _I64_MAX,
        max_records if max_records <= _I64_MAX else _I64_MAX,
        check_crc,
        check_content,
    )
    if not code:
        return _CHECKED_OK
    check, text = check_batch_py(
        data,
        topic=topic,
        max_body_length=max_body_length,
        max_body_total=max_body_total,
        max_records=max_records,
        check_crc=check_crc,
        check_content=check_content,
    )
    if check.value != code:  # never, as the agreement test checks; the C code decides
        return _CHECKS[code], f"refused by the native check: code={code}"
    return check, text


def check_batch_py(
    data: bytes | bytearray | memoryview,
    *,
    topic: bytes | None = None,
    max_body_length: int = _I32_MAX,
    max_body_total: int = 1 << 62,
    max_records: int = _I32_MAX,
    check_crc: bool = True,
    check_content: bool = True,
) -> tuple[BatchCheck, str]:
    """:func:`check_batch` in Python: the reference of the C checker, its fallback, and the
    words of a refusal. Vectorised where Python can be."""
    length = len(data)
    if length < FIXED_HEADER_LENGTH:
        return BatchCheck.TRUNCATED, f"shorter than a batch header: length={length}"
    (
        total,
        magic,
        _base_queue_offset,
        _base_physical_offset,
        _store_ms,
        _store_host,
        _queue_id,
        crc,
        count,
        _reconsume,
        _born_ms,
        _born_host,
        _attributes,
        topic_length,
    ) = _HEADER.unpack_from(data, 0)
    if magic != BATCH_MAGIC:
        return BatchCheck.BAD_MAGIC, f"not a record batch: magic={magic:#x}"
    if total != length:
        return (
            BatchCheck.TRUNCATED,
            f"total length is not the data's: total={total} length={length}",
        )
    if count <= 0:
        return BatchCheck.BAD_LENGTHS, f"a batch holds at least one record: count={count}"
    if count > max_records:
        return BatchCheck.TOO_MANY_RECORDS, f"too many records: count={count} max={max_records}"
    header_length = batch_header_length(topic_length)
    data_start = header_length + count * RECORD_OVERHEAD
    if data_start > length:
        return BatchCheck.BAD_LENGTHS, f"columns past the end: count={count} length={length}"
    if check_crc:
        with memoryview(data) as view:
            actual = zlib.crc32(view[CRC_START:])
        if actual != crc:
            return BatchCheck.BAD_CRC, f"CRC mismatch: stored={crc:#010x} computed={actual:#010x}"
    if topic is not None and data[TOPIC_OFFSET : TOPIC_OFFSET + topic_length] != topic:
        return BatchCheck.BAD_TOPIC, f"the batch is of another topic: expected={topic!r}"
    lengths = _lengths_struct(count).unpack_from(data, header_length + 8 * count)
    if min(lengths) < 0:
        return BatchCheck.BAD_LENGTHS, "a negative length"
    body_lengths = lengths[:count]
    tag_lengths = lengths[count : 2 * count]
    property_lengths = lengths[2 * count :]
    body_total = sum(body_lengths)
    tag_total = sum(tag_lengths)
    property_total = sum(property_lengths)
    if data_start + body_total + tag_total + property_total != length:
        return BatchCheck.BAD_LENGTHS, (
            f"lengths do not add up: count={count} bodies={body_total} tags={tag_total} "
            f"properties={property_total} length={length}"
        )
    if not check_content:
        return BatchCheck.OK, ""
    if body_total > max_body_total:
        return BatchCheck.BODY_TOO_LARGE, (
            f"the batch is over the max message size in all: batch_length={body_total} "
            f"max_message_size={max_body_total}"
        )
    if min(body_lengths) == 0:
        index = body_lengths.index(0)
        return BatchCheck.EMPTY_BODY, f"the message body is empty: index={index}"
    longest = max(body_lengths)
    if longest > max_body_length:
        index = body_lengths.index(longest)
        return BatchCheck.BODY_TOO_LARGE, (
            f"over the max message size: body_length={longest} "
            f"max_message_size={max_body_length} index={index}"
        )
    tag_start = data_start + body_total
    property_start = tag_start + tag_total
    if topic is None:
        try:
            bytes(data[TOPIC_OFFSET : TOPIC_OFFSET + topic_length]).decode()
        except UnicodeDecodeError:
            return BatchCheck.BAD_TOPIC, "the topic is not UTF-8"
    if tag_total:
        problem = _check_tags(
            bytes(data[tag_start:property_start]),
            tag_lengths,
            _hashes_struct(count).unpack_from(data, header_length),
        )
        if problem is not None:
            return problem
    else:
        hashes = bytes(data[header_length : header_length + 8 * count])
        if hashes.count(0) != len(hashes):  # C speed; any() iterated the bytes in Python
            return BatchCheck.BAD_TAG_HASH, "a tag hash without a tag"
    if property_total:
        problem = _check_properties(bytes(data[property_start:]), property_lengths)
        if problem is not None:
            return problem
    return BatchCheck.OK, ""


@functools.lru_cache(maxsize=256)
def _lengths_struct(count: int) -> struct.Struct:
    """The three length columns of a batch of ``count`` records, in one unpack."""
    return struct.Struct(f"<{3 * count}i")


@functools.lru_cache(maxsize=256)
def _hashes_struct(count: int) -> struct.Struct:
    return struct.Struct(f"<{count}q")


_BAD_TAG_BYTES: Final = re.compile(rb"[\s|]")
_PROPERTY_PAIRS: Final = re.compile(rb"(?:[^\x00-\x02]++\x01[^\x00-\x02]*+\x02)*+")


_TAG_CODES: dict[bytes, int] = {}


def _check_tags(
    data: bytes, lengths: Sequence[int], hashes: Sequence[int]
) -> tuple[BatchCheck, str] | None:
    """Tags have no whitespace or ``|``, are UTF-8, and their hash column is their Java
    ``hashCode`` (a cache of tag -> hash: a topic has few distinct tags)."""
    if _BAD_TAG_BYTES.search(data) is not None:
        return BatchCheck.BAD_TAG, "a tag holds whitespace or '|'"
    codes = _TAG_CODES
    computed: list[int] = []
    add = computed.append
    start = 0
    for end in itertools.accumulate(lengths):
        if end == start:
            add(0)
            continue
        tag = data[start:end]
        start = end
        code = codes.get(tag)
        if code is None:
            try:
                code = hash_code(tag.decode())
            except UnicodeDecodeError:
                return BatchCheck.BAD_TAG, "a tag is not UTF-8"
            if len(codes) < _TAG_CACHE_LIMIT:
                codes[tag] = code
        add(code)
    if computed != list(hashes):
        index = next(i for i, (a, b) in enumerate(zip(computed, hashes, strict=True)) if a != b)
        return BatchCheck.BAD_TAG_HASH, (
            f"wrong tag hash: index={index} hash={hashes[index]} expected={computed[index]}"
        )
    return None


def _check_properties(data: bytes, lengths: Sequence[int]) -> tuple[BatchCheck, str] | None:
    """The column is ``name\\x01value\\x02`` pairs (names not empty), each record's ending
    with a ``\\x02`` (so no pair spans two records), UTF-8."""
    if _PROPERTY_PAIRS.fullmatch(data) is None:
        return BatchCheck.BAD_PROPERTIES, "properties are not name\\x01value\\x02 pairs"
    start = 0
    for end in itertools.accumulate(lengths):
        if end > start and data[end - 1] != 2:
            return BatchCheck.BAD_PROPERTIES, "a record's properties do not end with \\x02"
        start = end
    if not data.isascii():
        try:
            data.decode()
        except UnicodeDecodeError:
            return BatchCheck.BAD_PROPERTIES, "properties are not UTF-8"
    return None


def patch_batch(
    buffer: bytearray | memoryview,
    position: int,
    base_queue_offset: int,
    base_physical_offset: int,
    store_timestamp_ms: int,
    store_host: bytes,
    queue_id: int,
) -> None:
    """Write the broker's fields into the header of the batch at ``position`` (one call; the
    CRC does not cover them)."""
    _BROKER_FIELDS.pack_into(
        buffer,
        position + BASE_QUEUE_OFFSET_OFFSET,
        base_queue_offset,
        base_physical_offset,
        store_timestamp_ms,
        store_host,
        queue_id,
    )


def merge_batches(batches: Sequence[Buffer]) -> bytes | None:
    """One batch of the records of ``batches``, in order (a producer's sends joined into one
    request, as Kafka's record accumulator does): their columns, bodies, tags and properties
    back to back, the earliest born timestamp as the base with the born deltas rebased on it,
    a new CRC. None when they cannot be one batch: not all of one topic, born host, attributes
    and reconsume times, or a born time more than an i32 of milliseconds after the base.

    The broker fields are zero, as a producer's. Record ``i`` of a batch is record ``i`` plus
    the record counts of the batches before it in the merged one. One pass in C
    (``common/_batch_native.c``, which raises ``ValueError`` for a batch whose lengths do not
    fit its bytes) when it is built, else :func:`merge_batches_py`, the reference.
    """
    if _native is not None:
        return _native.merge(batches)
    return merge_batches_py(batches)


def merge_batches_py(batches: Sequence[Buffer]) -> bytes | None:
    """:func:`merge_batches` in Python: the reference of the C merge, and its fallback."""
    views = [memoryview(batch).cast("B") for batch in batches]
    first = views[0]
    header_length = batch_header_length(_U16.unpack_from(first, TOPIC_LENGTH_OFFSET)[0])
    reconsume = first[RECONSUME_TIMES_OFFSET:BASE_BORN_TIMESTAMP_OFFSET]
    identity = first[BORN_HOST_OFFSET:header_length]
    counts: list[int] = []
    bases: list[int] = []
    for view in views:
        if (
            view[RECONSUME_TIMES_OFFSET:BASE_BORN_TIMESTAMP_OFFSET] != reconsume
            or view[BORN_HOST_OFFSET:header_length] != identity
        ):
            return None
        count, base_ms = _COUNT_AND_BORN.unpack_from(view, RECORD_COUNT_OFFSET)
        counts.append(count)
        bases.append(base_ms)
    base_ms = min(bases)
    columns: list[list[bytes | memoryview]] = [[] for _ in _COLUMN_WIDTHS]
    bodies: list[memoryview] = []
    tags: list[memoryview] = []
    properties: list[memoryview] = []
    for view, count, born_ms in zip(views, counts, bases, strict=True):
        at = header_length
        for index, width in enumerate(_COLUMN_WIDTHS):
            end = at + width * count
            if index == _BORN_DELTA_COLUMN and born_ms != base_ms:
                deltas = np.frombuffer(view, "<i4", count, at) + np.int64(born_ms - base_ms)
                if int(deltas.max()) > _I32_MAX:
                    return None
                columns[index].append(deltas.astype("<i4").tobytes())
            else:
                columns[index].append(view[at:end])
            at = end
        lengths = header_length + 8 * count  # the body lengths' column, then the tags'
        body_bytes = int(np.frombuffer(view, "<i4", count, lengths).sum())
        tag_bytes = int(np.frombuffer(view, "<i4", count, lengths + 4 * count).sum())
        bodies.append(view[at : at + body_bytes])
        tags.append(view[at + body_bytes : at + body_bytes + tag_bytes])
        properties.append(view[at + body_bytes + tag_bytes :])
    pieces = [*itertools.chain.from_iterable(columns), *bodies, *tags, *properties]
    head = bytearray(first[:header_length])
    _I32_FIELD.pack_into(head, TOTAL_LENGTH_OFFSET, header_length + sum(map(len, pieces)))
    # count and base born time, around the reconsume times (a pad byte of the struct would zero it)
    _I32_FIELD.pack_into(head, RECORD_COUNT_OFFSET, sum(counts))
    _I64_FIELD.pack_into(head, BASE_BORN_TIMESTAMP_OFFSET, base_ms)
    crc = zlib.crc32(memoryview(head)[CRC_START:])
    for piece in pieces:
        crc = zlib.crc32(piece, crc)
    _U32.pack_into(head, CRC_OFFSET, crc)
    return b"".join([head, *pieces])


# -- the consumer -----------------------------------------------------------------------------


class RecordBatch:
    """A read-only view of one batch (header fields as attributes, columns as numpy arrays),
    over a buffer that :func:`check_batch` passed. Per-record values are read on demand."""

    __slots__ = (
        "_ends",
        "attributes",
        "base_born_timestamp_ms",
        "base_physical_offset",
        "base_queue_offset",
        "born_host",
        "buffer",
        "count",
        "data_start",
        "header_length",
        "length",
        "queue_id",
        "reconsume_times",
        "store_host",
        "store_timestamp_ms",
        "topic",
    )

    def __init__(self, buffer: bytes | memoryview, position: int = 0) -> None:
        (
            total,
            _magic,
            self.base_queue_offset,
            self.base_physical_offset,
            self.store_timestamp_ms,
            self.store_host,
            self.queue_id,
            _crc,
            count,
            self.reconsume_times,
            self.base_born_timestamp_ms,
            self.born_host,
            self.attributes,
            topic_length,
        ) = _HEADER.unpack_from(buffer, position)
        if position or len(buffer) != total:
            buffer = memoryview(buffer)[position : position + total]
        self.buffer = buffer
        self.length = total
        self.count = count
        self.topic = bytes(buffer[TOPIC_OFFSET : TOPIC_OFFSET + topic_length]).decode()
        self.header_length = batch_header_length(topic_length)
        self.data_start = self.header_length + count * RECORD_OVERHEAD
        self._ends: list[list[int]] | None = None

    def _column(self, index: int) -> Int32Array:
        count = self.count
        return np.frombuffer(
            self.buffer,
            dtype="<i4",
            count=count,
            offset=self.header_length + (2 + index) * count * 4,
        )

    @property
    def tag_hashes(self) -> Int64Array:
        return np.frombuffer(self.buffer, dtype="<i8", count=self.count, offset=self.header_length)

    @property
    def body_lengths(self) -> Int32Array:
        return self._column(0)

    @property
    def born_deltas_ms(self) -> Int32Array:
        return self._column(3)

    @property
    def flags(self) -> Int32Array:
        return self._column(4)

    @property
    def body_data(self) -> memoryview:
        """All bodies, back to back (Arrow's binary data buffer)."""
        start = self.data_start
        return memoryview(self.buffer)[start : start + int(self.body_lengths.sum())]

    def crc_ok(self) -> bool:
        """Whether the stored CRC matches the bytes (C speed, one call)."""
        with memoryview(self.buffer) as view:
            return bool(
                zlib.crc32(view[CRC_START:]) == _U32.unpack_from(self.buffer, CRC_OFFSET)[0]
            )

    def ends(self) -> list[list[int]]:
        """``[body ends, tag ends, properties ends]``: absolute end positions in the buffer
        (as Python ints, made once per batch), for per-record slicing."""
        ends = self._ends
        if ends is None:
            count = self.count
            lengths = np.frombuffer(
                self.buffer, dtype="<i4", count=3 * count, offset=self.header_length + 8 * count
            ).astype(np.int64)
            lengths[0] += self.data_start
            flat = np.cumsum(lengths)
            ends = self._ends = [
                flat[:count].tolist(),
                flat[count : 2 * count].tolist(),
                flat[2 * count :].tolist(),
            ]
        return ends

    def body(self, index: int) -> bytes:
        body_ends = self.ends()[0]
        start = body_ends[index - 1] if index else self.data_start
        return bytes(self.buffer[start : body_ends[index]])

    def tag(self, index: int) -> str | None:
        ends = self.ends()
        tag_ends = ends[1]
        start = tag_ends[index - 1] if index else ends[0][-1]
        end = tag_ends[index]
        return bytes(self.buffer[start:end]).decode() if end > start else None

    def properties_bytes(self, index: int) -> bytes:
        ends = self.ends()
        property_ends = ends[2]
        start = property_ends[index - 1] if index else ends[1][-1]
        return bytes(self.buffer[start : property_ends[index]])

    def record_size(self, index: int) -> int:
        """The bytes record ``index`` takes: its column values and variable parts."""
        body_ends, tag_ends, property_ends = self.ends()
        body_start = body_ends[index - 1] if index else self.data_start
        tag_start = tag_ends[index - 1] if index else body_ends[-1]
        property_start = property_ends[index - 1] if index else tag_ends[-1]
        return (
            RECORD_OVERHEAD
            + body_ends[index]
            - body_start
            + tag_ends[index]
            - tag_start
            + property_ends[index]
            - property_start
        )

    def __repr__(self) -> str:
        return (
            f"RecordBatch(topic={self.topic!r}, queue_id={self.queue_id}, count={self.count}, "
            f"base_queue_offset={self.base_queue_offset}, "
            f"base_physical_offset={self.base_physical_offset}, length={self.length})"
        )


def split_tag(properties: Mapping[str, str]) -> tuple[str | None, bytes]:
    """A message's properties as a batch stores them: its tag (``TAGS``; None without one) for
    the tag column, and every other property as RocketMQ's string (the inverse of
    :func:`stored_properties`)."""
    tag = None
    parts = []
    for name, value in properties.items():
        if name == PROPERTY_TAGS:
            tag = value or None
        else:
            parts.append(f"{name}\x01{value}\x02")
    return tag, "".join(parts).encode()


def join_tag(properties: bytes, tag: str | None) -> dict[str, str]:
    """A record's properties as RocketMQ keeps them: its property string decoded, with ``TAGS``
    put back from the tag column (the inverse of :func:`split_tag`)."""
    decoded = decode_properties(properties)
    if tag:
        decoded[PROPERTY_TAGS] = tag
    return decoded


def stored_properties(batch: RecordBatch, index: int) -> dict[str, str]:
    """Record ``index``'s properties as RocketMQ keeps them (:func:`join_tag`)."""
    return join_tag(batch.properties_bytes(index), batch.tag(index))
