"""``TimerService``: puts each timer message back to its real queue when it is due.

The store holds a timer message under :data:`~broker.timer.TIMER_TOPIC` (``_redirect``). This
service, on its own thread, reads that topic's queue in order into a heap by due time
(``_index``) and sleeps until the earliest due time, or until a timer message arrives (the
store's arrival listener wakes it: a new message may be due earlier); with nothing pending it
sleeps until one arrives. When an entry is due it takes the record: kept from the read when
due within ``hold_horizon_ms`` while the records kept hold less than ``hold_max_bytes``; else
read ahead once due within the horizon, a second's entries at a time and in runs of nearby
offsets (``_warm``), or read in runs when due (a record read alone decodes its whole batch). It
puts back the producer's properties without the timer's (``_records``) and with
``TIMER_OUT_MS`` (its due time), to its real topic and queue, one batch per queue and round
(``_queue_io``), through the store's own put path: so a broker group replicates the put-backs
as any batch. An entry is never put back before its due time by this host's clock. The index
keeps records as plain tuples (``Held.packed``), which the collector does not walk.

Delivered entries are marked (``_ledger``) and checkpointed every ``checkpoint_interval_ms`` and
at stop (``_checkpoint``), the file written on a thread of its own (``_checkpoint_writer``: its
``fsync`` took up to 280 ms under load, and every message due meanwhile waited with it). On
start, and whenever this broker starts to lead its group, the
service loads the checkpoint, looks in the log after it for re-puts a crash kept out of it
(``_dedupe``), and reads the timer queue from the oldest undelivered entry again: after a
SIGKILL every pending message is still delivered, none early, and a message re-put just before
the kill is not re-put again (unless it has no unique id: then at least once).

Only a leader delivers (``MessageStore.leading``, always true for a single broker): a follower's
service waits, and starts from its own checkpoint (and the log it replicated) when elected.

A re-put the store refuses for a reason that may pass (not leader, disk full, no quorum in time)
is tried again after ``retry_interval_ms``; one it refuses for good (``MESSAGE_ILLEGAL``: say the
real topic's name is no longer valid) is logged and dropped.

Caller: the broker (``start``/``stop``); the store's arrival listener; nothing else.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from aeromq.broker.store import MessageStore, PutMessageStatus
from aeromq.broker.timer._checkpoint import CHECKPOINT_NAME, TimerCheckpoint
from aeromq.broker.timer._checkpoint_writer import CheckpointWriter
from aeromq.broker.timer._dedupe import DeliveredKey, delivered_after
from aeromq.broker.timer._delays import DEFAULT_MAX_DELAY_MS, TIMER_QUEUE_ID, TIMER_TOPIC
from aeromq.broker.timer._index import TimerIndex
from aeromq.broker.timer._ledger import DeliveryLedger
from aeromq.broker.timer._queue_io import batch_key, put_back, read_offsets, read_queue
from aeromq.broker.timer._records import Held, HeldTuple
from aeromq.broker.timer._redirect import TimerRedirector
from aeromq.common import PROPERTY_UNIQ_KEY, decode_properties
from aeromq.transport.util import name_os_thread

__all__ = ["TIMER_THREAD_NAME", "TimerService"]

_log = logging.getLogger(__name__)

TIMER_THREAD_NAME: Final = "aeromq-timer"
"""The service thread's name, in the kernel too (``/proc/PID/task/TID/comm``: ``bench timer``
reads its CPU and its wait for a core there)."""
_READ_COUNT: Final = 1024
_READS_PER_ROUND: Final = 8
_DELIVER_PER_ROUND: Final = 8192
_WARM_PER_ROUND: Final = 256
"""Cold entries read ahead of their due time per round (about 4 ms: rounds deliver in between)."""
_WARM_AHEAD_MS: Final = 1_000
"""Once the earliest cold entry is within the horizon, those due up to this much later are read
ahead too: a read decodes whole batches, a second's entries at a time share them (a few
entries a round each decoded their batch again: the put-back's lateness p99 fell from 280 to
~60 ms at 5,000 cold entries due a second)."""
_WARM_FREE_FRACTION: Final = 8
"""Warming starts again once an eighth of ``hold_max_bytes`` is free (not a record at a time)."""
_FOLLOWER_WAIT_S: Final = 1.0
"""How often a follower looks whether it leads now (it has nothing to deliver until then)."""
_RETRIED: Final = frozenset(
    {
        PutMessageStatus.SERVICE_NOT_AVAILABLE,
        PutMessageStatus.NOT_LEADER,
        PutMessageStatus.REPLICATION_TIMEOUT,
        PutMessageStatus.DISK_FULL,
        PutMessageStatus.CREATE_MAPPED_FILE_FAILED,
    }
)
"""Refusals that may pass: the entries wait and are tried again (a REPLICATION_TIMEOUT's batch
may be in the log already: at least once there)."""


class TimerService:
    """Delivers ``store``'s timer messages when due (see module). ``clock_ms``: epoch ms."""

    def __init__(
        self,
        store: MessageStore,
        *,
        max_delay_ms: int = DEFAULT_MAX_DELAY_MS,
        checkpoint_interval_ms: int = 100,
        hold_horizon_ms: int = 60_000,
        hold_max_bytes: int = 64 << 20,
        retry_interval_ms: int = 1_000,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self._store = store
        self.redirector = TimerRedirector(max_delay_ms)
        self.checkpoint_interval_ms = checkpoint_interval_ms
        self.hold_horizon_ms = hold_horizon_ms
        self.hold_max_bytes = hold_max_bytes
        self._held_bytes = 0
        self.retry_interval_ms = retry_interval_ms
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        self._path = Path(store.config.data_dir) / CHECKPOINT_NAME
        self._writer = CheckpointWriter(self._path, store.config.file_mode)
        self._index: TimerIndex[HeldTuple] = TimerIndex()  # records packed: not traced by gc
        self._ledger = DeliveryLedger()
        self._recovered: set[DeliveredKey] = set()
        self._read_offset = 0
        self._loaded = False
        self._saved_changes = 0
        self._saved_at_ms = 0
        self._retry_at_ms = 0
        self._cond = threading.Condition()
        self._woken = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.delivered = 0
        self.dropped = 0
        self._warming = 0
        """Cold entries out of the index while ``_warm`` rereads their records (``pending``
        counts them: without, it dipped for the reread, 15 ms on a slow host); changed with
        the index under ``_warming_lock``, which ``pending`` reads under."""
        self._warming_lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Timer messages read and not delivered yet (0 on a follower), those a read-ahead
        has out of the index while it rereads their records included."""
        with self._warming_lock:
            return len(self._index) + self._warming

    @property
    def cold(self) -> int:
        """Pending timer messages held without their record (read again before they are due)."""
        return self._index.cold

    def start(self) -> None:
        """Hook the store's put path and arrivals, and start the thread."""
        if self._thread is not None:
            return
        self._store.timer_redirect = self.redirector
        self._store.add_arrival_listener(self._on_arrival, TIMER_TOPIC)
        self._writer.start()
        self._thread = threading.Thread(target=self._run, name=TIMER_THREAD_NAME, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (a round in progress ends first) and checkpoint; idempotent.
        Call before the store shuts down."""
        thread = self._thread
        if thread is None:
            return
        with self._cond:
            self._stopping = True
            self._cond.notify()
        thread.join()
        self._thread = None
        self._store.remove_arrival_listener(self._on_arrival)
        if self._loaded:
            self._checkpoint()
        self._writer.close()  # the last checkpoint written before this returns

    def _on_arrival(self, topic: str, queue_id: int, max_offset: int) -> None:
        """The store's arrival listener for :data:`TIMER_TOPIC` alone (no call for others)."""
        with self._cond:
            self._woken = True
            self._cond.notify()

    def _run(self) -> None:
        name_os_thread(TIMER_THREAD_NAME)
        while not self._stopping:
            timeout_s: float | None
            try:
                timeout_s = self._round()
            except Exception:
                _log.exception("timer: a round failed; starting over from the checkpoint")
                self._unload()
                timeout_s = self.retry_interval_ms / 1000
            with self._cond:
                if not self._woken and not self._stopping and (timeout_s is None or timeout_s > 0):
                    self._cond.wait(timeout_s)  # None: until an arrival (an idle broker)
                self._woken = False

    def _round(self) -> float | None:
        """One pass: read, deliver, checkpoint; how long to sleep after it, seconds (None:
        until woken)."""
        if not self._store.leading:
            if self._loaded:
                self._unload()
            return _FOLLOWER_WAIT_S
        if not self._loaded:
            self._load()
        more = self._read()
        now_ms = self._clock_ms()
        if now_ms >= self._retry_at_ms:
            due = self._index.pop_due(now_ms, _DELIVER_PER_ROUND)
            if due:
                self._deliver(due)
        more = self._warm(now_ms) or more
        now_ms = self._clock_ms()
        if self._ledger.changes != self._saved_changes and (
            now_ms - self._saved_at_ms >= self.checkpoint_interval_ms
        ):
            self._checkpoint()
        if more:
            return 0.0
        next_ms = self._index.next_due_ms()
        wait_ms = float("inf") if next_ms is None else max(next_ms, self._retry_at_ms) - now_ms
        cold_ms = self._index.next_cold_ms()
        if cold_ms is not None and self._may_warm():
            wait_ms = min(wait_ms, cold_ms - self.hold_horizon_ms - now_ms)
        if self._ledger.changes != self._saved_changes:
            wait_ms = min(wait_ms, self.checkpoint_interval_ms)
        if wait_ms == float("inf"):
            return None
        return max(0.0, wait_ms / 1000)

    def _load(self) -> None:
        """Start leading: the checkpoint, the re-puts after it, the pending entries."""
        store = self._store
        checkpoint = TimerCheckpoint.load(self._path) or TimerCheckpoint()
        self._ledger = DeliveryLedger(checkpoint.low, checkpoint.marks)
        self._recovered = delivered_after(store, checkpoint.log_offset)
        self._read_offset = max(checkpoint.low, store.get_min_offset(TIMER_TOPIC, TIMER_QUEUE_ID))
        while self._read():
            pass
        self._recovered = set()
        self._loaded = True
        self._saved_changes = -1  # checkpoint the load's marks soon
        _log.info(
            "timer: leading with %d pending timer messages from queue offset %d",
            len(self._index),
            self._ledger.low,
        )

    def _unload(self) -> None:
        self._writer.drain()  # nothing of this term written after it
        self._index.clear()
        self._held_bytes = 0
        self._loaded = False

    def _read(self) -> bool:
        """Read new entries of the timer queue into the index; whether more are waiting."""
        now_ms = self._clock_ms()
        for _ in range(_READS_PER_ROUND):
            read = read_queue(self._store, self._read_offset, _READ_COUNT)
            for offset, held in read.records:
                self._add(offset, held, now_ms)
            moved = read.next_offset != self._read_offset
            self._read_offset = read.next_offset
            if not read.found and not moved:
                return False
        return True

    def _add(self, offset: int, held: Held | None, now_ms: int) -> None:
        ledger = self._ledger
        if ledger.delivered(offset):
            return
        if held is None:
            self._drop(offset, "cannot be read")
            return
        if self._recovered and _key(held) in self._recovered:
            ledger.mark(offset)  # put back before the crash, after the checkpoint
            return
        if held.due_ms - now_ms <= self.hold_horizon_ms and self._held_bytes < self.hold_max_bytes:
            self._held_bytes += _size(held)
            self._index.add(held.due_ms, offset, held.packed())
        else:
            self._index.add(held.due_ms, offset)

    def _may_warm(self) -> bool:
        return self._held_bytes < self.hold_max_bytes - self.hold_max_bytes // _WARM_FREE_FRACTION

    def _warm(self, now_ms: int) -> bool:
        """Read ahead the cold entries due within the hold horizon, to be held until due (up
        to ``hold_max_bytes``); whether more are waiting."""
        if not self._index.cold or not self._may_warm():
            return False
        next_ms = self._index.next_cold_ms()
        if next_ms is None or next_ms > now_ms + self.hold_horizon_ms:
            return False
        index, lock = self._index, self._warming_lock
        with lock:
            cold = index.pop_cold(now_ms + self.hold_horizon_ms + _WARM_AHEAD_MS, _WARM_PER_ROUND)
            self._warming = len(cold)
        read: dict[int, Held | None] = {}
        try:
            read = self._reread([offset for _, offset in cold])
        finally:  # back in the index in one step with the count (a raise: none read, none back)
            with lock:
                self._warming = 0
                for due_ms, offset in cold:
                    held = read.get(offset)
                    if held is None:
                        continue  # dropped
                    if self._held_bytes < self.hold_max_bytes:
                        self._held_bytes += _size(held)
                        index.add(due_ms, offset, held.packed())
                    else:
                        index.add(due_ms, offset)
        return len(cold) == _WARM_PER_ROUND and self._may_warm()

    def _drop(self, offset: int, why: str) -> None:
        _log.error("timer: dropped an entry that %s: queue_offset=%d", why, offset)
        self._ledger.mark(offset)
        self.dropped += 1

    def _deliver(self, due: list[tuple[int, int, HeldTuple | None]]) -> None:
        """Put the due entries back to their queues, a batch per queue in due order."""
        groups: dict[tuple[str, int, int, bytes, int, int], list[tuple[int, Held]]] = {}
        cold = [offset for _, offset, kept in due if kept is None]
        read = self._reread(cold) if cold else {}
        for _, offset, kept in due:
            held = read.get(offset) if kept is None else Held.unpacked(kept)
            if held is None:
                continue
            if kept is not None:
                self._held_bytes -= _size(held)
            groups.setdefault(batch_key(held), []).append((offset, held))
        for entries in groups.values():
            status = put_back(self._store, [held for _, held in entries]).status
            if status in _RETRIED:
                for offset, held in entries:  # held again: not read again when retried
                    self._held_bytes += _size(held)
                    self._index.add(held.due_ms, offset, held.packed())
                self._retry_at_ms = self._clock_ms() + self.retry_interval_ms
                _log.warning(
                    "timer: put-back refused, trying again in %d ms: status=%s topic=%r",
                    self.retry_interval_ms,
                    status.value,
                    entries[0][1].topic,
                )
                continue
            if status is PutMessageStatus.PUT_OK or status is PutMessageStatus.FLUSH_DISK_TIMEOUT:
                self.delivered += len(entries)
            else:
                _log.error(
                    "timer: dropped %d messages the store refuses: status=%s topic=%r",
                    len(entries),
                    status.value,
                    entries[0][1].topic,
                )
                self.dropped += len(entries)
            for offset, _ in entries:
                self._ledger.mark(offset)

    def _reread(self, offsets: list[int]) -> dict[int, Held | None]:
        """The records at ``offsets`` read again, in runs (``read_offsets``); those that cannot
        be read or are gone are dropped (None, or absent)."""
        offsets.sort()
        read = read_offsets(self._store, offsets)
        for offset in offsets:
            if offset not in read:
                self._drop(offset, "is gone from the store (retention?)")
            elif read[offset] is None:
                self._drop(offset, "cannot be read")
        return read

    def _checkpoint(self) -> None:
        """Hand the marks to the writer's thread (``_checkpoint_writer``): not waited for."""
        ledger = self._ledger
        self._writer.offer(
            TimerCheckpoint(ledger.low, ledger.marks(), self._store.max_physical_offset)
        )
        self._saved_changes = ledger.changes
        self._saved_at_ms = self._clock_ms()


def _size(held: Held) -> int:
    """About what a kept record holds in memory (its body and properties)."""
    return len(held.body) + len(held.properties)


def _key(held: Held) -> DeliveredKey:
    """The key a put-back of ``held`` leaves in the log (``_dedupe``)."""
    unique = decode_properties(held.properties).get(PROPERTY_UNIQ_KEY, "")
    return held.topic, unique, str(held.due_ms)
