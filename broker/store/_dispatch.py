"""A stored batch's header read back, and the batch dispatched from it to its consume queue
and the index; the commit log walked batch by batch.

Dispatch writes the consume-queue entries of a batch already in the log (one numpy write for
its records) and indexes its keys. A single broker does it as it appends (``_put_path``);
recovery does it again for what follows the checkpoint (``_recovery``); a store in a broker
group does it when the committed offset passes the batch (``_commit_path``), so consumers only
ever see committed records. The entries are rewritten only where they differ, and only
records past ``index_from`` are indexed: dispatching a batch twice leaves what once does.

Caller: those modules, and the state rebuilt from the log's tail (``_tail_scan``). No I/O but
the store objects it is given.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from typing import Final, NamedTuple

import numpy as np

from aeromq.broker._errors import CorruptRecordError
from aeromq.broker.store._batch_codec import batch_keys
from aeromq.broker.store._commit_log import BATCH_HEAD, BLANK_MAGIC, CommitLog
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._queue_table import ConsumeQueueTable
from aeromq.common import is_valid_topic_name
from aeromq.common.record_batch import BATCH_MAGIC, FIXED_HEADER_LENGTH, batch_header_length

__all__ = ["BatchHead", "dispatch_batch", "log_units", "read_head"]

_log = logging.getLogger(__name__)

_PREFIX: Final = struct.Struct("<iI")


class BatchHead(NamedTuple):
    """What the store reads from a stored batch's header."""

    length: int
    base_queue_offset: int
    store_timestamp_ms: int
    queue_id: int
    record_count: int
    attributes: int
    header_length: int
    topic: str


def read_head(batch: memoryview) -> BatchHead | None:
    """The header of an intact batch (framing and CRC checked), or None when it is not one the
    store could have written (a topic that is not a valid name, a negative queue id or
    offset)."""
    (
        size,
        _magic,
        base_queue_offset,
        _base_physical_offset,
        store_timestamp_ms,
        _store_host,
        queue_id,
        _crc,
        count,
        attributes,
        topic_length,
    ) = BATCH_HEAD.unpack_from(batch, 0)
    try:
        topic = bytes(batch[FIXED_HEADER_LENGTH : FIXED_HEADER_LENGTH + topic_length]).decode()
    except UnicodeDecodeError:
        return None
    if not is_valid_topic_name(topic) or queue_id < 0 or base_queue_offset < 0:
        return None
    header_length = batch_header_length(topic_length, attributes)
    return BatchHead(
        size,
        base_queue_offset,
        store_timestamp_ms,
        queue_id,
        count,
        attributes,
        header_length,
        topic,
    )


def dispatch_batch(
    head: BatchHead,
    batch: memoryview,
    position: int,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    index_from: int,
) -> tuple[int, int]:
    """Write the consume-queue entries of the batch at ``position`` where they differ, index
    its records past ``index_from`` the index has not seen. Returns ``(records written or
    indexed, 1 if its entries left a gap in the queue)``."""
    topic, queue_id, count, size = head.topic, head.queue_id, head.record_count, head.length
    base_queue_offset = head.base_queue_offset
    queue = queues.get_or_create(topic, queue_id)
    tags = np.frombuffer(batch, dtype="<i8", count=count, offset=head.header_length).copy()
    changed = gap = 0
    first = max(base_queue_offset, queue.min_offset)
    skip = first - base_queue_offset
    if skip < count:
        if first >= queue.max_offset:  # past the queue's end (each commit's new batch): no entry
            same = False
        else:
            existing = queue.entries(first, count - skip)
            same = (
                len(existing) == count - skip
                and bool((existing["offset"] == position).all())
                and bool((existing["size"] == size).all())
                and bool((existing["tag"] == tags[skip:]).all())
            )
            del existing
        if not same:
            if first > queue.max_offset:
                gap = 1
                _log.warning(
                    "consume queue gap during dispatch: topic=%s queue_id=%d queue_offset=%d "
                    "max_offset=%d",
                    topic,
                    queue_id,
                    first,
                    queue.max_offset,
                )
            queue.put_batch(first, position, size, tags[skip:])
            changed = count - skip
    if index is not None and position + count - 1 > index_from:
        indexed = 0
        for i, keys in batch_keys(batch, count, head.header_length):
            if position + i > index_from:
                index.put(topic, keys, position + i, head.store_timestamp_ms)
                indexed += 1
        if indexed and not changed:
            changed = indexed
    return changed, gap


def log_units(
    commit_log: CommitLog, start: int, end: int
) -> Iterator[tuple[int, int, memoryview | None]]:
    """``(physical offset, length, batch)`` of each unit of the log from ``start`` (a batch
    boundary) while it ends at or before ``end``: a batch as a view of its segment (the caller
    releases it), a blank filler as None. Stops at never-written space. The bytes were checked
    when they were appended (and again by recovery): only their framing is read here, and
    framing that is neither a batch nor a blank raises :class:`CorruptRecordError`."""
    position = start
    files = commit_log.files
    while position < end:
        mapped = files.find(position)
        if mapped is None:
            return
        relative = position - mapped.start_offset
        if mapped.size - relative < _PREFIX.size:
            return
        size, magic = _PREFIX.unpack_from(mapped.view, relative)
        if size == 0 and magic == 0:
            return
        if (
            magic not in (BATCH_MAGIC, BLANK_MAGIC)
            or size < _PREFIX.size
            or size > mapped.size - relative
        ):
            raise CorruptRecordError(
                "no batch or blank filler where one should start",
                physical_offset=position,
                size=size,
                magic=magic,
            )
        if position + size > end:
            return
        if magic == BLANK_MAGIC:
            yield position, size, None
        else:
            yield position, size, mapped.view[relative : relative + size]
        position += size
