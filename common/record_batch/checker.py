"""The broker's side of the record batch: :func:`check_batch`, whether bytes are one
well-formed batch (and if not, why), and :func:`patch_batch`, the fields the broker assigns
written into the header in place.

Caller: the broker's send path (each batch a producer sends, once, before it is appended) and
its store (recovery re-reads its own log with ``check_content=False``). One pass in C
(``_checker.c``) when the module is built; :func:`check_batch_py` is the same in Python, the
reference the C code is tested against, the fallback, and the words of a refusal. No I/O.
"""

from __future__ import annotations

import enum
import functools
import itertools
import re
import struct
import zlib
from collections.abc import Sequence
from typing import Final

from aeromq.common._java_string import hash_code
from aeromq.common.record_batch.descriptor import (
    BASE_QUEUE_OFFSET_OFFSET,
    BATCH_MAGIC,
    COMPRESSED_FLAG,
    CRC_START,
    FIXED_HEADER_LENGTH,
    HEADER_STRUCT,
    MAX_COMPRESSION_TYPE,
    PRODUCER_STATE_FLAG,
    PRODUCER_STATE_STRUCT,
    RECORD_OVERHEAD,
    TOPIC_OFFSET,
    batch_header_length,
    compression_type,
    producer_state_position,
)

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): the Python reference
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = ["BatchCheck", "check_batch", "check_batch_py", "patch_batch"]

_BROKER_FIELDS: Final = struct.Struct("<qqq8si")
_I32_MAX: Final = (1 << 31) - 1
_I64_MAX: Final = (1 << 63) - 1
_TAG_CACHE_LIMIT: Final = 65536


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
    BAD_PRODUCER_STATE = -12  # a negative base sequence, or a reserved field not zero
    BAD_COMPRESSION = -13  # a compressed batch of no codec or an unknown one


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

    One pass in C (``_checker.c``) when it is built, else :func:`check_batch_py`,
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
        attributes,
        topic_length,
    ) = HEADER_STRUCT.unpack_from(data, 0)
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
    header_length = batch_header_length(topic_length, attributes)
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
    if attributes & COMPRESSED_FLAG:
        codec = compression_type(attributes)
        if not 0 < codec <= MAX_COMPRESSION_TYPE:
            return BatchCheck.BAD_COMPRESSION, (
                f"a compressed batch of an unknown codec: compression_type={codec}"
            )
    lengths = _lengths_struct(count).unpack_from(data, header_length + 8 * count)
    if min(lengths) < 0:
        return BatchCheck.BAD_LENGTHS, "a negative length"
    body_lengths = lengths[:count]
    tag_lengths = lengths[count : 2 * count]
    property_lengths = lengths[2 * count :]
    body_total = sum(body_lengths)
    tag_total = sum(tag_lengths)
    property_total = sum(property_lengths)
    bodies_length = body_total  # the bytes the bodies take: or a compressed block's length
    if attributes & COMPRESSED_FLAG:
        bodies_length = length - data_start - tag_total - property_total
        if bodies_length <= 0:
            return BatchCheck.BAD_LENGTHS, (
                f"no room for the compressed bodies: count={count} tags={tag_total} "
                f"properties={property_total} length={length}"
            )
    if data_start + bodies_length + tag_total + property_total != length:
        return BatchCheck.BAD_LENGTHS, (
            f"lengths do not add up: count={count} bodies={body_total} tags={tag_total} "
            f"properties={property_total} length={length}"
        )
    if not check_content:
        return BatchCheck.OK, ""
    if attributes & PRODUCER_STATE_FLAG:
        _producer, sequence, _epoch, reserved = PRODUCER_STATE_STRUCT.unpack_from(
            data, producer_state_position(topic_length)
        )
        if sequence < 0 or reserved:
            return BatchCheck.BAD_PRODUCER_STATE, (
                f"bad producer state: base_sequence={sequence} reserved={reserved}"
            )
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
    tag_start = data_start + bodies_length
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
