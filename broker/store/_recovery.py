"""Recovery at start: find where the commit log really ends and make the consume queues and
the index agree with it (RocketMQ's ``recoverNormally``/``recoverAbnormally`` in one pass).

1. Scan the commit log from the checkpoint's ``dispatched_offset`` (everything before it is
   durable, with its derived data), checking each record's framing and CRC.
2. The first record that is torn or corrupt ends the log: it and everything after it are
   zeroed (later segments deleted). Never-written space ends it cleanly.
3. Each whole record after the checkpoint is dispatched again: its consume-queue entry is
   rewritten where it differs, its keys are indexed if the index has not seen it.
4. Consume-queue entries whose records lie past the end are dropped; each queue's min offset
   moves to the first record still in the log.

No I/O of its own beyond the store objects it is given; the report says what it did.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from aeromq.broker.store._checkpoint import Checkpoint
from aeromq.broker.store._commit_log import CommitLog
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._message import StoredMessage, index_keys
from aeromq.broker.store._queue_table import ConsumeQueueTable
from aeromq.broker.store._record import RecordCheck, check_record, decode_record
from aeromq.common import tag_hash_code

__all__ = ["RecoveryReport", "recover"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecoveryReport:
    """What recovery found and did.

    ``truncated_at`` is the physical offset of the torn or corrupt record that ended the log
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
    broken: RecordCheck | None = None
    while True:
        mapped = files.find(position)
        if mapped is None:
            break
        relative = position - mapped.start_offset
        check, size = check_record(mapped.view, relative, mapped.size)
        if check is RecordCheck.OK:
            scanned += 1
            message = decode_record(mapped.mm, relative)
            if message.physical_offset != position:  # a stale record left by an old tail
                broken = RecordCheck.BAD_POSITION
                break
            last_stamp = message.store_timestamp_ms
            changed, gap = _dispatch(message, queues, index, index_from)
            redispatched += changed
            gaps += gap
            position += size
        elif check is RecordCheck.BLANK:
            position = mapped.end_offset
        elif check is RecordCheck.END:
            break
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
    message: StoredMessage,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    index_from: int,
) -> tuple[int, int]:
    """Rewrite one record's consume-queue entry if it differs, index it if new.
    Returns ``(1 if anything was written, 1 if the entry left a gap)``."""
    queue = queues.get_or_create(message.topic, message.queue_id)
    tags = message.tags
    entry = (message.physical_offset, message.store_size, tag_hash_code(tags) if tags else 0)
    changed = gap = 0
    if message.queue_offset >= queue.min_offset and queue.entry(message.queue_offset) != entry:
        if message.queue_offset > queue.max_offset:
            gap = 1
            _log.warning(
                "consume queue gap during recovery: topic=%s queue_id=%d queue_offset=%d "
                "max_offset=%d",
                message.topic,
                message.queue_id,
                message.queue_offset,
                queue.max_offset,
            )
        queue.put(message.queue_offset, [entry[0]], [entry[1]], [entry[2]])
        changed = 1
    if index is not None and message.physical_offset > index_from:
        keys = index_keys(message.properties)
        if keys:
            index.put(message.topic, keys, message.physical_offset, message.store_timestamp_ms)
            changed = 1
    return changed, gap
