"""The message store's put path: a record batch checked, appended to the commit log and
dispatched to its consume queue and the index, under one put lock.

A put appends one record batch (``common/record_batch/``, as the producer encoded it) to
the commit log and dispatches it to the consume queue (one numpy write for all its records)
and the index at once; under SYNC flush a put returns once its bytes are durable (group
commit: :meth:`PutPath.put_batch` waits, :meth:`PutPath.put_batch_async` calls back). A batch
is visible to gets (and wakes long polls) as soon as it is appended, before it is durable, as
in RocketMQ. The store re-checks only what protects itself; a refusal is a
``PutMessageStatus``, never an exception.

A batch with a producer state (an idempotent producer's) is first checked against the
producer's last batches in its queue (``_producer_state``): a retry of one is answered with
its stored result and not appended again; a sequence gap is ``OUT_OF_ORDER_SEQUENCE``. A store
in a broker group (``StoreConfig.replicated``) appends without dispatching and answers once
the group's committed offset passes the batch (``_leader_path``, ``_commit_path``). The
single broker's path of a batch without a producer state makes the Python calls it made before
both (an attribute test or two more, no call: counted with ``cProfile``).

A plain one-record batch (a one-message send, an idempotent producer's too: no timer,
transaction or compression) of a single broker, whose bytes fit the commit log's last segment and whose entry
fits its queue's last file, is appended by :meth:`PutPath._append_one` through the native helper
``_put_one.c`` (its checks in one call, the commit log's copy with the broker's fields and the
consume-queue entry in another: the same bytes as the Python path, which stays the reference
and takes everything else). Its key goes to the index's queue (``_index_service``): no index
page is touched on a send's path. Under ASYNC flush its ``put_batch_async`` callback (the
send's answer) runs as soon as the batch is in the log, its queue and the index's queue, before
the producer's state is recorded and the arrival told (a callback that raises still has both
done, then its error raised): the broker's session agent offers a fast send's answer there
(``broker.session._answers``), and a producer sending back to back reads it meanwhile. Who
answers first at lower rates, a held pull or the send, is the agent's to order, as before: its
arrival still releases the pull in the same call.

Caller: the broker's produce path (``SendProcessor``) and its RocketMQ endpoint, from any
thread, through ``MessageStore`` (one of its roles, see ``broker.store._store_parts``);
``put_messages`` for tests and tools.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from aeromq.broker._errors import NoSpaceError, StoreIOError
from aeromq.broker.store._batch_codec import batch_keys, encode_messages
from aeromq.broker.store._commit_log import MIN_BLANK_LENGTH
from aeromq.broker.store._consume_queue import ENTRY_LENGTH
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._leader_path import LeaderPath
from aeromq.broker.store._message import InboundMessage
from aeromq.broker.store._producer_state import StoredBatch
from aeromq.broker.store._results import PutCallback, PutMessageResult, PutMessageStatus
from aeromq.broker.store._store_parts import wall_clock_ms
from aeromq.common import is_valid_topic_name
from aeromq.common.record_batch import (
    BATCH_MAGIC,
    COMPRESSED_FLAG,
    FIXED_HEADER_LENGTH,
    PRODUCER_STATE_FLAG,
    PRODUCER_STATE_LENGTH,
    RECORD_COUNT_OFFSET,
    RECORD_OVERHEAD,
    TIMER_FLAG,
    TOPIC_OFFSET,
    TRANSACTION_PREPARED_FLAG,
    ProducerState,
    batch_header_length,
    read_producer_state,
)

try:
    from aeromq.broker.store import _put_one as _native
except ImportError:  # not built: every batch goes the Python way
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = ["PutCallback", "PutPath"]

_log = logging.getLogger(__name__)

_NATIVE_FALLBACK: Final = TIMER_FLAG | TRANSACTION_PREPARED_FLAG | COMPRESSED_FLAG
"""A one-record batch with any of these attributes goes the Python way (``_put_one.c``)."""

_time_ns: Final = time.time_ns
_MAX_QUEUE_ID = (1 << 31) - 1
_TOPIC_CACHE_LIMIT = 10_000

# total length, magic, record count (48), attributes (72), topic length (74)
_HEAD = struct.Struct("<iI40xi20xHH")
assert _HEAD.size == FIXED_HEADER_LENGTH and RECORD_COUNT_OFFSET == 48
_TAG_HASH = struct.Struct("<q")
"""A record's tag hash, the first of the batch's tag hash column (i64)."""

TimerRedirect = Callable[[memoryview, str, int, int], tuple[bytes | bytearray, str, int] | str]
"""``redirect(batch, topic, queue_id, now_ms)``: a batch with ``TIMER_FLAG`` rewritten for the
timer topic (the batch, topic and queue id to append instead, without the flag), or the text
of why it is refused (``MESSAGE_ILLEGAL``). Set by the broker (``broker.timer``)."""
HalfRedirect = TimerRedirect
"""The same for a transaction's half message (``TRANSACTION_PREPARED_FLAG``, rewritten for the
half topic). Set by the broker (``broker.transaction``)."""


class PutPath(LeaderPath):
    """The store's appends, for ``MessageStore`` (see module). ``timer_redirect``: where a
    batch with ``TIMER_FLAG`` goes before it is appended (None: appended as it is)."""

    timer_redirect: TimerRedirect | None = None
    half_redirect: HalfRedirect | None = None
    """Where a batch with ``TRANSACTION_PREPARED_FLAG`` goes first (None: appended as it is)."""
    native_put: bool = _native is not None
    """Whether a plain one-record batch is appended by ``_put_one.c`` (see module); off, every
    batch goes the Python way (tests hold one to the other)."""

    def put_batch(
        self, batch: bytes | bytearray | memoryview, topic: str, queue_id: int
    ) -> PutMessageResult:
        """Append one record batch (``common/record_batch/``) of (topic, queue id), which
        the caller has checked (``check_batch``); under SYNC flush, return once it is durable
        (else ``FLUSH_DISK_TIMEOUT``).

        The store re-checks only what protects itself (magic, length, topic, record count,
        the size caps: a batch is capped like one message, ``config.max_record_bytes``):
        ``MESSAGE_ILLEGAL`` otherwise. Caller: the broker's produce path, from any thread."""
        appended = self._append_one(batch, topic, queue_id) if self.native_put else None
        result, end = appended or self._append(batch, topic, queue_id)
        if self._replicated and result.status is PutMessageStatus.PUT_OK:
            return self._commits.wait(end, result)  # a group's: once committed
        group_commit = self._group_commit
        if (
            result.status is PutMessageStatus.PUT_OK
            and group_commit is not None
            and not group_commit.wait_durable(end)
        ):
            result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
        return result

    def put_batch_async(
        self,
        batch: bytes | bytearray | memoryview,
        topic: str,
        queue_id: int,
        callback: PutCallback,
    ) -> PutMessageResult:
        """Append a batch without waiting for the disk. ``callback(result)`` runs once the
        outcome is final: at once under ASYNC flush or on failure, else on the flusher
        thread when durable (``FLUSH_DISK_TIMEOUT`` if not in time); in a broker group, once
        the committed offset passes the batch (``REPLICATION_TIMEOUT`` if not in time, or the
        status ``fail_uncommitted`` gives). Returns the result as appended (status not yet
        final under SYNC or in a group)."""
        group_commit = self._group_commit
        if self.native_put:
            # ASYNC flush, no group: the outcome is final as appended, so the callback (the
            # send's answer) runs before the append's bookkeeping (see _append_one)
            appended = self._append_one(
                batch, topic, queue_id, callback if group_commit is None else None
            )
            if appended is not None and group_commit is None:
                return appended[0]  # (a group's store is never appended here)
        else:
            appended = None
        result, end = appended or self._append(batch, topic, queue_id)
        if result.status is not PutMessageStatus.PUT_OK or group_commit is None:
            if self._replicated and result.status is PutMessageStatus.PUT_OK:
                self._commits.request(end, result, callback)  # a group's: once committed
                return result
            callback(result)
            return result

        def durable(ok: bool) -> None:
            if not ok:
                result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
            callback(result)

        group_commit.request(end, durable)
        return result

    def put_message(self, message: InboundMessage) -> PutMessageResult:
        """Append one message; under SYNC flush, return once it is durable."""
        return self.put_messages((message,))

    def put_messages(self, messages: Sequence[InboundMessage]) -> PutMessageResult:
        """Encode ``messages`` (all of one topic and queue) into one batch and ``put_batch``
        it: consecutive queue offsets. A batch that breaks any rule is refused whole
        (``MESSAGE_ILLEGAL`` or ``PROPERTIES_SIZE_EXCEEDED``). For tests and tools: the
        produce path sends batches as the producer encoded them."""
        status, batch, topic, queue_id = self._encode(messages)
        if batch is None:
            return PutMessageResult(status)
        return self.put_batch(batch, topic, queue_id)

    def put_messages_async(
        self, messages: Sequence[InboundMessage], callback: PutCallback
    ) -> PutMessageResult:
        """``put_messages`` without waiting for the disk (see ``put_batch_async``)."""
        status, batch, topic, queue_id = self._encode(messages)
        if batch is None:
            result = PutMessageResult(status)
            callback(result)
            return result
        return self.put_batch_async(batch, topic, queue_id, callback)

    def _encode(
        self, messages: Sequence[InboundMessage]
    ) -> tuple[PutMessageStatus, bytearray | None, str, int]:
        if not self._writable:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE, None, "", 0
        if not messages:
            return PutMessageStatus.MESSAGE_ILLEGAL, None, "", 0
        topic = messages[0].topic
        queue_id = messages[0].queue_id
        topic_bytes = self._topic_bytes(topic)
        if topic_bytes is None or not self._valid_queue_id(queue_id):
            return PutMessageStatus.MESSAGE_ILLEGAL, None, "", 0
        status, batch = encode_messages(messages, topic, topic_bytes, queue_id)
        return status, batch, topic, queue_id

    def _topic_bytes(self, topic: str) -> bytes | None:
        """The topic's UTF-8 bytes, or None when the name is not valid."""
        topic_bytes = self._topics.get(topic)
        if topic_bytes is None:
            if not isinstance(topic, str) or not is_valid_topic_name(topic):
                return None
            if len(self._topics) >= _TOPIC_CACHE_LIMIT:
                self._topics.clear()
            topic_bytes = self._topics[topic] = topic.encode()
        return topic_bytes

    @staticmethod
    def _valid_queue_id(queue_id: object) -> bool:
        return (
            isinstance(queue_id, int)
            and not isinstance(queue_id, bool)
            and 0 <= queue_id <= _MAX_QUEUE_ID
        )

    def _append(
        self, data: bytes | bytearray | memoryview, topic: str, queue_id: int
    ) -> tuple[PutMessageResult, int]:
        """Check cheaply, append, patch and dispatch; returns the result and the log's end
        (for a duplicate of a stored batch: its result, and the end of its bytes)."""
        if not self._writable:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0
        topic_bytes = self._topics.get(topic) or self._topic_bytes(topic)
        if topic_bytes is None or not (
            0 <= queue_id <= _MAX_QUEUE_ID
            if type(queue_id) is int
            else self._valid_queue_id(queue_id)
        ):
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
        batch = memoryview(data)
        if batch.format != "B" or batch.ndim != 1:
            batch = batch.cast("B")
        length = len(batch)
        if length < FIXED_HEADER_LENGTH or length > self._max_batch_bytes:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
        total, magic, count, attributes, topic_length = _HEAD.unpack_from(batch, 0)
        header_length = (FIXED_HEADER_LENGTH + topic_length + 7) & ~7  # batch_header_length
        if attributes & PRODUCER_STATE_FLAG:
            header_length += PRODUCER_STATE_LENGTH
        if (
            magic != BATCH_MAGIC
            or total != length
            or count <= 0
            or header_length + count * RECORD_OVERHEAD > length
            or topic_length != len(topic_bytes)
            or batch[TOPIC_OFFSET : TOPIC_OFFSET + topic_length] != topic_bytes
        ):
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
        # a transaction's half message (broker.transaction): one more test a batch, ~20 ns
        if attributes & TRANSACTION_PREPARED_FLAG and self.half_redirect is not None:
            return self._append_half(self.half_redirect(batch, topic, queue_id, self._clock_ms()))
        if attributes & TIMER_FLAG and self.timer_redirect is not None:
            redirected = self.timer_redirect(batch, topic, queue_id, self._clock_ms())
            if isinstance(redirected, str):
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
            return self._append(*redirected)  # without the flag: appended as any batch
        producer = read_producer_state(batch) if attributes & PRODUCER_STATE_FLAG else None
        if self._replicated:
            return self._append_uncommitted(batch, topic, queue_id, count, producer)
        tag_hashes: npt.NDArray[np.int64] | tuple[int, ...] = (
            _TAG_HASH.unpack_from(batch, header_length)  # one record: no numpy (~5 us)
            if count == 1
            else np.frombuffer(batch, dtype="<i8", count=count, offset=header_length)
        )
        commit_log = self.commit_log
        index = self.index
        with self._put_lock:
            if not self._writable:
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0
            if not self.disk_space.has_room(length):
                return PutMessageResult(PutMessageStatus.DISK_FULL), 0
            now_ms = self._clock_ms()
            if now_ms < commit_log.last_store_timestamp_ms:
                now_ms = commit_log.last_store_timestamp_ms
            if producer is not None:
                known = self.producer_states.check(producer, topic, queue_id, count)
                if known is not None:
                    return self._known_batch(known)
            try:
                queue = self.queues.get_or_create(topic, queue_id)
                queue_offset = queue.max_offset
                queue.ensure_room(queue_offset, count)
                position = commit_log.append_batch(batch, queue_offset, now_ms, queue_id)
            except StoreIOError as exc:  # (NoSpaceError too)
                return self._append_failed(exc), 0
            commit_log.last_store_timestamp_ms = now_ms
            try:
                queue.put_batch(queue_offset, position, length, tag_hashes)
            except StoreIOError as exc:
                # the log holds records its queue does not: stop writing; recovery fixes it
                self._writable = False
                _log.error("cannot dispatch, store no longer writable: %s", exc)
                return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE), 0
            if index is not None:  # queued: written by the index's drain (_index_service)
                for i, keys in batch_keys(batch, count, header_length):
                    index.put(topic, keys, position + i, now_ms)
            end = commit_log.max_offset
            self._dispatched_offset = end
            if producer is not None:
                self._record_producer(
                    producer, topic, queue_id, count, position, queue_offset, length
                )
        if self.arrivals.active:
            self.arrivals.notify(topic, queue_id, queue_offset + count)
        result = PutMessageResult(
            PutMessageStatus.PUT_OK,
            position,
            queue_offset,
            count,
            length,
            now_ms,
            self._store_host,
        )
        return result, end

    def _append_one(
        self,
        data: bytes | bytearray | memoryview,
        topic: str,
        queue_id: int,
        early: PutCallback | None = None,
    ) -> tuple[PutMessageResult, int] | None:
        """``_append`` of a plain one-record batch through ``_put_one.c`` (see module): the
        same files, offsets and result; None, nothing done, when the Python path must take it
        (another batch, a group's store, a segment or queue file to roll or make).

        ``early``: the caller's callback for a final result (``put_batch_async`` under ASYNC
        flush), given every result returned, and a stored one as soon as the batch is in the
        log, its queue and the key index's queue, before the producer's state is recorded
        (still under the put lock) and before the arrival is told: a send's answer goes out
        while that bookkeeping is done (``broker.session._answers``)."""
        topic_bytes = self._topics.get(topic)
        if topic_bytes is None or self._replicated or type(data) is memoryview:
            return None
        kind = _native.check(
            data, topic_bytes, self._max_batch_bytes, _NATIVE_FALLBACK, ProducerState
        )
        if not kind:  # (a batch of several records: one C call more, no Python call)
            return None
        producer = kind if type(kind) is ProducerState else None  # (an idempotent producer's)
        length = len(data)
        commit_log = self.commit_log
        with self._put_lock:
            # (under the lock: delete_topic takes it; the table's dict, a call fewer a send)
            queue = self.queues.by_key.get((topic, queue_id))
            if queue is None:
                return None
            segments = commit_log.files.files
            queue_files = queue.files.files
            if not self._writable or not segments or not queue_files:
                return None
            position = commit_log.max_offset
            segment = segments[-1]
            at = position - segment.start_offset
            queue_offset = queue.max_offset
            queue_file = queue_files[-1]
            entry_at = queue_offset * ENTRY_LENGTH - queue_file.start_offset
            if (
                at < 0
                or at + length + MIN_BLANK_LENGTH > segment.size  # a roll: the Python way
                or entry_at < 0
                or entry_at + ENTRY_LENGTH > queue_file.size  # a new queue file: likewise
            ):
                return None
            # _append's admission, written out as it is there (a shared helper would cost both
            # paths a Python call, 0.1-0.3 us on this VM): disk room, store time, producer state
            if not self.disk_space.has_room(length):
                refused = PutMessageResult(PutMessageStatus.DISK_FULL), 0
                if early is not None:
                    early(refused[0])
                return refused
            clock_ms = self._clock_ms  # the default's inline: a call fewer a send
            now_ms = _time_ns() // 1_000_000 if clock_ms is wall_clock_ms else clock_ms()
            if now_ms < commit_log.last_store_timestamp_ms:
                now_ms = commit_log.last_store_timestamp_ms
            if producer is not None:
                known = self.producer_states.check(producer, topic, queue_id, 1)
                if known is not None:
                    answered = self._known_batch(known)
                    if early is not None:
                        early(answered[0])
                    return answered
            key = _native.write(
                data,
                segment.mm,
                at,
                queue_offset,
                position,
                now_ms,
                self._store_host,
                queue_id,
                queue_file.mm,
                entry_at,
            )
            end = commit_log.max_offset = position + length
            commit_log.last_store_timestamp_ms = now_ms
            queue.max_offset = queue_offset + 1
            # (after the write: a reader that sees it sees the batch; a tuple, read whole)
            queue.last_batch = (queue_offset, 1, position, length, segment)
            index = self.index
            if index is not None and key is not None:
                if key is True:  # KEYS, or a marker not at a property's start: the walk
                    self._index_keys(index, data, topic, position, now_ms)
                else:
                    index.put(topic, key, position, now_ms)
            self._dispatched_offset = end
            result = PutMessageResult(
                PutMessageStatus.PUT_OK, position, queue_offset, 1, length, now_ms, self._store_host
            )
            failure: BaseException | None = None
            if early is not None:
                try:
                    early(result)  # (see above: before the bookkeeping below)
                except BaseException as exc:  # raised once the bookkeeping is done
                    failure = exc
            if producer is not None:  # _record_producer's, without its call
                stored = tuple.__new__(  # (a NamedTuple's __new__ is a Python function)
                    StoredBatch,
                    (producer.base_sequence, 1, position, queue_offset, length, now_ms),
                )
                self.producer_states.record(producer, topic, queue_id, stored)
        if self.arrivals.active:
            self.arrivals.notify(topic, queue_id, queue_offset + 1)
        if failure is not None:
            raise failure
        return result, end

    @staticmethod
    def _index_keys(
        index: IndexService, data: bytes | bytearray, topic: str, position: int, now_ms: int
    ) -> None:
        """Queue the keys of a one-record batch as the Python path reads them."""
        batch = memoryview(data)
        _total, _magic, _count, attributes, topic_length = _HEAD.unpack_from(batch, 0)
        header_length = batch_header_length(topic_length, attributes)
        for i, keys in batch_keys(batch, 1, header_length):
            index.put(topic, keys, position + i, now_ms)

    def _index_failed(self, exc: StoreIOError) -> None:
        """An index entry not written (``IndexService.on_error``): counted; a full disk stops
        sends until there is room, as a put that cannot make its segment does."""
        self.index_errors += 1
        if isinstance(exc, NoSpaceError):
            self.disk_space.refused(exc.values["needed_bytes"], exc.values["free_bytes"])

    def _append_half(
        self, redirected: tuple[bytes | bytearray, str, int] | str
    ) -> tuple[PutMessageResult, int]:
        """Append a half message as ``half_redirect`` rewrote it (``broker.transaction``)."""
        if isinstance(redirected, str):
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), 0
        return self._append(*redirected)  # without the flag: appended as any batch
