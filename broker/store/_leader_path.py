"""A store in a broker group as its leader: appends that wait for the group's commit, and the
log read out for the followers.

In a group (``StoreConfig.replicated``) the leader appends a batch to its commit log and gives
it its queue offsets at once, from per-queue counters kept apart from the consume queues
(``QueueCounters``: the queues only receive a batch when the group's committed offset passes
it, ``_commit_path``); a put is answered when that happens. Puts are taken only between
:meth:`LeaderPath.start_leading` and :meth:`LeaderPath.stop_leading` (a restarted member is a
follower until the replication layer makes it lead); otherwise they are refused
``NOT_LEADER``, nothing appended. Records of the system topic ``%AEROMQ_META%`` come only
through the store's own metadata calls (``_metadata_log``), never through a put.

:meth:`LeaderPath.read_log` hands the replication layer the log's bytes as they are, whole
batches and blank fillers, for the followers' ``append_replicated``.

Caller: the put path (``_put_path``), the metadata calls, and the broker's replication layer
(leadership, ``read_log``), through ``MessageStore``.
"""

from __future__ import annotations

import logging
import struct
from typing import Final

from aeromq.broker._errors import (
    InvalidArgumentError,
    NoSpaceError,
    StoreError,
    StoreIOError,
)
from aeromq.broker.store._commit_log import BLANK_MAGIC, MIN_BLANK_LENGTH
from aeromq.broker.store._meta_records import META_TOPIC
from aeromq.broker.store._producer_state import OutOfOrder, StoredBatch
from aeromq.broker.store._results import PutMessageResult, PutMessageStatus
from aeromq.broker.store._store_parts import StoreParts
from aeromq.common.record_batch import (
    BASE_PHYSICAL_OFFSET_OFFSET,
    BATCH_MAGIC,
    FIXED_HEADER_LENGTH,
    ProducerState,
)

__all__ = ["LeaderPath"]

_log = logging.getLogger(__name__)

_PREFIX: Final = struct.Struct("<iI")
_I64: Final = struct.Struct("<q")


