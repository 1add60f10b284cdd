"""An answer of one small batch (the usual answer of a live consumer) read with ``struct``
alone: a fixed cost of numpy calls would be most of its price.

Caller: :func:`~common.record_batch.read_pulled_chunk_py` (the numpy reader) tries this first
and reads the answer in numpy when it is not one small batch or fails a check. No I/O.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from aeromq.common._tags import ExpressionType, SubscriptionData
from aeromq.common.record_batch._filter import sql92_matches
from aeromq.common.record_batch.chunk import PulledChunk, PulledQueue
from aeromq.common.record_batch.descriptor import (
    BATCH_MAGIC,
    CRC_START,
    FIXED_HEADER_LENGTH,
    HEADER_DTYPE,
    HEADER_STRUCT,
    RECORD_OVERHEAD,
    batch_header_length,
    columns_struct,
)

__all__ = ["read_small_answer"]

_ONE_BATCH_RECORDS: Final = 64
"""An answer of one batch of at most this many records is read with ``struct`` alone (a fixed
cost of numpy calls would be most of its price)."""


def read_small_answer(
    data: bytes,
    queue: PulledQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: SubscriptionData | None,
) -> list[PulledChunk] | None:
    """The answer read without numpy when it is one small batch (the usual answer of a live
    consumer): its chunk, or none when no record is kept; None when it is not one small batch
    (or fails a check: the general path reports it)."""
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
        attributes,
        topic_length,
    ) = HEADER_STRUCT.unpack_from(data, 0)
    if total != len(data) or magic != BATCH_MAGIC or not 0 < count <= _ONE_BATCH_RECORDS:
        return None
    topic = queue.topic.encode()
    header_length = batch_header_length(topic_length, attributes)
    data_start = header_length + RECORD_OVERHEAD * count
    if (
        queue_id != queue.queue_id
        or topic_length != len(topic)
        or data[FIXED_HEADER_LENGTH : FIXED_HEADER_LENGTH + topic_length] != topic
        or data_start > total
        or zlib.crc32(memoryview(data)[CRC_START:]) != crc
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
        selected = sql92_matches(
            data,
            subscription,
            [property_starts[i] for i in chosen],
            [property_starts[i] + property_lengths[i] for i in chosen],
            [tag_starts[i] for i in chosen],
            [tag_starts[i] + tag_lengths[i] for i in chosen],
        )
        chosen = [i for i, keep in zip(chosen, selected, strict=True) if keep]
    if not len(chosen):
        return []
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
    return [PulledChunk(data, headers, queue, broker_name, records)]
