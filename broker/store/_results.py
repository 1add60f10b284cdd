"""What the store's hot paths return: statuses and results, never exceptions (RocketMQ's
``PutMessageStatus``/``PutMessageResult`` and ``GetMessageStatus``/``GetMessageResult``)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from aeromq.broker._errors import CorruptRecordError
from aeromq.broker.store._message import StoredMessage, create_message_id

__all__ = [
    "BoundaryType",
    "GetMessageResult",
    "GetMessageStatus",
    "PutCallback",
    "PutMessageResult",
    "PutMessageStatus",
]


class PutMessageStatus(enum.Enum):
    """The outcome of a put. Only ``PUT_OK`` means stored (and, under SYNC flush, durable; in a
    broker group, committed: below the high watermark). The last three are a group's (and
    ``OUT_OF_ORDER_SEQUENCE`` an idempotent producer's on a single broker too); each has the
    response code of its name (``aeromq.common.ResponseCode``)."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"  # stored, but not durable within the timeout
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"  # not started, shut down, or disk failed
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"  # a new segment could not be made
    DISK_FULL = "DISK_FULL"  # below the free-space watermark, or no room for a new segment
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"  # too large, bad topic or queue, mixed batch
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    NOT_LEADER = "NOT_LEADER"  # a group member that does not lead: nothing stored
    REPLICATION_TIMEOUT = "REPLICATION_TIMEOUT"  # appended, not committed in time: outcome unknown
    OUT_OF_ORDER_SEQUENCE = "OUT_OF_ORDER_SEQUENCE"  # an idempotent producer's sequence gap


class GetMessageStatus(enum.Enum):
    """The outcome of a get, as RocketMQ's. The broker maps it to a pull status as
    RocketMQ's ``PullMessageProcessor`` does: FOUND to FOUND; NO_MATCHED_MSG and
    MESSAGE_WAS_REMOVING to NO_MATCHED_MSG (pull again at once from the next offset);
    OFFSET_OVERFLOW_ONE, and NO_MESSAGE_IN_QUEUE for offset 0, to NO_NEW_MSG (long poll);
    OFFSET_TOO_SMALL, OFFSET_OVERFLOW_BADLY, and NO_MESSAGE_IN_QUEUE for another offset, to
    OFFSET_ILLEGAL. ``next_begin_offset`` is always where to read next."""

    FOUND = "FOUND"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"  # entries read, none matched (next offset advances)
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"  # the records went to retention meanwhile
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"  # the queue is empty (max offset 0)
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"  # before min offset; next is min
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"  # exactly max offset: nothing new yet
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"  # beyond max offset; next is max


class BoundaryType(enum.Enum):
    """For a time search: LOWER is the first message at or after the time, UPPER the last at
    or before it."""

    LOWER = "LOWER"
    UPPER = "UPPER"


@dataclass(slots=True)
class PutMessageResult:
    """A put's outcome: one stored batch. ``physical_offset`` is the batch's and
    ``queue_offset`` its first record's; record ``i`` has queue offset ``queue_offset + i``
    and commit log offset ``physical_offset + i``. ``wrote_bytes`` is the batch's length."""

    status: PutMessageStatus
    physical_offset: int = -1
    queue_offset: int = -1
    message_count: int = 0
    wrote_bytes: int = 0
    store_timestamp_ms: int = 0
    store_host: bytes = b""

    @property
    def ok(self) -> bool:
        """Whether the batch was stored (``PUT_OK``)."""
        return self.status is PutMessageStatus.PUT_OK

    @property
    def physical_offsets(self) -> list[int]:
        """The commit log offset of each record, in order (made on demand)."""
        base = self.physical_offset
        return list(range(base, base + self.message_count))

    @property
    def message_ids(self) -> list[str]:
        """The offset message id of each record, in order (made on demand)."""
        return [create_message_id(self.store_host, p) for p in self.physical_offsets]


@dataclass(slots=True)
class GetMessageResult:
    """A get's outcome: what was read, where to read next, and the queue's bounds at the
    time of the read.

    ``data`` is the stored batches that hold the wanted records (queue offsets in
    ``[requested offset, next_begin_offset)`` whose tag hash matched), each whole, once, in
    queue order, concatenated: ``batch_count`` batches, ``message_count`` wanted records
    (records of those batches outside that range or filter are the reader's to skip).
    ``messages`` is filled by ``get_messages`` only: the wanted records, decoded and
    CRC-checked. ``corrupt`` lists batches that failed their check: they are not returned,
    the next offset moves past them, and each error carries its ``physical_offset`` and
    ``queue_offset``.
    """

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    data: bytes = b""
    batch_count: int = 0
    message_count: int = 0
    messages: list[StoredMessage] = field(default_factory=list)
    corrupt: list[CorruptRecordError] = field(default_factory=list)

    @property
    def buffer_total_size(self) -> int:
        """The bytes of ``data``."""
        return len(self.data)


PutCallback = Callable[[PutMessageResult], None]
"""What an asynchronous put calls with its final result."""
