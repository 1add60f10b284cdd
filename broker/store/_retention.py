"""Retention: whole commit log segments go when older than the reserve time or beyond the
disk budget (RocketMQ's ``CleanCommitLogService``), then the consume-queue and index files
that only point into them (``CleanConsumeQueueService``); queue min offsets move with them.

A segment's age is the store time of the first batch of the segment after it (store times
never decrease, so every batch of the segment is at least that old). The active (last)
segment is never deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from aeromq.broker.store._commit_log import CommitLog
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._mapped_file import MappedFile
from aeromq.broker.store._queue_table import ConsumeQueueTable

__all__ = ["RetentionReport", "run_retention"]


@dataclass(frozen=True)
class RetentionReport:
    """What one retention run deleted: files of the commit log, of the consume queues and of
    the index, and the commit log's first offset still held afterwards."""

    commit_log_files: int
    consume_queue_files: int
    index_files: int
    min_physical_offset: int


def run_retention(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    index: IndexService | None,
    *,
    now_ms: int,
    reserve_ms: int,
    max_store_bytes: int | None,
    max_files: int = 10,
) -> RetentionReport:
    """Delete what is due; returns what went."""
    files = commit_log.files
    current = files.files
    over_budget = files.total_bytes() - max_store_bytes if max_store_bytes is not None else 0
    successor = {id(m): current[i + 1] for i, m in enumerate(current[:-1])}

    def due(mapped: MappedFile) -> bool:
        nonlocal over_budget
        if over_budget > 0:
            over_budget -= mapped.size
            return True
        following = successor.get(id(mapped))
        if following is None:
            return False
        stamp = commit_log.first_store_timestamp(following)
        return stamp is not None and stamp + reserve_ms <= now_ms

    deleted = files.delete_front(due, max_files)
    physical_min = commit_log.min_offset
    queue_files = 0
    for queue in queues:
        queue_files += queue.delete_expired(physical_min, max_files)
    index_files = index.delete_expired(physical_min) if index is not None else 0
    return RetentionReport(deleted, queue_files, index_files, physical_min)
