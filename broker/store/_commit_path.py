"""A store in a broker group: the committed offset, and the dispatch that makes batches visible
once it passes them.

The replication layer computes the group's high watermark (HW: the offset below which every byte
is fsynced on every member of the committed in-sync set) and sets it here
(:meth:`CommitPath.set_high_watermark`; the leader's own fsync is ``flush()``, its offset
``flushed_physical_offset``). Raising it first answers the puts it passed
(``_commit_watermark``), then dispatches the batches it passes, in log order, to their consume
queues and the index (``_dispatch``; metadata batches to the topic table and the consumer
offsets, ``_metadata_log``), and then wakes the long polls of the queues that grew (a released
pull is read and answered on this thread). So pulls, max offsets, arrivals and key lookups see
committed batches only, on the leader and the followers alike.

**The answers before the dispatch.** A put is final once the HW passed its batch: the batch is
fsynced on every member of the ISR, and a crash before its dispatch loses nothing (recovery
dispatches up to the committed offset again, ``Checkpoint.committed_offset``). So the answers
do not wait for the dispatch (about 0.2 ms of a round's 256 messages on this thread, and the
producer's next request waits for them): the producers settle and refill while this thread
dispatches, which raised a group's end-to-end rate by about a tenth in alternating runs
(``docs/replication.md``, "The commit round, hop by hop"). As in RocketMQ, whose consume queues
are built by a dispatch thread behind the commit log, a pull that comes between the answer and
the dispatch finds the queue as it was: a long poll is held and released by the dispatch's
arrival; a pull that does not wait (``suspend_timeout_ms`` 0) may come back empty. A metadata
call (a topic's config, a committed consumer offset: ``_metadata_log``) completes only once
applied, so while one of its batches is not yet dispatched the dispatch goes first, as before.

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
        end, never moved down), answer the puts it passed, then dispatch what it passes (see
        module); returns the committed offset. Caller: the replication layer (leader: on
        followers' acks; follower: from the leader's frames), from any thread."""
        self._require_group()
        due: dict[tuple[str, int], int] = {}
        with self._put_lock:
            offset = min(offset, self.commit_log.max_offset)
            if offset <= self._commits.committed_offset:
                return self._commits.committed_offset
            answers_first = self._meta_end <= self._dispatched_offset
            if not answers_first:  # a metadata call waits: it completes once applied
                self._dispatch_committed(offset, due)
            self._commits.raise_to(offset)
        self._commits.settle()
        if answers_first:  # the producers settle and refill while this thread dispatches
            with self._put_lock:
                self._dispatch_committed(offset, due)
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
        if self._dispatched_offset >= limit or not self._writable:
            return
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
