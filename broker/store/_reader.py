"""The store's read path: gets by queue (RocketMQ's ``getMessage``) and lookups by key.

Caller: the ``MessageStore``, from any thread, concurrently with puts and retention. Reads go
through the consume queue to the commit log; every record is checked (framing and CRC)
before it is returned, and one that fails is skipped and reported, never returned.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

import numpy as np

from aeromq.broker._errors import CorruptRecordError
from aeromq.broker.store._commit_log import CommitLog
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._message import StoredMessage
from aeromq.broker.store._queue_table import ConsumeQueueTable
from aeromq.broker.store._results import GetMessageResult, GetMessageStatus

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_COUNT", "MessageReader"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_COUNT = 32
DEFAULT_MAX_BYTES = 256 * 1024


class MessageReader:
    """Reads of ``commit_log`` through ``queues``; a filtered get scans at most
    ``max_filter_scan_entries`` entries (RocketMQ's ``maxFilterMessageSize`` / 20)."""

    def __init__(
        self, commit_log: CommitLog, queues: ConsumeQueueTable, max_filter_scan_entries: int
    ) -> None:
        self._commit_log = commit_log
        self._queues = queues
        self._max_filter_scan_entries = max_filter_scan_entries
        self.corrupt_records_seen = 0

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = DEFAULT_MAX_COUNT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        tag_hashes: Collection[int] | None = None,
    ) -> GetMessageResult:
        """Read up to ``max_count`` messages (and about ``max_bytes``; at least one) from
        ``offset`` of (topic, queue id), keeping those whose tag hash is in ``tag_hashes``
        (all when None). Statuses and next offsets are RocketMQ's ``getMessage``'s; records
        that fail their check are skipped and listed in ``corrupt``. Never raises.
        """
        queue = self._queues.get(topic, queue_id)
        if queue is None:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        min_offset = queue.min_offset
        max_offset = queue.max_offset
        if max_offset == 0:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        if offset < min_offset:
            status = GetMessageStatus.OFFSET_TOO_SMALL
            return GetMessageResult(status, min_offset, min_offset, max_offset)
        if offset == max_offset:
            status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            return GetMessageResult(status, offset, min_offset, max_offset)
        if offset > max_offset:
            status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
            return GetMessageResult(status, max_offset, min_offset, max_offset)

        result = GetMessageResult(GetMessageStatus.NO_MATCHED_MSG, offset, min_offset, max_offset)
        wanted = np.fromiter(tag_hashes, dtype=np.int64) if tag_hashes is not None else None
        scan_limit = max(self._max_filter_scan_entries, max_count)
        messages = result.messages
        commit_log = self._commit_log
        read = commit_log.read
        next_offset = offset
        total = 0
        while next_offset < max_offset and next_offset - offset < scan_limit:
            window = scan_limit - (next_offset - offset)
            if wanted is None:  # every entry is wanted: read no more than fit the batch
                window = min(window, max_count - len(messages))
                if window <= 0:
                    break
            entries = queue.entries(next_offset, window)
            if not len(entries):  # its file went to retention meanwhile
                if next_offset < queue.min_offset:
                    result.next_begin_offset = queue.min_offset
                    if not messages:
                        result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                break
            physical = entries["offset"].tolist()
            sizes = entries["size"].tolist()
            matched = np.isin(entries["tag"], wanted).tolist() if wanted is not None else None
            del entries
            full = False
            for i, (position, size) in enumerate(zip(physical, sizes, strict=True)):
                if messages and (len(messages) >= max_count or total + size > max_bytes):
                    full = True
                    break
                queue_offset = next_offset + i
                result.next_begin_offset = queue_offset + 1
                if matched is not None and not matched[i]:
                    continue
                message = read(position, size)
                if (
                    message is None
                    or message.queue_offset != queue_offset
                    or message.queue_id != queue_id
                    or message.topic != topic
                ):
                    if position < commit_log.min_offset:
                        if not messages:
                            result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                        continue
                    self._report_corrupt(result, topic, queue_id, queue_offset, position, size)
                    continue
                messages.append(message)
                total += size
                result.status = GetMessageStatus.FOUND
            if full:
                break
            next_offset += len(physical)
        result.buffer_total_size = total
        return result

    def _report_corrupt(
        self,
        result: GetMessageResult,
        topic: str,
        queue_id: int,
        queue_offset: int,
        position: int,
        size: int,
    ) -> None:
        check, _ = self._commit_log.check(position)
        error = CorruptRecordError(
            "record failed its check and was skipped",
            physical_offset=position,
            size=size,
            topic=topic,
            queue_id=queue_id,
            queue_offset=queue_offset,
            check=check.name,
        )
        self.corrupt_records_seen += 1
        result.corrupt.append(error)
        _log.error("%s", error)

    def query_messages_by_key(
        self,
        index: IndexService,
        topic: str,
        key: str,
        max_count: int,
        begin_ms: int,
        end_ms: int,
    ) -> list[StoredMessage]:
        """Messages of ``topic`` with ``key`` among their keys or as their unique key,
        stored within ``[begin_ms, end_ms]``, newest first."""
        found: list[StoredMessage] = []
        max_offset = self._commit_log.max_offset
        for position in index.query(topic, key, max_count, begin_ms, end_ms):
            if position >= max_offset or position < self._commit_log.min_offset:
                continue
            try:
                message = self._commit_log.read_checked(position)
            except (CorruptRecordError, ValueError):
                continue
            if (
                message.topic == topic
                and begin_ms <= message.store_timestamp_ms <= end_ms
                and (key in message.keys or message.unique_key == key)
            ):
                found.append(message)
                if len(found) >= max_count:
                    break
        return found
