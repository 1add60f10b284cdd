"""``TransactionService``: ends transactions, checks back the half messages left without an end,
and discards those that stay unanswered.

The store holds half messages under :data:`~broker.transaction.HALF_TOPIC` (``_redirect``).
:meth:`TransactionService.end` commits one (puts it to its real queue, ``_records``) or rolls it
back, and records either in :data:`~broker.transaction.OP_TOPIC`. The service's thread reads both
queues into a :class:`~broker.transaction._table.HalfTable`; a half without an op record
``transaction_timeout_ms`` after it was stored is checked back: the check goes to the
:class:`~broker.transaction._mailbox.CheckMailbox`, where a live producer of its group takes it
(``PollTransactionChecks``, or the RocketMQ 5 endpoint's telemetry stream) and answers with an
end. After ``transaction_check_max`` checks it is discarded (an op record, logged, counted).

Durable through the commit log: the half and op topics are the state; a checkpoint
(``_checkpoint``, every second while it changes and at stop) only says where to start reading
them again. A commit is its put and then its op record: a crash between them leaves the half to
be checked back, and a producer that answers commit again stores the message twice (at least
once, as in RocketMQ). In a broker group only the leader checks and ends (``MessageStore.leading``):
followers replicate both topics as any batch; an elected member reads them from its checkpoint.

Caller: the broker (``start``, ``stop``, ``end``, the counters), the gRPC and RocketMQ 5 servicers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from aeromq.broker.store import MessageStore, PutMessageStatus
from aeromq.broker.transaction._checkpoint import CHECKPOINT_NAME, TransactionCheckpoint
from aeromq.broker.transaction._mailbox import Check, CheckMailbox
from aeromq.broker.transaction._names import (
    HALF_QUEUE_ID,
    HALF_TOPIC,
    OP_QUEUE_ID,
    OP_TOPIC,
    PROPERTY_PRODUCER_GROUP,
    Resolution,
)
from aeromq.broker.transaction._records import committed_message, op_message, read_op, real_queue
from aeromq.broker.transaction._redirect import HalfRedirector
from aeromq.broker.transaction._table import HalfTable, PendingHalf
from aeromq.common import PROPERTY_REAL_TOPIC, PROPERTY_UNIQ_KEY, ResponseCode

__all__ = ["TransactionService"]

_log = logging.getLogger(__name__)

_READ_COUNT: Final = 256
_FOLLOWER_WAIT_S: Final = 1.0
_STORED: Final = frozenset({PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT})


class TransactionService:
    """Ends and checks back ``store``'s transactions (see module). Counters: ``committed``,
    ``rolled_back``, ``checks``, ``discarded``, ``halves`` (the redirector's messages)."""

    def __init__(
        self,
        store: MessageStore,
        *,
        timeout_ms: int = 6_000,
        check_max: int = 15,
        check_interval_ms: int = 30_000,
        checkpoint_interval_ms: int = 1_000,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self._store = store
        self.timeout_ms = timeout_ms
        self.check_max = check_max
        self.check_interval_ms = check_interval_ms
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        self.redirector = HalfRedirector()
        self.mailbox = CheckMailbox()
        self._path = Path(store.config.data_dir) / CHECKPOINT_NAME
        self._table = HalfTable()
        self._op_offset = 0
        self._loaded = False
        self._saved_changes = 0
        self._saved_at_ms = 0
        self._lock = threading.Lock()  # the table and the op offset
        self._end_lock = threading.Lock()  # one end at a time: a half is committed once
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.committed = 0
        self.rolled_back = 0
        self.checks = 0
        self.discarded = 0

    @property
    def pending(self) -> int:
        """Half messages read and not ended (0 on a follower)."""
        return len(self._table.pending)

    @property
    def loaded(self) -> bool:
        """Whether the service leads and has read its queues (ends are refused until then)."""
        return self._loaded

    def start(self) -> None:
        """Hook the store's put path and start the thread."""
        if self._thread is not None:
            return
        self._store.half_redirect = self.redirector
        self._thread = threading.Thread(target=self._run, name="aeromq-txn", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and checkpoint; idempotent. Call before the store shuts down."""
        thread = self._thread
        if thread is None:
            return
        with self._cond:
            self._stopping = True
            self._cond.notify()
        thread.join()
        self._thread = None
        if self._loaded:
            self._checkpoint()

    # -- ends ----------------------------------------------------------------------------

    def end(
        self, half_offset: int, message_id: str, resolution: Resolution
    ) -> tuple[ResponseCode, str]:
        """Commit or roll back the half at queue offset ``half_offset`` (its ``UNIQ_KEY`` must be
        ``message_id`` when one is given); ``(SUCCESS, "")`` also when it was ended before.
        Caller: a gRPC thread (EndTransaction), the service itself (a discard)."""
        store = self._store
        if not store.leading:
            return ResponseCode.NOT_LEADER, "this broker does not lead its group"
        if not self._loaded:
            return ResponseCode.SYSTEM_BUSY, "the transaction service is still loading"
        with self._end_lock:
            with self._lock:
                if self._table.ended(half_offset):
                    return ResponseCode.SUCCESS, ""
            got = store.get_messages(HALF_TOPIC, HALF_QUEUE_ID, half_offset, max_count=1)
            half = next((m for m in got.messages if m.queue_offset == half_offset), None)
            if half is None:
                return ResponseCode.INVALID_PARAMETER, f"no half message half_offset={half_offset}"
            unique = half.properties.get(PROPERTY_UNIQ_KEY, "")
            if message_id and unique != message_id:
                return ResponseCode.INVALID_PARAMETER, (
                    f"the half message is another half_offset={half_offset} "
                    f"message_id={message_id!r} stored={unique!r}"
                )
            real = real_queue(half)
            if resolution is Resolution.COMMIT and real is not None:
                status = store.put_message(committed_message(half, *real)).status
                if status not in _STORED:
                    return _refused(status, "commit", half_offset)
            status = store.put_message(op_message(half_offset, resolution)).status
            if status not in _STORED:
                return _refused(status, "op record", half_offset)
            with self._lock:
                self._table.resolve(half_offset)
            self.mailbox.drop(half_offset)
        if resolution is Resolution.COMMIT:
            self.committed += 1
        elif resolution is Resolution.ROLLBACK:
            self.rolled_back += 1
        return ResponseCode.SUCCESS, ""

    # -- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping:
            timeout_s: float
            try:
                timeout_s = self._round()
            except Exception:
                _log.exception("transaction: a round failed; reading again from the checkpoint")
                self._loaded = False
                timeout_s = _FOLLOWER_WAIT_S
            with self._cond:
                if not self._stopping and timeout_s > 0:
                    self._cond.wait(timeout_s)

    def _round(self) -> float:
        """Read, check, discard, checkpoint; seconds to sleep after it."""
        if not self._store.leading:
            self._loaded = False
            return _FOLLOWER_WAIT_S
        if not self._loaded:
            self._load()
        with self._lock:
            self._read()
            now_ms = self._clock_ms()
            checks, discards = self._table.due(
                now_ms, self.timeout_ms, self.check_interval_ms, self.check_max
            )
        for pending in checks:
            self._post(pending)
        for pending in discards:
            self._discard(pending)
        with self._lock:
            self._table.advance()
            changed = self._table.changes != self._saved_changes
            next_ms = self._table.next_due_ms(self.timeout_ms)
        now_ms = self._clock_ms()
        if changed and now_ms - self._saved_at_ms >= self.checkpoint_interval_ms:
            self._checkpoint()
        # a new half is due timeout_ms after it is stored: look for new ones twice as often
        wait_ms = min(self.timeout_ms, self.check_interval_ms) // 2
        if next_ms is not None:
            wait_ms = min(wait_ms, next_ms - now_ms)
        if changed:
            wait_ms = min(wait_ms, self.checkpoint_interval_ms)
        return max(0.0, wait_ms / 1000)

    def _load(self) -> None:
        """Start leading: the checkpoint, then the op and half queues from it."""
        store = self._store
        checkpoint = TransactionCheckpoint.load(self._path) or TransactionCheckpoint()
        with self._lock:
            low = max(checkpoint.low, store.get_min_offset(HALF_TOPIC, HALF_QUEUE_ID))
            self._table = HalfTable(low, checkpoint.resolved, checkpoint.checks)
            self._op_offset = max(checkpoint.op_offset, store.get_min_offset(OP_TOPIC, OP_QUEUE_ID))
            self._read()
            self._loaded = True
        self._saved_changes = -1
        _log.info(
            "transaction: leading with %d half messages without an end from queue offset %d",
            len(self._table.pending),
            self._table.low,
        )

    def _read(self) -> None:
        """The new op records, then the new halves (under the lock)."""
        store, table = self._store, self._table
        while True:
            got = store.get_messages(OP_TOPIC, OP_QUEUE_ID, self._op_offset, max_count=_READ_COUNT)
            for op in got.messages:
                ended = read_op(op)
                if ended is not None and table.resolve(ended[0]):
                    self.mailbox.drop(ended[0])
            if got.next_begin_offset == self._op_offset:
                break
            self._op_offset = got.next_begin_offset
        while True:
            start = table.read_offset
            got = store.get_messages(HALF_TOPIC, HALF_QUEUE_ID, start, max_count=_READ_COUNT)
            for half in got.messages:
                table.add(half, half.properties.get(PROPERTY_PRODUCER_GROUP, ""))
            table.read_offset = max(table.read_offset, got.next_begin_offset)
            if table.read_offset == start:
                break

    def _post(self, pending: PendingHalf) -> None:
        half = pending.half
        real = real_queue(half)
        if real is None:
            self._discard(pending)
            return
        self.checks += 1
        self.mailbox.post(pending.group, Check(half, real[0], real[1], pending.checks))

    def _discard(self, pending: PendingHalf) -> None:
        half = pending.half
        code, text = self.end(half.queue_offset, "", Resolution.DISCARD)
        if code is not ResponseCode.SUCCESS:
            _log.warning("transaction: cannot discard yet: %s", text)
            return
        self.discarded += 1
        _log.warning(
            "transaction: discarded a half message after %d checks without an answer: "
            "half_offset=%d group=%r topic=%r message_id=%r",
            pending.checks,
            half.queue_offset,
            pending.group,
            half.properties.get(PROPERTY_REAL_TOPIC, ""),
            half.properties.get(PROPERTY_UNIQ_KEY, ""),
        )

    def _checkpoint(self) -> None:
        with self._lock:
            table = self._table
            checkpoint = TransactionCheckpoint(
                table.low, self._op_offset, tuple(table.resolved), table.check_counts()
            )
            changes = table.changes
        checkpoint.save(self._path, self._store.config.file_mode)
        self._saved_changes = changes
        self._saved_at_ms = self._clock_ms()


def _refused(status: PutMessageStatus, what: str, half_offset: int) -> tuple[ResponseCode, str]:
    code = (
        ResponseCode.NOT_LEADER
        if status is PutMessageStatus.NOT_LEADER
        else (ResponseCode.SYSTEM_ERROR)
    )
    return code, f"the store refused the {what}: status={status.value} half_offset={half_offset}"
