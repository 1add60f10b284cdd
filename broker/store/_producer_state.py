"""Idempotent producers' last batches per queue (Kafka's ``ProducerStateManager``), so that a
producer's retry of a batch already stored is answered with the stored result, not stored twice.

A record batch may carry a producer state (``common/record_batch/``: producer id, the sequence
number of its first record, the producer's epoch). Per (producer id, topic, queue id) the table
keeps the producer's epoch and its last :data:`WINDOW` batches as stored (base sequence, record
count, where and at which queue offset they went). :meth:`ProducerStateTable.check` judges a new
batch before it is appended:

- a batch whose base sequence and record count are one of those kept is a duplicate: it is
  answered with that batch's result, and not appended;
- a batch whose base sequence follows the last one kept (its base sequence plus its count,
  modulo 2^31) is taken, as is any batch of a producer the table does not know (a first batch,
  or one after the producer was forgotten) or of a higher epoch (a producer that started over);
- anything else (a gap, an overlap, a stale retry older than the window, a lower epoch) is
  refused: ``OUT_OF_ORDER_SEQUENCE``.

The table changes only under the store's put lock (appends, a follower's replicated appends, the
rebuild after recovery or a truncation) and forgets a producer whose last batch is older than
``producer_expiry_ms`` by store time, so it stays bounded. It is rebuilt from the log: from a
snapshot (:meth:`ProducerStateTable.save` beside the checkpoint, :meth:`load`) plus a scan of the
log after it (``_tail_scan``). No I/O but the snapshot's file.

Caller: the store's put paths (``_put_path``, ``_leader_path``), ``append_replicated``
(``_replica_appends``), recovery and truncation (``_tail_scan``); the checkpoint saves it.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Final, NamedTuple

from aeromq.broker._errors import StoreError
from aeromq.broker.store._atomic_file import read_json, write_json_atomically
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE
from aeromq.common.record_batch import MAX_SEQUENCE, ProducerState

__all__ = [
    "OUT_OF_ORDER",
    "WINDOW",
    "OutOfOrder",
    "ProducerSnapshot",
    "ProducerStateTable",
    "StoredBatch",
]

WINDOW: Final = 5
"""Batches kept per producer and queue (Kafka keeps 5: a producer's requests in flight)."""
_SEQUENCE_MODULUS: Final = MAX_SEQUENCE + 1
_VERSION: Final = 1


class StoredBatch(NamedTuple):
    """One batch of a producer as stored: its sequences and its put result."""

    base_sequence: int
    record_count: int
    physical_offset: int
    queue_offset: int
    length: int
    store_timestamp_ms: int

    @property
    def end(self) -> int:
        """The commit log offset where the batch's bytes end."""
        return self.physical_offset + self.length


class OutOfOrder:
    """The verdict on a batch whose sequence does not follow (see module)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OUT_OF_ORDER"


OUT_OF_ORDER: Final = OutOfOrder()

_Key = tuple[int, str, int]  # producer id, topic, queue id


class _Producer:
    """One producer's epoch and last batches in one queue."""

    __slots__ = ("batches", "epoch")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.batches: collections.deque[StoredBatch] = collections.deque(maxlen=WINDOW)


class ProducerSnapshot(NamedTuple):
    """A saved table: its rows, valid for the log before ``offset``."""

    offset: int
    table: ProducerStateTable


class ProducerStateTable:
    """Producers' last batches by (producer id, topic, queue id); see module. ``dirty`` is set
    by every change and cleared by :meth:`save`."""

    def __init__(self) -> None:
        self._producers: dict[_Key, _Producer] = {}
        self.dirty = False

    def __len__(self) -> int:
        return len(self._producers)

    def check(
        self, state: ProducerState, topic: str, queue_id: int, count: int
    ) -> StoredBatch | OutOfOrder | None:
        """The verdict on a batch of ``count`` records with producer ``state``: the stored
        batch it duplicates, :data:`OUT_OF_ORDER`, or None to take it (see module)."""
        entry = self._producers.get((state.producer_id, topic, queue_id))
        if entry is None or state.producer_epoch > entry.epoch:
            return None
        if state.producer_epoch < entry.epoch:
            return OUT_OF_ORDER
        sequence = state.base_sequence
        batches = entry.batches
        last = batches[-1]
        # the common case first: the batch after the last (no kept batch starts there: the
        # window's batches would have to span 2^31 sequences)
        if sequence == (last.base_sequence + last.record_count) % _SEQUENCE_MODULUS:
            return None
        for stored in batches:
            if stored.base_sequence == sequence and stored.record_count == count:
                return stored
        return OUT_OF_ORDER

    def record(self, state: ProducerState, topic: str, queue_id: int, stored: StoredBatch) -> None:
        """Keep ``stored`` as the producer's last batch in the queue (a higher epoch starts
        the producer over)."""
        key = (state.producer_id, topic, queue_id)
        entry = self._producers.get(key)
        if entry is None or state.producer_epoch > entry.epoch:
            entry = self._producers[key] = _Producer(state.producer_epoch)
        entry.batches.append(stored)
        self.dirty = True

    def expire(self, cutoff_ms: int) -> int:
        """Forget the producers whose last batch was stored before ``cutoff_ms``; returns how
        many went."""
        doomed = [
            key
            for key, entry in self._producers.items()
            if not entry.batches or entry.batches[-1].store_timestamp_ms < cutoff_ms
        ]
        for key in doomed:
            del self._producers[key]
        if doomed:
            self.dirty = True
        return len(doomed)

    def clear(self) -> None:
        """Forget every producer."""
        self._producers.clear()
        self.dirty = True

    def copy(self) -> ProducerStateTable:
        """A copy (for a snapshot taken under the put lock and written outside it)."""
        table = ProducerStateTable()
        for key, entry in self._producers.items():
            twin = table._producers[key] = _Producer(entry.epoch)
            twin.batches.extend(entry.batches)
        return table

    def save(self, path: Path, offset: int, *, mode: int = DEFAULT_FILE_MODE) -> None:
        """Write the table, valid for the log before ``offset``, atomically to ``path``."""
        rows = [
            [producer_id, topic, queue_id, entry.epoch, [list(b) for b in entry.batches]]
            for (producer_id, topic, queue_id), entry in self._producers.items()
        ]
        write_json_atomically(
            path, {"version": _VERSION, "offset": offset, "producers": rows}, mode=mode
        )

    @classmethod
    def load(cls, path: Path) -> ProducerSnapshot | None:
        """The snapshot saved in ``path`` (None when there is none); raises
        :class:`StoreError` for a malformed one."""
        value = read_json(path)
        if value is None:
            return None
        table = cls()
        try:
            if value["version"] != _VERSION:
                raise StoreError("unknown producer state version", path=str(path))
            for producer_id, topic, queue_id, epoch, batches in value["producers"]:
                entry = table._producers[(int(producer_id), str(topic), int(queue_id))] = _Producer(
                    int(epoch)
                )
                entry.batches.extend(StoredBatch(*(int(v) for v in b)) for b in batches)
            return ProducerSnapshot(int(value["offset"]), table)
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError("malformed producer state", path=str(path)) from exc
