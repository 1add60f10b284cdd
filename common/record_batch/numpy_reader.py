"""The pull-answer reader in Python and numpy: :func:`read_pulled_chunk_py`, the reference the
C reader (``_reader.c``) is tested against, its fallback, and the words of a refusal.

A fixed number of numpy calls for the whole answer, plus a few Python operations per stored
batch (finding it, one zlib CRC call, a slice of its column block): the headers are read as one
structured array, the column blocks joined into one array of i32 words, and each column of
every record gathered from it at once by word index. An answer of one small batch is read with
``struct`` alone (:mod:`._small_answer`). No I/O.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from aeromq.common._tags import ExpressionType, SubscriptionData
from aeromq.common.record_batch._filter import matching
from aeromq.common.record_batch._small_answer import read_small_answer
from aeromq.common.record_batch.chunk import PulledChunk, PulledQueue, _corrupt
from aeromq.common.record_batch.descriptor import (
    BATCH_MAGIC,
    CRC_START,
    FIXED_HEADER_LENGTH,
    HEADER_DTYPE,
    PRODUCER_STATE_FLAG,
    PRODUCER_STATE_LENGTH,
    RECORD_OVERHEAD,
    producer_state_position,
)

__all__ = ["read_pulled_chunk_py"]

_LENGTH: Final = struct.Struct("<i")
_HEADER_BYTES: Final = np.arange(FIXED_HEADER_LENGTH, dtype=np.int64)


def read_pulled_chunk_py(
    data: bytes,
    queue: PulledQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: SubscriptionData | None,
) -> PulledChunk | None:
    """:func:`~common.record_batch.read_pulled_chunk` in Python and numpy: the reference of the
    native reader, its fallback, and the words of a refusal (raises
    :class:`~common.CorruptMessageError`)."""
    if not data:
        return None
    small = read_small_answer(data, queue, broker_name, offset, next_offset, subscription)
    if small is not None:
        return small[0] if small else None
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
    # the columns follow the topic's padding, and the producer state of a batch that has one
    columns = position + producer_state_position(len(topic))
    columns += np.where(headers["attributes"] & PRODUCER_STATE_FLAG, PRODUCER_STATE_LENGTH, 0)
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
        chosen = matching(
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
    return PulledChunk(data, headers, queue, broker_name, records)


def _frame(data: bytes, queue: PulledQueue, offset: int) -> tuple[list[int], list[int]]:
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
    queue: PulledQueue,
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
        [crc32(view[a + CRC_START : a + n]) for a, n in zip(positions, lengths, strict=True)],
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
