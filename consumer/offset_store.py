"""Offset stores: where a consumer keeps each queue's committed offset (the next to consume).

- :class:`RemoteBrokerOffsetStore` (CLUSTERING): the group's offsets live on the broker; the
  store caches them in memory and sends changed ones on :meth:`~OffsetStore.persist`.
- :class:`LocalFileOffsetStore` (BROADCASTING): each consumer keeps its own offsets in a JSON
  file, ``<offset_store_dir>/<client_id>/<group>/offsets.json``, replaced atomically (write a
  temporary file, fsync, rename, fsync the directory) so a crash leaves the old or the new
  file, never a torn one.

Only commits write the store: ``commit`` (explicit) and auto commit in ``poll``. Persisting
sends what was committed; it never invents an offset. A timer persists every
``persist_consumer_offset_interval_ms`` only when auto commit is on; with it off, committed
offsets reach the broker on ``commit(persist=True)``, when a queue is rebalanced away, and at
shutdown (RocketMQ bug #5315 persisted them on the timer whatever the setting).

A queue rebalanced away is *released* (:meth:`OffsetStore.release`): the broker store sends its
last commit and the release in one call, so the member the queue moved to is granted it with
that commit (see ``aeromq.consumer.rebalance``).

Offsets: -1 means none (never committed). Broker failures raise a
:class:`~client.ClientError` (RocketMQ returns -2 instead).

The file format::

    {"consumer_group": "g", "offsets": [
        {"topic": "t", "broker_name": "b", "queue_id": 0, "offset": 42}, ...]}
"""

from __future__ import annotations

import json
import logging
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable
from enum import Enum
from pathlib import Path

from aeromq.client import ClientError, IllegalStateError, MessageQueue
from aeromq.consumer._broker_api import BrokerApi

__all__ = [
    "LocalFileOffsetStore",
    "OffsetStore",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
]

_log = logging.getLogger(__name__)


class ReadOffsetType(Enum):
    """Where :meth:`OffsetStore.read_offset` looks: the in-memory table only, the durable
    store only (the broker, or the local file), or memory and then the store when memory has
    none (RocketMQ's ``ReadOffsetType``)."""

    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class OffsetStore(ABC):
    """Committed offsets by queue: an in-memory table over a durable store."""

    def __init__(self, consumer_group: str) -> None:
        self.consumer_group = consumer_group
        self._lock = threading.Lock()
        self._table: dict[MessageQueue, int] = {}
        self._dirty: set[MessageQueue] = set()
        self._persist_lock = threading.Lock()
        """One persist at a time: two in flight for one queue could land out of order and move
        the stored offset back (the timer's older value after a dropped queue's newer one)."""

    def load(self) -> None:
        """Read what the durable store holds at start (the broker store reads lazily)."""
        return None

    def update_offset(self, queue: MessageQueue, offset: int, increase_only: bool = False) -> None:
        """Set the committed offset in memory; ``increase_only`` never moves it back."""
        with self._lock:
            current = self._table.get(queue, -1)
            if increase_only and offset <= current:
                return
            if offset != current or queue not in self._table:
                self._table[queue] = offset
                self._dirty.add(queue)

    def read_offset(self, queue: MessageQueue, read_type: ReadOffsetType) -> int:
        """The committed offset, -1 if none; STORE reads go to the durable store."""
        if read_type is not ReadOffsetType.READ_FROM_STORE:
            offset = self._table.get(queue)
            if offset is not None or read_type is ReadOffsetType.READ_FROM_MEMORY:
                return -1 if offset is None else offset
        stored = self._read_stored(queue)
        self.note_stored(queue, stored)
        return stored

    def note_stored(self, queue: MessageQueue, offset: int) -> None:
        """The durable store holds ``offset`` for ``queue`` (read from it, or granted with a
        take-over): it becomes the committed offset in memory unless a newer commit waits."""
        if offset >= 0:
            with self._lock:
                if queue not in self._dirty:
                    self._table[queue] = offset

    def remove_offset(self, queue: MessageQueue) -> None:
        """Forget ``queue`` in memory (after persisting it, when it is rebalanced away)."""
        with self._lock:
            self._table.pop(queue, None)
            self._dirty.discard(queue)

    def offsets(self) -> dict[MessageQueue, int]:
        """A snapshot of the in-memory table."""
        with self._lock:
            return dict(self._table)

    def is_dirty(self, queue: MessageQueue) -> bool:
        """Whether ``queue`` has a commit not persisted yet."""
        return queue in self._dirty

    def persist(self, queue: MessageQueue) -> None:
        """Send ``queue``'s committed offset to the durable store if it changed."""
        self.persist_all((queue,))

    def release(self, queue: MessageQueue, client_id: str) -> None:
        """``queue`` was rebalanced away from ``client_id``: persist its committed offset and
        let go of it (the broker store does both in one call; a file has no holders)."""
        self.persist(queue)

    @abstractmethod
    def persist_all(self, queues: Iterable[MessageQueue]) -> None:
        """Send the changed committed offsets of ``queues``; raises the first failure after
        trying them all."""

    @abstractmethod
    def _read_stored(self, queue: MessageQueue) -> int: ...

    def _take_dirty(self, queues: Iterable[MessageQueue]) -> list[tuple[MessageQueue, int]]:
        with self._lock:
            return [(q, self._table[q]) for q in queues if q in self._dirty and q in self._table]

    def _mark_persisted(self, queue: MessageQueue, offset: int) -> None:
        with self._lock:
            if self._table.get(queue) == offset:
                self._dirty.discard(queue)


