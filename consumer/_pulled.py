"""Reading a pull's answer: the stored record batches, checked and cut to what was asked.

A FOUND answer carries whole stored batches (:mod:`common._record_batch`), back to back; this
keeps the records in ``[offset, next_begin_offset)`` that match the subscription, as a
:class:`~consumer.message_batch.MessageBatch`. The work is one pass in C over the answer
(``consumer/_columns_native.c``: each batch's framing, CRC and lengths checked, then the columns
of every record in the range written into one buffer that numpy views), nothing per stored
batch or record in Python. :func:`read_pulled_batches_py` is the same in numpy, the reference
the C pass is tested against and its fallback: a fixed number of numpy calls for the whole
answer, plus a few Python operations per stored batch (finding it, one zlib CRC call, a slice
of its column block): the headers are read as one structured array, the column blocks joined
into one array of i32 words, and each column of every record gathered from it at once by word
index.

A batch that fails its check (framing, CRC, another queue's) raises
:class:`~client.CorruptMessageError` naming the queue and offsets; nothing of the answer is
delivered.

Tags: the broker filtered on tag hash codes; here the hash column is filtered again (a batch
holds other records too) and, as RocketMQ's client does, the tag strings of the records whose
hash matched are compared, so a hash collision never delivers a foreign tag. SQL92: the broker
sent the batches holding a match; here the expression selects among their records again.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from aeromq.client import CorruptMessageError, ExpressionType, MessageQueue, SubscriptionData
from aeromq.common import (
    BATCH_MAGIC,
    FIXED_HEADER_LENGTH,
    HEADER_DTYPE,
    HEADER_STRUCT,
    RECORD_OVERHEAD,
    Sql92Filter,
    columns_struct,
    compile_sql92,
    join_tag,
)
from aeromq.consumer.message_batch import MessageBatch, PulledChunk

try:
    from aeromq.consumer import _columns_native as _native
except ImportError:  # not built (a source tree without a compiler): numpy alone
    _native = None  # type: ignore[assignment]

__all__ = [
    "COLUMNS_I32",
    "COLUMNS_I64",
    "join_ranges",
    "read_pulled_batches",
    "read_pulled_batches_py",
]

COLUMNS_I64: Final = (
    "batch",
    "index",
    "body_start",
    "tag_start",
    "properties_start",
    "tag_hash",
    "queue_offset",
    "commit_log_offset",
    "store_ms",
    "born_ms",
)
"""The i64 columns of the native reader's answer (``consumer/_columns_native.c``), in order."""
COLUMNS_I32: Final = ("body_length", "tag_length", "properties_length", "born_delta_ms", "flag")
"""Its i32 columns, after the i64 ones."""

_LENGTH: Final = struct.Struct("<i")
_CRC_START: Final = 48
_HEADER_BYTES: Final = np.arange(FIXED_HEADER_LENGTH, dtype=np.int64)


def read_pulled_batches(
    data: bytes,
    queue: MessageQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: SubscriptionData | None,
    ranges: bytes | None = None,
) -> MessageBatch:
    """The messages of ``data`` (a pull's ``batches``) that the consumer asked for (see
    module); raises :class:`~client.CorruptMessageError`.

    With ``ranges`` (a local read's ``local_ranges``: little-endian i64 (position, length)
    pairs), ``data`` is a mapped commit log file and the batches are at those positions of it,
    not back to back; the chunk then keeps ``data`` (the mapping) as its buffer.

    One native pass (``consumer/_columns_native.c``) when it is built; an answer it refuses
    is read again by :func:`read_pulled_batches_py`, which names the problem (the ranges'
    batches joined first, as a pull through the transport would have carried them)."""
    if not data or ranges == b"":
        return MessageBatch()
    if _native is not None:
        read = _native.read(data, queue.queue_id, queue.topic.encode(), offset, next_offset, ranges)
        if read is not None:
            return _from_native(data, queue, broker_name, subscription, *read)
    if ranges is not None:
        data = join_ranges(data, ranges)
    return read_pulled_batches_py(data, queue, broker_name, offset, next_offset, subscription)


