"""What a store derives from its log beyond the consume queues: the queue offset each queue
gives next (in a broker group, apart from the queues' dispatched ends) and the idempotent
producers' last batches; noted batch by batch as a follower appends, rebuilt from the log.

In a broker group a batch is appended long before it is dispatched (when the high watermark
passes it), so the offsets the leader gives are counted here (:class:`QueueCounters`) and not
read from the consume queues, and a follower counts them from the batches it is sent. Both
counters and producer state are functions of the log: after recovery and after a truncation
they are rebuilt (:func:`rebuild_log_state`) from what is known durable (the consume queues up
to the committed offset; a producer-state snapshot) plus a scan of the log's tail.

Caller: the store's start (``_message_store``), its truncation (``_truncation``), its replicated
appends (``_replica_appends``) and the leader's put path (``_leader_path``).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from typing import Final

from aeromq.broker.store._commit_log import CommitLog
from aeromq.broker.store._dispatch import BatchHead, log_units, read_head
from aeromq.broker.store._producer_state import ProducerSnapshot, ProducerStateTable, StoredBatch
from aeromq.broker.store._queue_table import ConsumeQueueTable
from aeromq.common.record_batch import ATTRIBUTES_OFFSET, PRODUCER_STATE_FLAG, read_producer_state

__all__ = ["QueueCounters", "note_batch", "rebuild_log_state", "restore_producers"]

_log = logging.getLogger(__name__)

_U16: Final = struct.Struct("<H")


class QueueCounters:
    """Per (topic, queue id), the queue offset the next record appended to it gets. Changed
    under the store's put lock."""

    def __init__(self) -> None:
        self._next: dict[tuple[str, int], int] = {}

    def next_offset(self, topic: str, queue_id: int) -> int:
        """The queue offset of the queue's next record (0 for a queue never written)."""
        return self._next.get((topic, queue_id), 0)

    def set(self, topic: str, queue_id: int, next_offset: int) -> None:
        """The queue's next record gets ``next_offset``."""
        self._next[(topic, queue_id)] = next_offset

    def reset(self, queues: ConsumeQueueTable) -> None:
        """Start over from the consume queues' ends (what is dispatched)."""
        self._next = {(queue.topic, queue.queue_id): queue.max_offset for queue in queues}

    def __iter__(self) -> Iterator[tuple[tuple[str, int], int]]:
        return iter(list(self._next.items()))


def note_batch(
    head: BatchHead,
    batch: memoryview,
    position: int,
    counters: QueueCounters | None,
    producers: ProducerStateTable | None,
) -> None:
    """Count an appended batch (at ``position``) in ``counters`` and, when it carries a
    producer state, in ``producers`` (either may be None: not counted)."""
    if counters is not None:
        counters.set(head.topic, head.queue_id, head.base_queue_offset + head.record_count)
    if producers is not None and head.attributes & PRODUCER_STATE_FLAG:
        state = read_producer_state(batch)
        if state is not None:
            producers.record(
                state,
                head.topic,
                head.queue_id,
                StoredBatch(
                    state.base_sequence,
                    head.record_count,
                    position,
                    head.base_queue_offset,
                    head.length,
                    head.store_timestamp_ms,
                ),
            )


def rebuild_log_state(
    commit_log: CommitLog,
    end: int,
    *,
    counters: QueueCounters | None = None,
    counters_from: int = 0,
    producers: ProducerStateTable | None = None,
    producers_from: int = 0,
) -> None:
    """Note every batch of the log up to ``end``: in ``counters`` from ``counters_from``, in
    ``producers`` from ``producers_from`` (both batch boundaries). Recovery checked those
    batches; one whose header is not a store's is skipped (and logged)."""
    start = max(
        commit_log.min_offset,  # (what retention removed is not there to scan)
        min(
            counters_from if counters is not None else end,
            producers_from if producers is not None else end,
        ),
    )
    for position, _size, batch in log_units(commit_log, start, end):
        if batch is None:
            continue
        with batch:
            if (counters is None or position < counters_from) and not (
                _attributes(batch) & PRODUCER_STATE_FLAG
            ):
                continue  # nothing to note: only producer state is wanted here
            head = read_head(batch)
            if head is None:
                _log.warning(
                    "a batch the store could not have written: physical_offset=%d", position
                )
                continue
            note_batch(
                head,
                batch,
                position,
                counters if position >= counters_from else None,
                producers if position >= producers_from else None,
            )


def _attributes(batch: memoryview) -> int:
    return int(_U16.unpack_from(batch, ATTRIBUTES_OFFSET)[0])


def expiry_scan_start(commit_log: CommitLog, cutoff_ms: int) -> int:
    """Where a scan must start to see every batch stored at or after ``cutoff_ms``: the start
    of the last segment whose first batch is older (store times never decrease in the log)."""
    start = commit_log.min_offset
    for mapped in commit_log.files.files:
        first = commit_log.first_store_timestamp(mapped)
        if first is not None and first >= cutoff_ms:
            break
        start = mapped.start_offset
    return start


def restore_producers(
    commit_log: CommitLog,
    snapshot: ProducerSnapshot | None,
    valid_at: int | None,
    unused_before: int | None,
    end: int,
    cutoff_ms: int,
) -> tuple[ProducerStateTable, int]:
    """The producer state of the log before ``end`` as far as it is known without a scan, and
    where the scan must start. ``snapshot`` is the saved table; ``valid_at`` the offset the
    last checkpoint says it (or, without a snapshot, the empty table: an empty state is not
    saved) still held at; ``unused_before`` an offset before which no batch carries producer
    state (a checkpoint of a version before producer state). In that order of preference, and
    only from an offset at or before ``end``; else a scan of what the expiry keeps."""
    if snapshot is not None:
        if valid_at is not None and snapshot.offset <= valid_at <= end:
            return snapshot.table, valid_at
        if snapshot.offset <= end:
            return snapshot.table, snapshot.offset
    else:
        start = valid_at if valid_at is not None else unused_before
        if start is not None and start <= end:
            return ProducerStateTable(), max(start, commit_log.min_offset)
    return ProducerStateTable(), expiry_scan_start(commit_log, cutoff_ms)
