"""Between the store's message objects and record batches (``common/record_batch/``):
``InboundMessage``s into one batch (``put_messages``, for tests and tools), a stored batch's
records into ``StoredMessage``s (``get_messages``, lookups), and the keys a batch's records
are indexed under. No I/O here; the produce and pull paths never come through this module.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

import numpy as np

from aeromq.broker.store._message import InboundMessage, StoredMessage, index_keys
from aeromq.broker.store._results import PutMessageStatus
from aeromq.common import decode_properties, split_tag, stored_properties
from aeromq.common.record_batch import (
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    MAX_PROPERTIES_LENGTH,
    TIMER_FLAG,
    RecordBatch,
    encode_batch,
)

__all__ = ["MAX_PROPERTIES_LENGTH", "batch_keys", "decode_record", "encode_messages"]

_KEY_MARKERS = (b"KEYS\x01", b"UNIQ_KEY\x01")
_UNIQUE_MARKER = _KEY_MARKERS[1]
_PROPERTY_END = 2  # the byte that ends each property (PROPERTY_SEPARATOR)
_I32 = struct.Struct("<i")
_SMALL_BATCH = 64
"""Up to this many records, :func:`batch_keys` reads the property lengths without numpy."""
_TIMER_PROPERTIES = ("TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "DELAY")
"""A message with one of these is due later: its batch gets ``TIMER_FLAG`` (``broker.timer``)."""


def encode_messages(
    messages: Sequence[InboundMessage], topic: str, topic_bytes: bytes, queue_id: int
) -> tuple[PutMessageStatus, bytearray | None]:
    """One batch of ``messages`` (all of ``topic`` and ``queue_id``): the TAGS property goes
    to the tags column, the others are encoded RocketMQ-style. Batch-wide fields (sys flag,
    born host, reconsume times) are the first message's; born timestamps and flags are kept
    per message; the prepared transaction offset is not stored (the batch has no such field).
    A batch holding a message with a delivery time (``DELAY``, ``TIMER_DELIVER_MS`` or
    ``TIMER_DELAY_SEC``) gets ``TIMER_FLAG``, as the producer sets it. Returns
    ``(PUT_OK, batch)`` or the status that refuses the whole batch."""
    tags: list[str | None] = []
    encoded: list[bytes] = []
    timer = 0
    try:
        for message in messages:
            if message.topic != topic or message.queue_id != queue_id:
                return PutMessageStatus.MESSAGE_ILLEGAL, None
            if not timer and any(name in message.properties for name in _TIMER_PROPERTIES):
                timer = TIMER_FLAG
            tag, data = split_tag(message.properties)
            if len(data) > MAX_PROPERTIES_LENGTH:
                return PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, None
            tags.append(tag)
            encoded.append(data)
        first = messages[0]
        base_born = first.born_timestamp_ms
        batch = encode_batch(
            topic_bytes,
            [message.body for message in messages],
            tags,
            encoded,
            flags=[message.flag for message in messages],
            born_timestamp_ms=base_born,
            born_deltas_ms=[message.born_timestamp_ms - base_born for message in messages],
            born_host=first.born_host,
            reconsume_times=first.reconsume_times,
            attributes=first.sys_flag | timer,
        )
    except (struct.error, TypeError, ValueError, AttributeError, UnicodeError, OverflowError):
        return PutMessageStatus.MESSAGE_ILLEGAL, None
    return PutMessageStatus.PUT_OK, batch


def decode_record(batch: RecordBatch, index: int) -> StoredMessage:
    """Record ``index`` of a checked ``batch`` as a ``StoredMessage`` (tags back among the
    properties, ``body_crc`` computed, ``store_size`` the record's bytes). A compressed batch's
    body comes inflated, its sys flag without the compression bits (re-encoded, it is plain)."""
    body = batch.body(index)
    properties = stored_properties(batch, index)
    return StoredMessage(
        topic=batch.topic,
        queue_id=batch.queue_id,
        body=body,
        properties=properties,
        flag=int(batch.flags[index]),
        sys_flag=batch.attributes & ~(COMPRESSED_FLAG | COMPRESSION_TYPE_MASK),  # body inflated
        queue_offset=batch.base_queue_offset + index,
        physical_offset=batch.base_physical_offset + index,
        store_size=batch.record_size(index),
        body_crc=zlib.crc32(body),
        born_timestamp_ms=batch.base_born_timestamp_ms + int(batch.born_deltas_ms[index]),
        born_host=batch.born_host,
        store_timestamp_ms=batch.store_timestamp_ms,
        store_host=batch.store_host,
        reconsume_times=batch.reconsume_times,
        prepared_transaction_offset=0,
    )


def batch_keys(batch: memoryview, count: int, header_length: int) -> list[tuple[int, list[str]]]:
    """``(record index, keys)`` of the records of ``batch`` that carry ``KEYS`` or
    ``UNIQ_KEY`` (the properties column is searched once; records are parsed only when it
    holds one).

    Called once per stored batch (``_put_path.py``): the property lengths of a batch of up to
    :data:`_SMALL_BATCH` records are read with one ``struct`` call, not with numpy, whose three
    calls cost a one-record send about 20 us of the broker's CPU
    (``docs/history/latency-log.md``); a one-record batch (a one-message send) goes straight to
    its record's properties, in a third of the time of the general walk (2.7 against 7 us,
    ``timeit``)."""
    at = header_length + 16 * count
    if count == 1:
        (length,) = _I32.unpack_from(batch, at)
        if length <= 0:
            return []
        data = bytes(batch[len(batch) - length :])
        if _UNIQUE_MARKER not in data and _KEY_MARKERS[0] not in data:
            return []
        keys = _record_keys(data)
        return [(0, keys)] if keys else []
    if count <= _SMALL_BATCH:
        lengths: list[int] = list(struct.unpack_from(f"<{count}i", batch, at))
        total = sum(lengths)
    else:
        column = np.frombuffer(batch, dtype="<i4", count=count, offset=at)
        total = int(column.sum(dtype=np.int64))
        lengths = column.tolist()
    if not total:
        return []
    data = bytes(batch[len(batch) - total :])
    if not any(marker in data for marker in _KEY_MARKERS):
        return []
    found: list[tuple[int, list[str]]] = []
    start = 0
    for i, length in enumerate(lengths):
        end = start + length
        if end > start:
            keys = _record_keys(data[start:end])
            if keys:
                found.append((i, keys))
        start = end
    return found


def _record_keys(properties: bytes) -> list[str]:
    """:func:`~broker.store._message.index_keys` of one record's encoded properties. Those
    with a ``UNIQ_KEY`` and no ``KEYS`` (what a producer sends unless told keys) have it cut
    out where it is, without decoding every property into a dict (a third of the cost)."""
    if _KEY_MARKERS[0] not in properties:
        at = properties.rfind(_UNIQUE_MARKER)
        if at == 0 or (at > 0 and properties[at - 1] == _PROPERTY_END):
            start = at + len(_UNIQUE_MARKER)
            end = properties.find(b"\x02", start)
            value = properties[start:] if end < 0 else properties[start:end]
            return [value.decode()] if value else []
    return index_keys(decode_properties(properties))