def join_ranges(data: bytes, ranges: bytes) -> bytes:
    """The batches at ``ranges`` (little-endian i64 (position, length) pairs) of ``data``, back
    to back; :class:`~client.CorruptMessageError` when a range is not inside ``data`` or starts
    before the one before it ends."""
    pairs = np.frombuffer(ranges, "<i8").reshape(-1, 2).tolist()
    view = memoryview(data)
    ended = 0
    for position, length in pairs:
        if position < ended or length < 0 or position + length > len(view):
            raise CorruptMessageError(
                "a local range outside its commit log file or before the one it follows",
                position=position,
                length=length,
                previous_end=ended,
                file_length=len(view),
            )
        ended = position + length
    return b"".join(view[position : position + length] for position, length in pairs)


def _from_native(
    data: bytes,
    queue: MessageQueue,
    broker_name: str,
    subscription: SubscriptionData | None,
    kept: int,
    capacity: int,
    columns: bytes,
    headers: bytes,
) -> MessageBatch:
    """The chunk of the native reader's columns (views of its one buffer), then filtered by
    the subscription's tags or SQL92 expression as the numpy reader filters."""
    if not kept:
        return MessageBatch()
    records: dict[str, npt.NDArray[Any] | list[int]] = {}
    frombuffer = np.frombuffer
    for k, name in enumerate(COLUMNS_I64):
        records[name] = frombuffer(columns, np.int64, kept, 8 * k * capacity)
    at = 8 * len(COLUMNS_I64) * capacity
    for k, name in enumerate(COLUMNS_I32):
        records[name] = frombuffer(columns, np.int32, kept, at + 4 * k * capacity)
    chunk = PulledChunk(data, frombuffer(headers, HEADER_DTYPE), queue, broker_name, records)
    if subscription is None or not (
        subscription.tags or subscription.expression_type is ExpressionType.SQL92
    ):
        return MessageBatch([chunk])
    which = np.arange(kept, dtype=np.int64)
    if subscription.tags:
        codes = np.fromiter(subscription.codes, dtype=np.int64)
        which = np.flatnonzero(np.isin(chunk.tag_hash, codes))
    which = _matching(
        data,
        subscription,
        which,
        chunk.tag_start,
        chunk.tag_length,
        chunk.properties_start,
        chunk.properties_length,
    )
    return MessageBatch([chunk if len(which) == kept else chunk.taken(which)])


def _matching(
    data: bytes,
    subscription: SubscriptionData,
    which: npt.NDArray[np.int64],
    tag_start: npt.NDArray[np.int64],
    tag_length: npt.NDArray[np.int32],
    properties_start: npt.NDArray[np.int64],
    properties_length: npt.NDArray[np.int32],
) -> npt.NDArray[np.int64]:
    """Of the records ``which`` (indexes into the columns, already matched on the tag hash
    codes), those whose tag string is one of the subscription's and that match its SQL92
    expression, in order: what both readers keep after the hash match."""
    if subscription.tags and len(which):
        wanted = frozenset(tag.encode() for tag in subscription.tags)
        starts = tag_start[which].tolist()
        ends = (tag_start[which] + tag_length[which]).tolist()
        matches = [data[a:b] in wanted for a, b in zip(starts, ends, strict=True)]
        which = which[np.array(matches, dtype=bool)]
    if subscription.expression_type is ExpressionType.SQL92:
        selected = _sql92_matches(
            data,
            subscription,
            properties_start[which].tolist(),
            (properties_start[which] + properties_length[which]).tolist(),
            tag_start[which].tolist(),
            (tag_start[which] + tag_length[which]).tolist(),
        )
        which = which[np.array(selected, dtype=bool)]
    return which


