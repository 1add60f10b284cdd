"""The message store's get path: batches and messages read from a queue, offsets and store
times, lookups by commit log offset, message id and key, and waits for new messages.

Reads go through the consume queue to the commit log (``MessageReader``, ``_reader``), with
no lock: a batch is visible as soon as it is dispatched (on a single broker, as it is
appended; in a broker group, when the committed offset passes it, which lookups by offset and
key honour too). A get never raises for an expected
outcome: its ``GetMessageStatus`` and next offsets are RocketMQ's ``getMessage``'s. Long
polling listens to the puts' arrivals (``ArrivalNotifier``).

Caller: the broker's pull path (``PullProcessor``, ``get_batches``), its offset, message and
RocketMQ services, metrics and console, from any thread, through ``MessageStore`` (one of its
roles, see ``broker.store._store_parts``).
"""

from __future__ import annotations

from collections.abc import Collection

from aeromq.broker._errors import BrokerStateError, CorruptRecordError
from aeromq.broker.store._arrival import ArrivalListener
from aeromq.broker.store._message import StoredMessage, decode_message_id
from aeromq.broker.store._reader import DEFAULT_MAX_BYTES, DEFAULT_MAX_COUNT
from aeromq.broker.store._results import BoundaryType, GetMessageResult
from aeromq.broker.store._store_parts import StoreParts

__all__ = ["GetPath"]


class GetPath(StoreParts):
    """The store's reads, for ``MessageStore`` (see module)."""

    def get_batches(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = DEFAULT_MAX_COUNT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        tag_hashes: Collection[int] | None = None,
        into: list[memoryview] | None = None,
    ) -> GetMessageResult:
        """The stored batches holding up to ``max_count`` wanted records from ``offset`` of
        (topic, queue id), in ``data`` (or, with ``into``, as views of the commit log appended
        to it, see ``MessageReader.get_batches``): each whole, once, in order (about ``max_bytes`` of
        batches; at least one). A record is wanted when its tag hash is in ``tag_hashes``
        (all when None) and its queue offset in ``[offset, next_begin_offset)``; the others
        in those batches are the reader's to skip. Statuses and next offsets are RocketMQ's
        ``getMessage``'s; a batch whose header disagrees with its consume-queue entry is
        skipped and listed in ``corrupt``. CRCs are not checked here (the consumer does).
        Never raises. Caller: the broker's pull path, from any thread."""
        return self._reader.get_batches(
            topic, queue_id, offset, max_count, max_bytes, tag_hashes, into
        )

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = DEFAULT_MAX_COUNT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        tag_hashes: Collection[int] | None = None,
    ) -> GetMessageResult:
        """``get_batches`` with the wanted records decoded into ``messages`` (each batch
        CRC-checked; one that fails goes to ``corrupt``). For tests and admin tools."""
        return self._reader.get_messages(topic, queue_id, offset, max_count, max_bytes, tag_hashes)

    @property
    def corrupt_records_seen(self) -> int:
        """How many records gets have skipped because they failed their check."""
        return self._reader.corrupt_records_seen

    def get_min_offset(self, topic: str, queue_id: int) -> int:
        """The queue offset of the oldest message still held (0 for an unknown queue)."""
        queue = self.queues.get(topic, queue_id)
        return queue.min_offset if queue is not None else 0

    def get_max_offset(self, topic: str, queue_id: int) -> int:
        """The queue offset the next message will get (0 for an unknown queue)."""
        queue = self.queues.by_key.get((topic, queue_id))  # (a call fewer: once a pull)
        return queue.max_offset if queue is not None else 0

    def get_offset_by_time(
        self,
        topic: str,
        queue_id: int,
        timestamp_ms: int,
        boundary: BoundaryType = BoundaryType.LOWER,
    ) -> int:
        """The queue offset by store time (see ``BoundaryType``); 0 for an unknown queue."""
        queue = self.queues.get(topic, queue_id)
        if queue is None:
            return 0
        upper = boundary is BoundaryType.UPPER
        return queue.offset_by_time(timestamp_ms, upper, self.commit_log.store_timestamp)

    def get_store_timestamp(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """The store time of the message at ``queue_offset``, or -1 when not held."""
        queue = self.queues.get(topic, queue_id)
        entry = queue.entry(queue_offset) if queue is not None else None
        if entry is None:
            return -1
        stamp = self.commit_log.store_timestamp(entry[0])
        return stamp if stamp is not None else -1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        """The store time of the oldest message still held, or -1 when none is."""
        return self.get_store_timestamp(topic, queue_id, self.get_min_offset(topic, queue_id))

    def look_message_by_offset(self, physical_offset: int) -> StoredMessage:
        """The message whose commit log offset is ``physical_offset`` (record ``i`` of the
        batch at ``b`` has offset ``b + i``); ``CorruptRecordError`` when no intact record
        has it (in a broker group: no committed one)."""
        if self._replicated and physical_offset >= self._commits.committed_offset:
            raise CorruptRecordError(
                "no committed record at this offset",
                physical_offset=physical_offset,
                committed_offset=self._commits.committed_offset,
            )
        return self._reader.look_message_by_offset(physical_offset)

    def query_message_by_id(self, message_id: str) -> StoredMessage:
        """The message of an offset message id (``PutMessageResult.message_ids``)."""
        _host, physical_offset = decode_message_id(message_id)
        return self.look_message_by_offset(physical_offset)

    def query_messages_by_key(
        self,
        topic: str,
        key: str,
        max_count: int = 32,
        begin_ms: int = 0,
        end_ms: int = 2**62,
    ) -> list[StoredMessage]:
        """Messages of ``topic`` with ``key`` among their keys or as their unique key,
        stored within ``[begin_ms, end_ms]``, newest first."""
        if self.index is None:
            raise BrokerStateError("the index is disabled", data_dir=str(self.config.data_dir))
        limit = self._commits.committed_offset if self._replicated else None
        return self._reader.query_messages_by_key(
            self.index, topic, key, max_count, begin_ms, end_ms, limit
        )

    def add_arrival_listener(self, listener: ArrivalListener, topic: str | None = None) -> None:
        """Call ``listener(topic, queue_id, max_offset)`` after every put, or after the puts
        to ``topic`` alone (on the writer's thread; keep it short)."""
        self.arrivals.add_listener(listener, topic)

    def remove_arrival_listener(self, listener: ArrivalListener) -> None:
        """Stop calling ``listener`` after puts."""
        self.arrivals.remove_listener(listener)

    def wait_for_message(self, topic: str, queue_id: int, offset: int, timeout_ms: int) -> bool:
        """Block until the queue holds a message at ``offset`` or later (its max offset is
        beyond ``offset``), at most ``timeout_ms``; True if it does."""

        def ready() -> bool:
            return self.get_max_offset(topic, queue_id) > offset

        return self.arrivals.wait(topic, queue_id, ready, timeout_ms / 1000.0)

    def queue_ids(self) -> list[tuple[str, int]]:
        """Every (topic, queue id) holding a consume queue."""
        return sorted((q.topic, q.queue_id) for q in self.queues)

    @property
    def min_physical_offset(self) -> int:
        """The commit log offset of the oldest byte still held."""
        return self.commit_log.min_offset

    @property
    def max_physical_offset(self) -> int:
        """The commit log offset the next batch will be appended at."""
        return self.commit_log.max_offset

    @property
    def flushed_physical_offset(self) -> int:
        """How far the commit log is durable (flushed to disk)."""
        return self.commit_log.flushed_offset
