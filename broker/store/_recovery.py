"""Recovery at start: find where the commit log really ends and make the consume queues and
the index agree with it (RocketMQ's ``recoverNormally``/``recoverAbnormally`` in one pass).

1. Scan the commit log batch by batch from the checkpoint's ``dispatched_offset`` (everything
   before it is durable, with its derived data), checking each batch's framing and CRC
   (``check_batch(..., check_content=False)``) and that it sits where its header says.
2. The first batch that is torn or corrupt ends the log: it and everything after it are
   zeroed (later segments deleted). Never-written space ends it cleanly. A record of the
   format before batches stops the start with a ``StoreError`` (nothing is truncated).
3. Each whole batch after the checkpoint is dispatched again from its header: the entries of
   its records are rewritten where they differ, their keys indexed if the index has not
   seen them.
4. Consume-queue entries whose batches lie past the end are dropped; each queue's min offset
   moves to the first batch still in the log.

No I/O of its own beyond the store objects it is given; the report says what it did.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from aeromq.broker._errors import StoreError
from aeromq.broker.store._batch_codec import batch_keys
from aeromq.broker.store._checkpoint import Checkpoint
from aeromq.broker.store._commit_log import BATCH_HEAD, CommitLog, LogCheck, check_at
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._queue_table import ConsumeQueueTable
from aeromq.common import is_valid_topic_name
from aeromq.common.record_batch import FIXED_HEADER_LENGTH, batch_header_length

__all__ = ["RecoveryReport", "recover"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecoveryReport:
    """What recovery found and did.

    ``records_scanned`` and ``records_redispatched`` count records (not batches).
    ``truncated_at`` is the physical offset of the torn or corrupt batch that ended the log
    (None when it ended cleanly) and ``truncated_check`` why; ``zeroed_bytes`` how much
    garbage after the end was cleared.
    """

    clean_shutdown: bool
    scanned_from: int
    end_offset: int
    records_scanned: int
    records_redispatched: int
    truncated_at: int | None
    truncated_check: str | None
    zeroed_bytes: int
    queue_entries_dropped: int
    queue_gaps: int
    duration_ms: float
    offsets_clamped: int = 0  # committed consumer offsets lowered to their queue's end


def recover(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    checkpoint: Checkpoint | None,
) -> RecoveryReport:
    """Recover the loaded store objects in place (see the module docstring)."""
    began = time.perf_counter()
    files = commit_log.files
    start = checkpoint.dispatched_offset if checkpoint is not None else 0
    first = files.first
    last = files.last
    if first is None or last is None:
        start = 0
    elif start < first.start_offset or start > last.end_offset:
        start = first.start_offset
    index_from = index.end_physical_offset if index is not None else 0

    position = start
    scanned = redispatched = gaps = last_stamp = 0
    broken: LogCheck | None = None
    while True:
        mapped = files.find(position)
        if mapped is None:
            break
        relative = position - mapped.start_offset
        check, size = check_at(mapped.view, relative, mapped.size, position)
        if check is LogCheck.OK:
            with mapped.view[relative : relative + size] as batch:
                outcome = _dispatch(batch, position, queues, index, index_from)
            if outcome is None:  # intact, but not a batch this store could have written
                broken = LogCheck.BAD_LENGTHS
                break
            count, changed, gap, last_stamp = outcome
            scanned += count
            redispatched += changed
            gaps += gap
            position += size
        elif check is LogCheck.BLANK:
            position = mapped.end_offset
        elif check is LogCheck.END:
            break
        elif check is LogCheck.OLD_FORMAT:
            raise StoreError(
                "the commit log holds records of an older format: move the data directory "
                "away (or drain it with the old version) to start",
                path=str(mapped.path),
                physical_offset=position,
                found_format="AQM1 (one record per message)",
                expected_format="AQB1 (record batches)",
            )
        else:
            broken = check
            break

    end = position
    zeroed = commit_log.truncate(end)
    commit_log.set_end(end)
    commit_log.last_store_timestamp_ms = max(
        last_stamp, checkpoint.store_timestamp_ms if checkpoint is not None else 0
    )
    if broken is not None:
        _log.warning(
            "commit log truncated at a broken record: physical_offset=%d check=%s zeroed=%d",
            end,
            broken.name,
            zeroed,
        )

    dropped = 0
    physical_min = commit_log.min_offset
    for queue in queues:
        had = queue.max_offset
        queue.truncate_physical(end)
        dropped += had - queue.max_offset
        queue.correct_min_offset(physical_min)

    return RecoveryReport(
        clean_shutdown=checkpoint.clean_shutdown if checkpoint is not None else False,
        scanned_from=start,
        end_offset=end,
        records_scanned=scanned,
        records_redispatched=redispatched,
        truncated_at=end if broken is not None else None,
        truncated_check=broken.name if broken is not None else None,
        zeroed_bytes=zeroed,
        queue_entries_dropped=dropped,
        queue_gaps=gaps,
        duration_ms=(time.perf_counter() - began) * 1000.0,
    )


def _dispatch(
    batch: memoryview,
    position: int,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    index_from: int,
) -> tuple[int, int, int, int] | None:
    """Rewrite the consume-queue entries of one intact batch where they differ, index its
    records the index has not seen. Returns ``(records, records rewritten, 1 if its entries
    left a gap, store timestamp)``, or None when its header is not one the store wrote."""
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
    queue = queues.get_or_create(topic, queue_id)
    tags = np.frombuffer(batch, dtype="<i8", count=count, offset=header_length).copy()
    changed = gap = 0
    first = max(base_queue_offset, queue.min_offset)
    skip = first - base_queue_offset
    if skip < count:
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
                    "consume queue gap during recovery: topic=%s queue_id=%d queue_offset=%d "
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
        for i, keys in batch_keys(batch, count, header_length):
            if position + i > index_from:
                index.put(topic, keys, position + i, store_timestamp_ms)
                indexed += 1
        if indexed and not changed:
            changed = indexed
    return count, changed, gap, store_timestamp_ms