def read_pulled_batches_py(
    data: bytes,
    queue: MessageQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: SubscriptionData | None,
) -> MessageBatch:
    """:func:`read_pulled_batches` in Python and numpy: the reference of the native reader,
    its fallback, and the words of a refusal (raises :class:`~client.CorruptMessageError`)."""
    if not data:
        return MessageBatch()
    single = _single(data, queue, broker_name, offset, next_offset, subscription)
    if single is not None:
        return single
    positions, lengths = _frame(data, queue, offset)
    raw = np.frombuffer(data, dtype=np.uint8)
    position = np.array(positions, dtype=np.int64)
    length = np.array(lengths, dtype=np.int64)
    headers = raw[position[:, None] + _HEADER_BYTES].view(HEADER_DTYPE).ravel()
    _check_batches(data, headers, positions, lengths, queue, offset)
    topic = queue.topic.encode()
    if (headers["queue_id"] != queue.queue_id).any() or (
        headers["topic_length"] != len(topic)
    ).any():
        raise _corrupt("a batch of another queue", queue, offset, len(data))
    if topic:
        names = raw[position[:, None] + FIXED_HEADER_LENGTH + np.arange(len(topic))]
        if (names != np.frombuffer(topic, dtype=np.uint8)).any():
            raise _corrupt("a batch of another topic", queue, offset, len(data))
    count = headers["count"].astype(np.int64)
    columns = position + ((FIXED_HEADER_LENGTH + len(topic) + 7) & ~7)
    data_start = columns + RECORD_OVERHEAD * count
    if (count <= 0).any() or (data_start > position + length).any():
        raise _corrupt("record counts that do not fit their batches", queue, offset, len(data))

    # The column blocks of all batches, back to back: one join, then every column value is an
    # aligned i32 word of it. A batch of ``c`` records starting at record ``f`` of the answer
    # has its block at word 7f: tag hashes (two words each) at 7f, body lengths at 7f + 2c,
    # tag lengths at 7f + 3c, properties lengths at 7f + 4c, born deltas at 7f + 5c, flags at
    # 7f + 6c; record ``i`` of it (``r = f + i`` in the answer) is at 7f + kc + i = base + kc
    # with base = r + 6f.
    view = memoryview(data)
    words = np.frombuffer(
        b"".join([view[a:b] for a, b in zip(columns.tolist(), data_start.tolist(), strict=True)]),
        dtype="<i4",
    )
    total = int(count.sum())
    first = np.cumsum(count) - count
    batch = np.repeat(np.arange(len(position), dtype=np.int64), count)
    record = np.arange(total, dtype=np.int64)
    index = record - first[batch]
    per = count[batch]
    base = record + 6 * first[batch]
    body_length = words[base + 2 * per]
    tag_length = words[base + 3 * per]
    properties_length = words[base + 4 * per]
    sizes = body_length.astype(np.int64) + tag_length + properties_length
    if (sizes < 0).any() or (np.add.reduceat(sizes, first) != position + length - data_start).any():
        raise _corrupt("record lengths that do not add up", queue, offset, len(data))

    queue_offsets = headers["base_queue_offset"][batch] + index
    keep = (queue_offsets >= offset) & (queue_offsets < next_offset)
    hash_at = 2 * record + 5 * first[batch]  # 7f + 2i: the low word of the record's tag hash
    tag_hash = (words[hash_at + 1].astype(np.int64) << 32) | words[hash_at].view(np.uint32)
    if subscription is not None and subscription.tags:
        keep &= np.isin(tag_hash, np.fromiter(subscription.codes, dtype=np.int64))
    chosen = None if keep.all() else np.flatnonzero(keep)  # None: every record

    body_start = _starts(data_start, body_length, first, batch)
    bodies_end = data_start + np.add.reduceat(body_length.astype(np.int64), first)
    tag_start = _starts(bodies_end, tag_length, first, batch)
    tags_end = bodies_end + np.add.reduceat(tag_length.astype(np.int64), first)
    properties_start = _starts(tags_end, properties_length, first, batch)
    if subscription is not None and (
        subscription.tags or subscription.expression_type is ExpressionType.SQL92
    ):
        chosen = _matching(
            data,
            subscription,
            record if chosen is None else chosen,
            tag_start,
            tag_length,
            properties_start,
            properties_length,
        )
    born_delta_ms = words[base + 5 * per]
    flag = words[base + 6 * per]
    columns_of: dict[str, npt.NDArray[Any]] = {
        "batch": batch,
        "index": index,
        "body_start": body_start,
        "body_length": body_length,
        "tag_start": tag_start,
        "tag_length": tag_length,
        "properties_start": properties_start,
        "properties_length": properties_length,
        "tag_hash": tag_hash,
        "born_delta_ms": born_delta_ms,
        "flag": flag,
    }
    records: dict[str, npt.NDArray[Any] | list[int]] = (
        dict(columns_of)
        if chosen is None
        else {name: values[chosen] for name, values in columns_of.items()}
    )
    return MessageBatch([PulledChunk(data, headers, queue, broker_name, records)])


