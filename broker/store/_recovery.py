"""Recovery at start: find where the commit log really ends and make the consume queues and
the index agree with it (RocketMQ's ``recoverNormally``/``recoverAbnormally`` in one pass).

0. After a stop that was not clean, take the index back to what its last flush made durable
   (the checkpoint's ``index_mark``, ``IndexService.rewind``: the index is flushed less often
   than the checkpoint, and a crash of the machine leaves its later pages in any state) and
   start the scan below at the mark's ``dispatched_offset`` if that is earlier.
1. Scan the commit log batch by batch from the checkpoint's ``dispatched_offset`` (everything
   before it is durable, with its derived data), checking each batch's framing and CRC
   (``check_batch(..., check_content=False)``) and that it sits where its header says.
2. The first batch that is torn or corrupt ends the log: it and everything after it are
   zeroed (later segments deleted). Never-written space ends it cleanly. A record of the
   format before batches stops the start with a ``StoreError`` (nothing is truncated).
3. Each whole batch after the checkpoint is dispatched again from its header: the entries of
   its records are rewritten where they differ, their keys indexed if the index has not
   seen them. Recovery writes the queued index entries itself whenever :data:`DRAIN_AT` are
   queued (a drain of that many goes in chunks of ``DRAIN_CHUNK_MAX``), rather than leaving
   each put past ``MAX_PENDING`` to write two (one native call every second put once the
   queue was full: 2.07 us a record for 2.26 million re-indexed after a SIGKILL, 1.78 now).
4. Consume-queue entries whose batches lie past the end are dropped; each queue's min offset
   moves to the first batch still in the log.

A store in a broker group passes ``dispatch_until``, its committed offset as last persisted: the
whole log is scanned and checked, from its first segment (the batches before the checkpoint's
``dispatched_offset`` too, checked and not dispatched again: a corrupt batch there, bit rot on
one replica, ends the log like a torn tail, and the member fetches the rest from its leader,
so it never serves nor replicates it), but only batches that end at or before it are
dispatched (and entries past it dropped); the rest waits for the group's high watermark to
pass it again. The price is one read and CRC of the member's whole log at each start.

No I/O of its own beyond the store objects it is given; the report says what it did.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Final

from aeromq.broker._errors import StoreError
from aeromq.broker.store._checkpoint import Checkpoint
from aeromq.broker.store._commit_log import CommitLog, LogCheck, check_at
from aeromq.broker.store._config import FlushMode
from aeromq.broker.store._dispatch import dispatch_batch, read_head
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._queue_table import ConsumeQueueTable

__all__ = ["DRAIN_AT", "RecoveryReport", "recover"]

_log = logging.getLogger(__name__)

DRAIN_AT: Final = 1 << 15
"""Queued index entries at which recovery drains the queue (see the module docstring): under
``MAX_PENDING``, so no put pays for its own."""


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

    def describe(
        self, flush_mode: FlushMode, flush_interval_ms: int, *, group: bool = False
    ) -> str:
        """One line on what recovery found, for the operator (logged and printed at start);
        ``group``: the store of a broker group's member (what it acknowledged is on the ISR)."""
        if self.end_offset == 0 and self.records_scanned == 0 and self.truncated_at is None:
            return "recovery: a new, empty store"
        clamped = (
            f", lowered {self.offsets_clamped} committed consumer offsets to their queue's end"
            if self.offsets_clamped
            else ""
        )
        if self.clean_shutdown and self.truncated_at is None:
            return (
                f"recovery: clean shutdown, log ends at {self.end_offset}{clamped} "
                f"({self.duration_ms:.0f} ms)"
            )
        parts = [
            "recovery: the previous run did not shut down cleanly",
            f"scanned {self.records_scanned} records from offset {self.scanned_from}",
            f"re-dispatched {self.records_redispatched}",
            f"log ends at {self.end_offset}",
        ]
        if self.truncated_at is not None:
            parts.append(
                f"truncated a torn tail at {self.truncated_at} ({self.truncated_check}), "
                f"zeroed {self.zeroed_bytes} bytes"
            )
        else:
            parts.append("no torn record")
        if self.queue_entries_dropped:
            parts.append(f"dropped {self.queue_entries_dropped} queue entries past the end")
        if self.offsets_clamped:
            parts.append(clamped.removeprefix(", "))
        if group:
            parts.append(
                "group member: every acknowledged message is on the group's in-sync replicas; "
                "this member catches up from the leader"
            )
        elif flush_mode is FlushMode.ASYNC:
            parts.append(
                f"ASYNC flush: acknowledged messages of at most the last {flush_interval_ms} ms "
                "before the crash may be lost"
            )
        else:
            parts.append("SYNC flush: every acknowledged message is durable")
        return "; ".join(parts)


def recover(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    checkpoint: Checkpoint | None,
    *,
    dispatch_until: int | None = None,
) -> RecoveryReport:
    """Recover the loaded store objects in place (see the module docstring); with
    ``dispatch_until``, dispatch only the batches that end at or before it."""
    began = time.perf_counter()
    files = commit_log.files
    start = checkpoint.dispatched_offset if checkpoint is not None else 0
    mark = None
    if checkpoint is not None and not checkpoint.clean_shutdown:
        mark = checkpoint.index_mark
    if index is not None and mark is not None and index.rewind(mark):
        start = min(start, mark.dispatched_offset)  # the rest indexed again (see module)
    first = files.first
    last = files.last
    if first is None or last is None:
        start = 0
    elif start < first.start_offset or start > last.end_offset:
        start = first.start_offset
    index_from = index.end_physical_offset if index is not None else 0
    whole = dispatch_until is not None and first is not None  # a group member's (see module)
    position = first.start_offset if whole and first is not None else start
    scanned_from = position
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
                head = read_head(batch)
                if head is None:  # intact, but not a batch this store could have written
                    broken = LogCheck.BAD_LENGTHS
                    break
                if position >= start and (
                    dispatch_until is None or position + size <= dispatch_until
                ):
                    changed, gap = dispatch_batch(head, batch, position, queues, index, index_from)
                    redispatched += changed
                    gaps += gap
                    if index is not None and len(index.pending) >= DRAIN_AT:
                        index.drain()
            scanned += head.record_count
            last_stamp = head.store_timestamp_ms
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
    dispatched_end = end if dispatch_until is None else min(end, dispatch_until)
    for queue in queues:
        had = queue.max_offset
        queue.truncate_physical(dispatched_end)
        dropped += had - queue.max_offset
        queue.correct_min_offset(physical_min)

    return RecoveryReport(
        clean_shutdown=checkpoint.clean_shutdown if checkpoint is not None else False,
        scanned_from=scanned_from,
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