class LeaderPath(StoreParts):
    """The leader's appends and log reads, for ``MessageStore`` (see module)."""

    @property
    def leading(self) -> bool:
        """Whether the store takes puts: always for a single broker; in a group, between
        :meth:`start_leading` and :meth:`stop_leading`."""
        return self._leading

    def start_leading(self) -> None:
        """Take puts from now on (this member won an election; its epoch is in its epoch file).
        A follower's incomplete replicated bytes are dropped. Caller: the replication layer."""
        self._require_group()
        with self._put_lock:
            self._pending.clear()
            self._leading = True

    def stop_leading(self, status: PutMessageStatus = PutMessageStatus.REPLICATION_TIMEOUT) -> int:
        """Refuse puts from now on (``NOT_LEADER``) and fail every put still waiting for the
        committed offset with ``status`` (by default ``REPLICATION_TIMEOUT``: its batch is in
        this log and the next leader may keep it or not, the outcome is unknown); returns how
        many were failed. Caller: the replication layer, when leadership is lost."""
        self._require_group()
        with self._put_lock:
            self._leading = False
        return self._commits.fail_all(status)

    def _known_batch(self, known: StoredBatch | OutOfOrder) -> tuple[PutMessageResult, int]:
        """The answer to a batch the producer state judged: a duplicate's stored result (and
        its end, which the answer waits for as the original did), or the refusal."""
        if isinstance(known, OutOfOrder):
            return PutMessageResult(PutMessageStatus.OUT_OF_ORDER_SEQUENCE), 0
        return self._result_of(known)

    def _result_of(self, stored: StoredBatch) -> tuple[PutMessageResult, int]:
        """The ``PUT_OK`` result of a stored batch, and the end of its bytes."""
        result = PutMessageResult(
            PutMessageStatus.PUT_OK,
            stored.physical_offset,
            stored.queue_offset,
            stored.record_count,
            stored.length,
            stored.store_timestamp_ms,
            self._store_host,
        )
        return result, stored.end

    def _append_failed(self, exc: StoreIOError) -> PutMessageResult:
        """The refusal of an append the disk refused (a full disk is ``DISK_FULL`` and stops
        sends until there is room). Caller: both put paths, under the put lock."""
        if isinstance(exc, NoSpaceError):
            self.disk_space.refused(exc.values["needed_bytes"], exc.values["free_bytes"])
            return PutMessageResult(PutMessageStatus.DISK_FULL)
        _log.error("cannot append: %s", exc)
        return PutMessageResult(PutMessageStatus.CREATE_MAPPED_FILE_FAILED)

    def _record_producer(
        self,
        producer: ProducerState,
        topic: str,
        queue_id: int,
        count: int,
        position: int,
        queue_offset: int,
        length: int,
    ) -> None:
        """Keep an appended batch of ``count`` records as its producer's last (its store time
        is the log's last). Caller: both put paths, under the put lock."""
        stored = StoredBatch(
            producer.base_sequence,
            count,
            position,
            queue_offset,
            length,
            self.commit_log.last_store_timestamp_ms,
        )
        self.producer_states.record(producer, topic, queue_id, stored)

    def _append_uncommitted(
        self,
        batch: memoryview,
        topic: str,
        queue_id: int,
        count: int,
        producer: ProducerState | None,
        *,
        meta: bool = False,
    ) -> tuple[PutMessageResult, int]:
        """Append a checked batch in a group: queue offsets from the counters, nothing
        dispatched. Returns the result and the end of its bytes (the committed offset it waits
        for). ``meta``: a record batch of the metadata calls (the only way to its topic)."""
        length = len(batch)
        commit_log = self.commit_log
        with self._put_lock:
            if not self._writable:
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0
            if not self._leading:
                return PutMessageResult(PutMessageStatus.NOT_LEADER), 0
            if (topic == META_TOPIC) is not meta:
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
            if not self.disk_space.has_room(length):
                return PutMessageResult(PutMessageStatus.DISK_FULL), 0
            now_ms = max(self._clock_ms(), commit_log.last_store_timestamp_ms)
            if producer is not None:
                known = self.producer_states.check(producer, topic, queue_id, count)
                if known is not None:
                    return self._known_batch(known)
            queue_offset = self._counters.next_offset(topic, queue_id)
            try:
                # the queue's files are made now, so that a full disk refuses the put before
                # its batch is in the log (they are written when the batch is committed)
                self.queues.get_or_create(topic, queue_id).reserve(queue_offset + count)
                position = commit_log.append_batch(batch, queue_offset, now_ms, queue_id)
            except StoreIOError as exc:  # (NoSpaceError too)
                return self._append_failed(exc), 0
            commit_log.last_store_timestamp_ms = now_ms
            self._counters.set(topic, queue_id, queue_offset + count)
            sequence = producer.base_sequence if producer is not None else 0
            stored = StoredBatch(sequence, count, position, queue_offset, length, now_ms)
            if producer is not None:
                self.producer_states.record(producer, topic, queue_id, stored)
        return self._result_of(stored)

    def read_log(self, offset: int, max_bytes: int) -> memoryview:
        """The log's bytes from ``offset`` (a batch or blank-filler boundary, at most the log
        end) as they are, for a follower: whole batches while they stay within ``max_bytes``
        (at least one batch or blank, whatever its size), up to the log end or the end of the
        offset's segment (a read never spans two segments; a blank filler ends one). A view of
        the mapped segment: release it when sent. Empty at the log end. Raises
        :class:`InvalidArgumentError` for an offset outside the log or not a boundary,
        :class:`StoreError` when its segment went to retention meanwhile. Caller: the leader's
        replication, from any thread."""
        commit_log = self.commit_log
        end = commit_log.max_offset
        if offset == end:
            return memoryview(b"")
        mapped = commit_log.files.find(offset)
        if mapped is None or offset > end or offset < commit_log.min_offset:
            raise InvalidArgumentError(
                "offset outside the log",
                offset=offset,
                min_offset=commit_log.min_offset,
                max_offset=end,
            )
        limit = min(end, mapped.end_offset) - mapped.start_offset
        start = relative = offset - mapped.start_offset
        try:
            view = mapped.view
            while relative < limit:
                size = _unit_at(view, relative, limit, mapped.size, mapped.start_offset)
                if size < 0:
                    raise InvalidArgumentError(
                        "not a batch boundary", offset=mapped.start_offset + relative
                    )
                if relative > start and relative + size - start > max_bytes:
                    break
                relative += size
            return view[start:relative]
        except InvalidArgumentError:
            raise
        except ValueError as exc:  # unmapped by retention meanwhile
            raise StoreError("segment went to retention", offset=offset) from exc


def _unit_at(view: memoryview, relative: int, limit: int, segment: int, start: int) -> int:
    """The length of the batch or blank filler at ``relative`` of a segment (``segment`` bytes,
    starting at log offset ``start``, bytes up to ``limit`` written), or -1 when none starts
    there."""
    size, magic = _PREFIX.unpack_from(view, relative)
    if magic == BATCH_MAGIC and FIXED_HEADER_LENGTH <= size <= limit - relative:
        named = _I64.unpack_from(view, relative + BASE_PHYSICAL_OFFSET_OFFSET)[0]
        return int(size) if named == start + relative else -1
    if magic == BLANK_MAGIC and size == segment - relative >= MIN_BLANK_LENGTH:
        return int(size)
    return -1