_ONE_BATCH_RECORDS: Final = 64
"""An answer of one batch of at most this many records is read with ``struct`` alone (a fixed
cost of numpy calls would be most of its price)."""


def _single(
    data: bytes,
    queue: MessageQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: SubscriptionData | None,
) -> MessageBatch | None:
    """The answer read without numpy when it is one small batch (the usual answer of a live
    consumer); None when it is not (or fails a check: the general path reports it)."""
    if len(data) < FIXED_HEADER_LENGTH:
        return None
    (
        total,
        magic,
        base_offset,
        _physical,
        _store_ms,
        _store_host,
        queue_id,
        crc,
        count,
        _reconsume,
        _born_ms,
        _born_host,
        _attributes,
        topic_length,
    ) = HEADER_STRUCT.unpack_from(data, 0)
    if total != len(data) or magic != BATCH_MAGIC or not 0 < count <= _ONE_BATCH_RECORDS:
        return None
    topic = queue.topic.encode()
    header_length = (FIXED_HEADER_LENGTH + topic_length + 7) & ~7
    data_start = header_length + RECORD_OVERHEAD * count
    if (
        queue_id != queue.queue_id
        or topic_length != len(topic)
        or data[FIXED_HEADER_LENGTH : FIXED_HEADER_LENGTH + topic_length] != topic
        or data_start > total
        or zlib.crc32(memoryview(data)[_CRC_START:]) != crc
    ):
        return None
    columns = columns_struct(count).unpack_from(data, header_length)
    hashes = columns[:count]
    body_lengths = columns[count : 2 * count]
    tag_lengths = columns[2 * count : 3 * count]
    property_lengths = columns[3 * count : 4 * count]
    if (
        min(columns[count : 4 * count]) < 0
        or data_start + sum(body_lengths) + sum(tag_lengths) + sum(property_lengths) != total
    ):
        return None
    body_starts = list(itertools.accumulate(body_lengths[:-1], initial=data_start))
    tag_region = data_start + sum(body_lengths)
    tag_starts = list(itertools.accumulate(tag_lengths[:-1], initial=tag_region))
    property_region = tag_region + sum(tag_lengths)
    property_starts = list(itertools.accumulate(property_lengths[:-1], initial=property_region))
    chosen: Sequence[int] = range(
        max(offset - base_offset, 0), min(next_offset - base_offset, count)
    )
    if subscription is not None and subscription.tags:
        codes = subscription.codes
        wanted = subscription.tags
        chosen = [
            i
            for i in chosen
            if hashes[i] in codes
            and data[tag_starts[i] : tag_starts[i] + tag_lengths[i]].decode() in wanted
        ]
    if subscription is not None and subscription.expression_type is ExpressionType.SQL92:
        selected = _sql92_matches(
            data,
            subscription,
            [property_starts[i] for i in chosen],
            [property_starts[i] + property_lengths[i] for i in chosen],
            [tag_starts[i] for i in chosen],
            [tag_starts[i] + tag_lengths[i] for i in chosen],
        )
        chosen = [i for i, keep in zip(chosen, selected, strict=True) if keep]
    if not len(chosen):
        return MessageBatch()
    born = columns[4 * count : 5 * count]
    flags = columns[5 * count :]
    records: dict[str, Any] = {
        "batch": [0] * len(chosen),
        "index": list(chosen),
        "body_start": [body_starts[i] for i in chosen],
        "body_length": [body_lengths[i] for i in chosen],
        "tag_start": [tag_starts[i] for i in chosen],
        "tag_length": [tag_lengths[i] for i in chosen],
        "properties_start": [property_starts[i] for i in chosen],
        "properties_length": [property_lengths[i] for i in chosen],
        "tag_hash": [hashes[i] for i in chosen],
        "born_delta_ms": [born[i] for i in chosen],
        "flag": [flags[i] for i in chosen],
    }
    headers = np.frombuffer(data, dtype=HEADER_DTYPE, count=1)
    return MessageBatch([PulledChunk(data, headers, queue, broker_name, records)])


