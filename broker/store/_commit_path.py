"""A store in a broker group: the committed offset, and the dispatch that makes batches visible
once it passes them.

The replication layer computes the group's high watermark (HW: the offset below which every byte
is fsynced on every member of the committed in-sync set) and sets it here
(:meth:`CommitPath.set_high_watermark`; the leader's own fsync is ``flush()``, its offset
``flushed_physical_offset``). Raising it dispatches the batches it passes, in log order, to
their consume queues and the index (``_dispatch``; metadata batches to the topic table and the
consumer offsets, ``_metadata_log``), answers the puts it passed (``_commit_watermark``), and
then wakes the long polls of the queues that grew (a released pull is read and answered on
this thread: 60-80 us of a round's 256 messages that the puts' answers waited for, traced). So pulls, max offsets, arrivals and key
lookups see committed batches only, on the leader and the followers alike, and a put answered
``PUT_OK`` is readable at once.

On a single broker the committed offset is what puts have always waited for: the log's end
under ASYNC flush, its flushed end under SYNC (a batch is visible as soon as it is appended).

Caller: the broker's replication layer, through ``MessageStore``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aeromq.broker._errors import CorruptRecordError, StoreIOError
from aeromq.broker.store._config import FlushMode
from aeromq.broker.store._dispatch import dispatch_batch, log_units, read_head
from aeromq.broker.store._meta_records import META_TOPIC
from aeromq.broker.store._metadata_log import apply_meta_batch
from aeromq.broker.store._results import PutMessageStatus
from aeromq.broker.store._store_parts import StoreParts

__all__ = ["CommitPath"]

_log = logging.getLogger(__name__)


class CommitPath(StoreParts):
    """The committed offset and dispatch on commit, for ``MessageStore`` (see module)."""

    @property
    def committed_offset(self) -> int:
        """The commit log offset below which batches are final: visible to gets, their puts
        answered. In a group the HW last set; on a single broker the log's end (ASYNC flush)
        or its flushed end (SYNC)."""
        if self._replicated:
            return self._commits.committed_offset
        if self.config.flush_mode is FlushMode.SYNC:
            return self.commit_log.flushed_offset
        return self.commit_log.max_offset

    def set_high_watermark(self, offset: int) -> int:
        """Raise the committed offset to ``offset`` (a batch boundary; lowered to the log's
        end, never moved down), dispatch what it passes and answer the puts it passed; returns
        the committed offset. Caller: the replication layer (leader: on followers' acks;
        follower: from the leader's frames), from any thread."""
        self._require_group()
        due: dict[tuple[str, int], int] = {}
        with self._put_lock:
            offset = min(offset, self.commit_log.max_offset)
            if offset <= self._commits.committed_offset:
                return self._commits.committed_offset
            if self._dispatched_offset < offset and self._writable:
                self._dispatch_committed(offset, due)
            self._commits.raise_to(offset)
        self._commits.settle()  # the sends first: a held pull's answer is read here too
        arrivals = self.arrivals
        if arrivals.active:
            for (topic, queue_id), max_offset in due.items():
                arrivals.notify(topic, queue_id, max_offset)
        return offset

    def on_commit_wait(self, listener: Callable[[], object] | None) -> None:
        """Call ``listener()`` (None: no one) after each put starts waiting for the committed
        offset, on the putting thread (the replication agent's wake-up). Caller: the
        replication layer."""
        self._require_group()
        self._commits.on_wait = listener

    def fail_uncommitted(
        self, status: PutMessageStatus = PutMessageStatus.REPLICATION_TIMEOUT
    ) -> int:
        """Answer every put still waiting for the committed offset with ``status`` now (by
        default ``REPLICATION_TIMEOUT``: outcome unknown); returns how many. Caller: the
        replication layer, when it can no longer commit (see also ``stop_leading``)."""
        self._require_group()
        return self._commits.fail_all(status)

    def _dispatch_committed(self, limit: int, due: dict[tuple[str, int], int]) -> None:
        """Dispatch the batches from the dispatched offset that end at or before ``limit``,
        noting in ``due`` each queue's new end; under the put lock. A queue or index file that
        cannot be written stops the store's writes (recovery dispatches again at start)."""
        queues = self.queues
        try:
            for position, size, batch in log_units(self.commit_log, self._dispatched_offset, limit):
                if batch is None:  # a blank filler
                    self._dispatched_offset = position + size
                    continue
                with batch:
                    head = read_head(batch)
                    if head is not None:
                        dispatch_batch(head, batch, position, queues, self.index, self._index_from)
                        if head.topic == META_TOPIC:
                            apply_meta_batch(
                                batch, position, self.topic_config, self.consumer_offsets
                            )
                        queue = queues.get(head.topic, head.queue_id)
                        if queue is not None:
                            due[(head.topic, head.queue_id)] = queue.max_offset
                    else:
                        _log.error("committed batch not dispatched: physical_offset=%d", position)
                self._dispatched_offset = position + size
        except (StoreIOError, CorruptRecordError) as exc:
            self._writable = False
            _log.error("cannot dispatch committed batches, store no longer writable: %s", exc)
