"""The store's read path: gets by queue (RocketMQ's ``getMessage``), lookups by commit log
offset and by key.

Caller: the ``MessageStore``, from any thread, concurrently with puts and retention.
``get_batches`` is the pull path: the consume-queue slice as numpy arrays (tag filter on its
hash column, entries grouped by batch), each wanted batch's header checked cheaply, and the
stored bytes gathered as views of the mapped segments (joined once, or handed over as they
are for the pull path to write into the transport); no decode, no object per message, no CRC
(the consumer checks it). An unfiltered get's first window (a bulk reader's every pull) is
taken in a fixed number of numpy steps, every batch header of it checked at once
(``_take_checked``: a 1 MiB pull is ~170 batches, and the per-batch loop cost ~3 us each);
anything unusual there (a failed check, a batch in another segment) goes the per-batch way,
which reports it. A pull of the very batch the queue's last put appended (a caught-up
consumer's, released by that put: ``ConsumeQueue.last_batch``) is a view of it at once, with
no numpy step (a fifth of the general path's time, 1.4 against 4 us warm; five times that on
a cold cache, at 1,000 msgs/s). ``get_messages`` decodes what ``get_batches``
found into ``StoredMessage``s, CRC-checked (tests and admin tools).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection

import numpy as np

from aeromq.broker._errors import CorruptRecordError
from aeromq.broker.store._batch_codec import decode_record
from aeromq.broker.store._commit_log import BATCH_HEAD, CommitLog
from aeromq.broker.store._consume_queue import ConsumeQueue, LastBatch
from aeromq.broker.store._index_service import IndexService
from aeromq.broker.store._mapped_file import MappedFile
from aeromq.broker.store._message import StoredMessage
from aeromq.broker.store._queue_table import ConsumeQueueTable
from aeromq.broker.store._results import GetMessageResult, GetMessageStatus
from aeromq.common.record_batch import (
    BATCH_MAGIC,
    FIXED_HEADER_LENGTH,
    HEADER_DTYPE,
    RecordBatch,
)

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_COUNT", "MessageReader"]

try:
    from aeromq.broker.store import _batch_take as _native
except ImportError:  # not built: the numpy steps
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

_log = logging.getLogger(__name__)

DEFAULT_MAX_COUNT = 32
DEFAULT_MAX_BYTES = 256 * 1024
_TOPIC_CACHE_LIMIT = 10_000


class MessageReader:
    """Reads of ``commit_log`` through ``queues``; a filtered get scans at most
    ``max_filter_scan_entries`` entries (RocketMQ's ``maxFilterMessageSize`` / 20)."""

    def __init__(
        self, commit_log: CommitLog, queues: ConsumeQueueTable, max_filter_scan_entries: int
    ) -> None:
        self._commit_log = commit_log
        self._queues = queues
        self._max_filter_scan_entries = max_filter_scan_entries
        self._topics: dict[str, bytes] = {}
        self.corrupt_records_seen = 0

    def _bounds(
        self, queue: ConsumeQueue | None, offset: int
    ) -> tuple[GetMessageResult | None, int, int]:
        """A result when ``offset`` is outside the queue, else None; and its bounds."""
        if queue is None:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0), 0, 0
        min_offset = queue.min_offset
        max_offset = queue.max_offset
        if max_offset == 0:
            status = GetMessageStatus.NO_MESSAGE_IN_QUEUE
            return GetMessageResult(status, 0, 0, 0), 0, 0
        if offset < min_offset:
            status = GetMessageStatus.OFFSET_TOO_SMALL
            return GetMessageResult(status, min_offset, min_offset, max_offset), 0, 0
        if offset == max_offset:
            status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            return GetMessageResult(status, offset, min_offset, max_offset), 0, 0
        if offset > max_offset:
            status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
            return GetMessageResult(status, max_offset, min_offset, max_offset), 0, 0
        return None, min_offset, max_offset

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
        (topic, queue id), about ``max_bytes`` of batches (at least one), records wanted when
        their tag hash is in ``tag_hashes`` (all when None). Statuses and next offsets are
        RocketMQ's ``getMessage``'s, by consume-queue entry; a batch whose header fails its
        check is skipped and listed in ``corrupt``. Never raises.

        With ``into``, the batches are not joined into ``data``: a view of each, in the mapped
        commit log, is appended to ``into`` (the pull path writes them into the transport
        straight from there). A view keeps its segment mapped while it lives (retention
        deletes the file; the pages stay until the view goes): drop them once written."""
        queue = self._queues.by_key.get((topic, queue_id))  # (a call fewer a pull)
        if queue is not None and into is not None and tag_hashes is None:
            last = queue.last_batch
            if (
                last is not None
                and last[0] == offset
                and last[1] <= max_count
                and queue.max_offset == offset + last[1]
            ):  # the batch put last, wanted whole: a caught-up consumer's pull
                got = self._last_batch(queue, last, into)
                if got is not None:
                    return got
        if queue is not None and queue.min_offset <= offset < queue.max_offset:
            min_offset = queue.min_offset  # within the queue: a pull's common case, inline
            max_offset = queue.max_offset
        else:
            early, min_offset, max_offset = self._bounds(queue, offset)
            if early is not None or queue is None:
                return early or GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        topic_bytes = self._topics.get(topic)
        if topic_bytes is None:
            if len(self._topics) >= _TOPIC_CACHE_LIMIT:
                self._topics.clear()
            topic_bytes = self._topics[topic] = topic.encode()

        result = GetMessageResult(GetMessageStatus.NO_MATCHED_MSG, offset, min_offset, max_offset)
        wanted = np.fromiter(tag_hashes, dtype=np.int64) if tag_hashes is not None else None
        scan_limit = max(self._max_filter_scan_entries, max_count)
        commit_log = self._commit_log
        find = commit_log.files.find
        pieces: list[memoryview] = []
        count = 0  # wanted entries taken
        total = 0  # batch bytes taken
        last_position = -1  # the batch taken last: a group continuing it adds no bytes
        last_bad = -1  # the batch skipped last: a group continuing it is skipped too
        next_offset = offset
        full = False
        while not full and next_offset < max_offset and next_offset - offset < scan_limit:
            window = scan_limit - (next_offset - offset)
            if wanted is None:  # every entry is wanted: read no more than fit the batch
                window = min(window, max_count - count)
                if window <= 0:
                    break
            entries = queue.entries(next_offset, window)
            n = len(entries)
            if not n:  # its file went to retention meanwhile
                if next_offset < queue.min_offset:
                    result.next_begin_offset = queue.min_offset
                    if not count:
                        result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                break
            if wanted is None and not count and last_position < 0 and last_bad < 0:
                taken = self._take_checked(
                    find, entries, topic_bytes, queue_id, next_offset, max_bytes, pieces
                )
                if taken is not None:  # the common case, in a fixed number of numpy steps
                    count, total, last_position, full = taken
                    result.status = GetMessageStatus.FOUND
                    result.next_begin_offset = next_offset + count
                    if full or count >= max_count:
                        break
                    next_offset += n
                    continue
            if wanted is None:
                picked: list[int] | None = None  # every entry: an index is its own
                physical = entries["offset"]
            else:
                chosen = np.flatnonzero(np.isin(entries["tag"], wanted))
                if not len(chosen):
                    result.next_begin_offset = next_offset + n
                    next_offset += n
                    continue
                picked = chosen.tolist()
                physical = entries["offset"][chosen]
            m = len(physical)
            if physical[0] == physical[m - 1]:  # one batch (offsets ascend): the common case
                starts = [0]
            else:
                starts = [0, *(np.flatnonzero(physical[1:] != physical[:-1]) + 1).tolist()]
            ends = [*starts[1:], m]
            if picked is None:
                firsts = starts
                lasts = [end - 1 for end in ends]
            else:
                firsts = [picked[i] for i in starts]
                lasts = [picked[end - 1] for end in ends]
            groups = zip(
                starts,
                firsts,
                lasts,
                physical[starts].tolist(),
                entries["size"][firsts].tolist(),
                [end - start for start, end in zip(starts, ends, strict=True)],
                strict=True,
            )
            del entries, physical
            for start, first, last, position, size, number in groups:
                if position != last_position:
                    if count:
                        if count >= max_count:
                            full = True
                            break
                        if total + size > max_bytes:
                            result.next_begin_offset = next_offset + first
                            full = True
                            break
                    if position == last_bad:  # reported already, from the window before
                        result.next_begin_offset = next_offset + last + 1
                        continue
                    piece = self._read_batch(
                        find,
                        position,
                        size,
                        topic_bytes,
                        queue_id,
                        next_offset + first,
                        next_offset + last,
                    )
                    if isinstance(piece, str):
                        last_bad = position
                        if position < commit_log.min_offset or piece == "REMOVED":
                            if not count:
                                result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                        else:
                            self._report_corrupt(
                                result, topic, queue_id, next_offset + first, position, size, piece
                            )
                        result.next_begin_offset = next_offset + last + 1
                        continue
                    pieces.append(piece)
                    total += size
                    last_position = position
                room = max_count - count if count else max(max_count, 1)
                if number > room:  # the count cap ends inside this batch
                    count += room
                    taken_last = start + room - 1
                    if picked is not None:
                        taken_last = picked[taken_last]
                    result.next_begin_offset = next_offset + taken_last + 1
                    result.status = GetMessageStatus.FOUND
                    full = True
                    break
                count += number
                result.next_begin_offset = next_offset + last + 1
                result.status = GetMessageStatus.FOUND
            if not full:
                if count >= max_count:
                    break  # RocketMQ stops at the entry after the last taken
                result.next_begin_offset = next_offset + n
            next_offset += n
        if into is not None:
            into.extend(pieces)
        elif pieces:
            result.data = b"".join(pieces)
            for piece in pieces:
                piece.release()
        result.batch_count = len(pieces)
        result.message_count = count
        return result

    @staticmethod
    def _last_batch(
        queue: ConsumeQueue, last: LastBatch, into: list[memoryview]
    ) -> GetMessageResult | None:
        """:meth:`get_batches` of the queue's last batch, from its pulled offset and whole
        (``ConsumeQueue.last_batch``): a view of it in its segment, no look at the entries
        nor check of the batch (the put checked it, then wrote it and its entry); None when
        its segment is unmapped (retention), for the general path to say so."""
        base, count, position, size, segment = last
        at = position - segment.start_offset
        try:
            view = segment.view[at : at + size]
        except ValueError:  # unmapped: its file went to retention meanwhile
            return None
        into.append(view)
        result = GetMessageResult(
            GetMessageStatus.FOUND, base + count, queue.min_offset, queue.max_offset
        )
        result.batch_count = 1
        result.message_count = count
        return result

    @staticmethod
    def _take_checked(
        find: Callable[[int], MappedFile | None],
        entries: np.ndarray,
        topic: bytes,
        queue_id: int,
        first_offset: int,
        max_bytes: int,
        pieces: list[memoryview],
    ) -> tuple[int, int, int, bool] | None:
        """:meth:`_take_checked_py` in one C pass (``broker/store/_batch_take.c``, ``take``) when
        it is built: the same result, without its fixed cost of some 25 numpy steps (about
        25 us, most of a small pull's)."""
        if _native is None:
            return MessageReader._take_checked_py(
                find, entries, topic, queue_id, first_offset, max_bytes, pieces
            )
        mapped = find(int(entries[0]["offset"]))
        if mapped is None:
            return None
        try:
            taken = _native.take(
                entries,
                mapped.view,
                mapped.size,
                mapped.start_offset,
                topic,
                queue_id,
                first_offset,
                max_bytes,
            )
        except ValueError:  # unmapped by retention meanwhile
            return None
        if taken is None:
            return None
        count, total, last_position, full, taken_pieces = taken
        pieces.extend(taken_pieces)
        return count, total, last_position, full

    @staticmethod
    def _take_checked_py(
        find: Callable[[int], MappedFile | None],
        entries: np.ndarray,
        topic: bytes,
        queue_id: int,
        first_offset: int,
        max_bytes: int,
        pieces: list[memoryview],
    ) -> tuple[int, int, int, bool] | None:
        """The first window of an unfiltered get, taken whole batches at a time in numpy steps:
        the batches from the first on while their bytes stay within ``max_bytes`` (the first
        always), each header checked as ``_read_batch`` checks it, all at once. Appends their
        views to ``pieces`` and returns (entries taken, bytes taken, the last batch's position,
        whether the byte cap stopped it); None, having taken nothing, when a batch lies outside
        the first one's segment or any check fails (the per-batch path then finds and reports
        what failed). ``entries`` (queue offsets from ``first_offset``) are at most the count
        cap, so it never ends inside a batch."""
        m = len(entries)
        physical = entries["offset"]
        starts = np.flatnonzero(physical[1:] != physical[:-1]) + 1
        starts = np.concatenate(([0], starts))
        positions = physical[starts]
        sizes = entries["size"][starts].astype(np.int64)
        cumulative = np.cumsum(sizes)
        groups = max(1, int(np.searchsorted(cumulative, max_bytes, side="right")))
        full = groups < len(starts)
        positions = positions[:groups]
        sizes = sizes[:groups]
        mapped = find(int(positions[0]))
        if mapped is None:
            return None
        relative = positions - mapped.start_offset
        checked = FIXED_HEADER_LENGTH + len(topic)  # the header and the topic after it
        if int(relative[-1]) + int(sizes[-1]) > mapped.size or int(sizes.min()) < checked:
            return None
        firsts = starts[:groups] + first_offset
        lasts = np.append(starts[1:], m)[:groups] + (first_offset - 1)
        try:
            data = np.frombuffer(mapped.view, dtype=np.uint8)
            rows = data[relative[:, None] + np.arange(checked)]
        except ValueError:  # unmapped by retention meanwhile
            return None
        head = rows[:, :FIXED_HEADER_LENGTH].copy().view(HEADER_DTYPE)[:, 0]
        ok = (
            (head["magic"] == BATCH_MAGIC)
            & (head["total_length"] == sizes)
            & (head["base_physical_offset"] == positions)
            & (head["queue_id"] == queue_id)
            & (head["base_queue_offset"] <= firsts)
            & (lasts < head["base_queue_offset"] + head["count"])
            & (head["topic_length"] == len(topic))
        )
        if topic:
            wanted = np.frombuffer(topic, dtype=np.uint8)
            ok &= (rows[:, FIXED_HEADER_LENGTH:] == wanted).all(1)
        del data, rows
        if not ok.all():
            return None
        view = mapped.view
        pieces.extend(
            [view[r : r + n] for r, n in zip(relative.tolist(), sizes.tolist(), strict=True)]
        )
        count = int(starts[groups]) if full else m
        return count, int(cumulative[groups - 1]), int(positions[-1]), full

    @staticmethod
    def _read_batch(
        find: Callable[[int], MappedFile | None],
        position: int,
        size: int,
        topic: bytes,
        queue_id: int,
        first_queue_offset: int,
        last_queue_offset: int,
    ) -> memoryview | str:
        """A view of the batch at ``position`` if its header agrees with the consume queue
        (magic, length, physical offset, queue id, queue offsets, topic), else what does not
        (``REMOVED`` when its segment is gone)."""
        mapped = find(position)
        if mapped is None:
            return "REMOVED"
        relative = position - mapped.start_offset
        try:
            view = mapped.view
            if relative + size > mapped.size or size < FIXED_HEADER_LENGTH:
                return "BAD_SIZE"
            (
                length,
                magic,
                base_queue_offset,
                base_physical_offset,
                _store_ms,
                _store_host,
                stored_queue_id,
                _crc,
                record_count,
                _attributes,
                topic_length,
            ) = BATCH_HEAD.unpack_from(view, relative)
            if magic != BATCH_MAGIC:
                return "BAD_MAGIC"
            if length != size:
                return "BAD_SIZE"
            if base_physical_offset != position:
                return "BAD_POSITION"
            if stored_queue_id != queue_id:
                return "BAD_QUEUE_ID"
            if (
                base_queue_offset > first_queue_offset
                or last_queue_offset >= base_queue_offset + record_count
            ):
                return "BAD_QUEUE_OFFSET"
            at = relative + FIXED_HEADER_LENGTH
            if topic_length != len(topic) or view[at : at + topic_length] != topic:
                return "BAD_TOPIC"
            return view[relative : relative + size]
        except ValueError:  # unmapped by retention meanwhile
            return "REMOVED"

    def _report_corrupt(
        self,
        result: GetMessageResult,
        topic: str,
        queue_id: int,
        queue_offset: int,
        position: int,
        size: int,
        check: str,
    ) -> None:
        error = CorruptRecordError(
            "batch failed its check and was skipped",
            physical_offset=position,
            size=size,
            topic=topic,
            queue_id=queue_id,
            queue_offset=queue_offset,
            check=check,
        )
        self._corrupt(result, error)

    def _corrupt(self, result: GetMessageResult, error: CorruptRecordError) -> None:
        self.corrupt_records_seen += 1
        result.corrupt.append(error)
        _log.error("%s", error)

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = DEFAULT_MAX_COUNT,
        max_bytes: int = DEFAULT_MAX_BYTES,
        tag_hashes: Collection[int] | None = None,
    ) -> GetMessageResult:
        """``get_batches``, with the wanted records decoded into ``messages``; a batch whose
        CRC fails goes to ``corrupt`` instead. Never raises."""
        result = self.get_batches(topic, queue_id, offset, max_count, max_bytes, tag_hashes)
        data = result.data
        if not data:
            return result
        wanted = set(tag_hashes) if tag_hashes is not None else None
        end = result.next_begin_offset
        messages = result.messages
        position = 0
        while position < len(data):
            batch = RecordBatch(data, position)
            position += batch.length
            base = batch.base_queue_offset
            if not batch.crc_ok():
                error = CorruptRecordError(
                    "batch failed its CRC check and was skipped",
                    physical_offset=batch.base_physical_offset,
                    size=batch.length,
                    topic=topic,
                    queue_id=queue_id,
                    queue_offset=max(offset, base),
                    check="BAD_CRC",
                )
                self._corrupt(result, error)
                continue
            hashes = batch.tag_hashes.tolist() if wanted is not None else None
            for i in range(max(offset - base, 0), min(end - base, batch.count)):
                if hashes is None or hashes[i] in wanted:  # type: ignore[operator]  # wanted is a set when hashes is not None
                    messages.append(decode_record(batch, i))
        result.message_count = len(messages)
        if not messages and result.status is GetMessageStatus.FOUND:
            result.status = GetMessageStatus.NO_MATCHED_MSG
        return result

    def look_message_by_offset(self, physical_offset: int) -> StoredMessage:
        """The record whose commit log offset is ``physical_offset``: record
        ``physical_offset - start`` of the batch that holds it, CRC-checked; raises
        ``CorruptRecordError`` when no intact record has that offset."""
        commit_log = self._commit_log
        start = commit_log.find_batch(physical_offset)
        if start < 0:
            raise CorruptRecordError(
                "no record at this offset",
                physical_offset=physical_offset,
                min_offset=commit_log.min_offset,
                max_offset=commit_log.max_offset,
            )
        view = commit_log.batch_at(start)
        try:
            batch = RecordBatch(bytes(view))
        finally:
            view.release()
        index = physical_offset - start
        if index >= batch.count:
            raise CorruptRecordError(
                "no record at this offset",
                physical_offset=physical_offset,
                batch_offset=start,
                record_count=batch.count,
            )
        return decode_record(batch, index)

    def query_messages_by_key(
        self,
        index: IndexService,
        topic: str,
        key: str,
        max_count: int,
        begin_ms: int,
        end_ms: int,
        limit: int | None = None,
    ) -> list[StoredMessage]:
        """Messages of ``topic`` with ``key`` among their keys or as their unique key,
        stored within ``[begin_ms, end_ms]``, newest first (at commit log offsets below
        ``limit`` when given)."""
        found: list[StoredMessage] = []
        max_offset = self._commit_log.max_offset if limit is None else limit
        for position in index.query(topic, key, max_count, begin_ms, end_ms):
            if position >= max_offset or position < self._commit_log.min_offset:
                continue
            try:
                message = self.look_message_by_offset(position)
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