def _sql92_matches(
    data: bytes,
    subscription: SubscriptionData,
    property_starts: Sequence[int],
    property_ends: Sequence[int],
    tag_starts: Sequence[int],
    tag_ends: Sequence[int],
) -> list[bool]:
    """Which records (their properties and tag at these spans of ``data``) the subscription's
    SQL92 expression selects, as the broker selected their batches: one property parse per
    record, the price of a SQL92 subscription."""
    matches = _compiled(subscription.sub_string).matches
    out: list[bool] = []
    for a, b, c, d in zip(property_starts, property_ends, tag_starts, tag_ends, strict=True):
        out.append(matches(join_tag(data[a:b], data[c:d].decode())))
    return out


@lru_cache(maxsize=256)
def _compiled(expression: str) -> Sql92Filter:
    return compile_sql92(expression)


def _frame(data: bytes, queue: MessageQueue, offset: int) -> tuple[list[int], list[int]]:
    """Where each batch starts and how long it is (its magic and CRC checked by
    :func:`_check_batches`): a walk of the length prefixes, the one loop per batch."""
    positions: list[int] = []
    lengths: list[int] = []
    end = len(data)
    position = 0
    unpack = _LENGTH.unpack_from
    while position < end:
        if end - position < FIXED_HEADER_LENGTH:
            raise _corrupt("a truncated batch", queue, offset, end, position)
        length = unpack(data, position)[0]
        if length < FIXED_HEADER_LENGTH or position + length > end:
            raise _corrupt("a broken batch header", queue, offset, end, position)
        positions.append(position)
        lengths.append(length)
        position += length
    return positions, lengths


def _check_batches(
    data: bytes,
    headers: npt.NDArray[np.void],
    positions: list[int],
    lengths: list[int],
    queue: MessageQueue,
    offset: int,
) -> None:
    """Each batch's magic, then its CRC (one zlib call per batch), in answer order."""
    bad_magic = np.flatnonzero(headers["magic"] != BATCH_MAGIC)
    if len(bad_magic):
        at = positions[int(bad_magic[0])]
        raise _corrupt("a broken batch header", queue, offset, len(data), at)
    view = memoryview(data)
    crc32 = zlib.crc32
    computed = np.array(
        [crc32(view[a + _CRC_START : a + n]) for a, n in zip(positions, lengths, strict=True)],
        dtype=np.uint32,
    )
    bad_crc = np.flatnonzero(computed != headers["crc"])
    if len(bad_crc):
        which = int(bad_crc[0])
        raise _corrupt(
            f"CRC mismatch: stored={int(headers['crc'][which]):#010x} "
            f"computed={int(computed[which]):#010x}",
            queue,
            offset,
            len(data),
            positions[which],
        )


def _starts(
    region: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int32],
    first: npt.NDArray[np.int64],
    batch: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Where each record's part starts: its batch's ``region`` plus the lengths of the parts
    before it in that batch."""
    before = np.cumsum(lengths, dtype=np.int64) - lengths
    starts: npt.NDArray[np.int64] = region[batch] + before - before[first][batch]
    return starts


def _corrupt(
    problem: str, queue: MessageQueue, offset: int, length: int, position: int = -1
) -> CorruptMessageError:
    values: dict[str, Any] = {
        "topic": queue.topic,
        "broker": queue.broker_name,
        "queue_id": queue.queue_id,
        "pull_offset": offset,
        "response_length": length,
    }
    if position >= 0:
        values["batch_position"] = position
    return CorruptMessageError(f"pulled record batch failed its check: {problem}", **values)