class RemoteBrokerOffsetStore(OffsetStore):
    """CLUSTERING: offsets on the broker of each queue (see the module doc)."""

    def __init__(self, broker_api: BrokerApi, consumer_group: str) -> None:
        super().__init__(consumer_group)
        self._api = broker_api

    def persist_all(self, queues: Iterable[MessageQueue]) -> None:
        first_error: ClientError | None = None
        with self._persist_lock:
            for queue, offset in self._take_dirty(queues):
                try:
                    self._api.commit_offset(self.consumer_group, queue, offset)
                except ClientError as error:
                    _log.warning(
                        "persisting offset failed: queue=%s offset=%d: %s", queue, offset, error
                    )
                    first_error = first_error or error
                    continue
                self._mark_persisted(queue, offset)
        if first_error is not None:
            raise first_error

    def release(self, queue: MessageQueue, client_id: str) -> None:
        """Send the changed committed offset (or none) with the release, in one call: the
        queue's next owner is granted it only after this commit."""
        with self._persist_lock:
            dirty = self._take_dirty((queue,))
            offset = dirty[0][1] if dirty else -1
            self._api.release_queue(self.consumer_group, queue, offset, client_id=client_id)
            if dirty:
                self._mark_persisted(queue, offset)

    def _read_stored(self, queue: MessageQueue) -> int:
        return self._api.query_offset(self.consumer_group, queue)


class LocalFileOffsetStore(OffsetStore):
    """BROADCASTING: offsets in a local JSON file (see the module doc)."""

    FILE_NAME = "offsets.json"

    def __init__(self, directory: Path, client_id: str, consumer_group: str) -> None:
        super().__init__(consumer_group)
        self.path = Path(directory) / client_id / consumer_group / self.FILE_NAME

    def load(self) -> None:
        stored = self._read_file()
        with self._lock:
            for queue, offset in stored.items():
                self._table.setdefault(queue, offset)

    def persist_all(self, queues: Iterable[MessageQueue]) -> None:
        with self._persist_lock:
            if not self._take_dirty(queues):
                return
            with self._lock:
                snapshot = dict(self._table)
            self._write_file(snapshot)
        for queue, offset in snapshot.items():
            self._mark_persisted(queue, offset)

    def _read_stored(self, queue: MessageQueue) -> int:
        return self._read_file().get(queue, -1)

    def _read_file(self) -> dict[MessageQueue, int]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            document = json.loads(text)
            return {
                MessageQueue(entry["topic"], entry["broker_name"], int(entry["queue_id"])): int(
                    entry["offset"]
                )
                for entry in document["offsets"]
            }
        except (ValueError, KeyError, TypeError) as exc:
            raise IllegalStateError(
                "the local offset file is corrupt", path=str(self.path)
            ) from exc

    def _write_file(self, table: dict[MessageQueue, int]) -> None:
        document = {
            "consumer_group": self.consumer_group,
            "offsets": [
                {
                    "topic": q.topic,
                    "broker_name": q.broker_name,
                    "queue_id": q.queue_id,
                    "offset": o,
                }
                for q, o in sorted(table.items(), key=lambda item: item[0].order_key())
            ],
        }
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.FILE_NAME}.{os.getpid()}.tmp")
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump(document, file, indent=1)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
