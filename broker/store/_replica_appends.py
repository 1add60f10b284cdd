"""A store in a broker group as a follower: the leader's log bytes appended as they are.

The replication layer receives the leader's commit log bytes (``read_log`` on the leader, sent in
APPEND frames) and hands each piece to :meth:`ReplicaPath.append_replicated` with the offset it
starts at, which must be where this log's bytes end. The bytes are whole units, batches with the
leader's broker fields and blank fillers, exactly where the leader has them, so the follower's
log is byte for byte the leader's. A unit may come in pieces (a frame is smaller than a large
batch): the bytes of an incomplete unit at the end are held in memory until the rest comes, and
count nowhere (not in the log end, nor in what ``flush()`` makes durable and the follower acks).

Each complete batch is checked (framing and CRC, and that it names this position) before it is
written; it updates the per-queue counters and the producer state (``_log_state``) and is not
dispatched until the high watermark passes it (``_commit_path``). A batch that fails its check
raises :class:`CorruptRecordError` (the units before it are kept, the held bytes dropped):
fetch again from the log end.

Caller: the broker's replication layer (the follower's fetcher), through ``MessageStore``.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from aeromq.broker._errors import BrokerStateError, CorruptRecordError, InvalidArgumentError
from aeromq.broker.store._commit_log import BLANK_MAGIC, MIN_BLANK_LENGTH
from aeromq.broker.store._dispatch import read_head
from aeromq.broker.store._log_state import note_batch
from aeromq.broker.store._store_parts import StoreParts
from aeromq.common.record_batch import (
    BASE_PHYSICAL_OFFSET_OFFSET,
    BATCH_MAGIC,
    FIXED_HEADER_LENGTH,
    BatchCheck,
    check_batch,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["ReplicaPath"]

_PREFIX: Final = struct.Struct("<iI")
_I64: Final = struct.Struct("<q")


class ReplicaPath(StoreParts):
    """A follower's appends, for ``MessageStore`` (see module)."""

    def append_replicated(self, offset: int, data: Buffer) -> int:
        """Append the leader's log bytes ``data``, which start at commit log offset ``offset``:
        this log's end (``max_physical_offset``) plus the bytes held of an incomplete unit, or
        the log's end itself (a fetch started over: the held bytes are dropped). Returns the
        log's end after it. Raises :class:`InvalidArgumentError` for another offset (or a unit
        that does not fit this log's segments), :class:`CorruptRecordError` for a unit that
        fails its check, :class:`BrokerStateError` on a leader or a store not running.
        Caller: the follower's fetcher, one thread."""
        self._require_group()
        with self._put_lock:
            if self._leading or not self._writable:
                raise BrokerStateError(
                    "replicated bytes are taken by a running follower only",
                    leading=self._leading,
                    writable=self._writable,
                )
            end = self.commit_log.max_offset
            pending = self._pending
            if offset == end and pending:
                pending.clear()  # the leader sends from our end again
            elif offset != end + len(pending):
                raise InvalidArgumentError(
                    "replicated bytes must start at the end of this log",
                    offset=offset,
                    expected=end + len(pending),
                    log_end=end,
                )
            try:
                if pending:
                    pending += memoryview(data).cast("B")
                    with memoryview(pending) as view:
                        used = self._append_units(view)
                    del pending[:used]
                else:
                    with memoryview(data) as raw, raw.cast("B") as view:
                        used = self._append_units(view)
                        pending += view[used:]
            except (CorruptRecordError, InvalidArgumentError):
                pending.clear()
                raise
            return self.commit_log.max_offset

    def _append_units(self, view: memoryview) -> int:
        """Write the complete units at the start of ``view`` to the log; returns the bytes
        used (the rest is an incomplete unit)."""
        commit_log = self.commit_log
        segment_bytes = commit_log.segment_bytes
        at = 0
        while len(view) - at >= MIN_BLANK_LENGTH:
            position = commit_log.max_offset
            size, magic = _PREFIX.unpack_from(view, at)
            room = segment_bytes - position % segment_bytes
            if magic == BATCH_MAGIC:
                if not FIXED_HEADER_LENGTH <= size <= room - MIN_BLANK_LENGTH:
                    raise CorruptRecordError(
                        "replicated batch with a length that does not fit",
                        physical_offset=position,
                        size=size,
                        room=room,
                    )
            elif magic != BLANK_MAGIC or size != room:
                raise CorruptRecordError(
                    "replicated bytes are not a batch or a blank filler",
                    physical_offset=position,
                    size=size,
                    magic=magic,
                )
            if len(view) - at < size:
                break
            with view[at : at + size] as unit:
                if magic == BATCH_MAGIC:
                    self._append_batch_copy(unit, position)
                else:
                    commit_log.append_copy(unit)
            at += size
        return at

    def _append_batch_copy(self, unit: memoryview, position: int) -> None:
        """Check one replicated batch, write it, and count it."""
        check, why = check_batch(unit, check_content=False)
        if check is not BatchCheck.OK:
            raise CorruptRecordError(
                "replicated batch failed its check", physical_offset=position, check=why
            )
        if _I64.unpack_from(unit, BASE_PHYSICAL_OFFSET_OFFSET)[0] != position:
            raise CorruptRecordError(
                "replicated batch names another position",
                physical_offset=position,
                named=_I64.unpack_from(unit, BASE_PHYSICAL_OFFSET_OFFSET)[0],
            )
        head = read_head(unit)
        if head is None:
            raise CorruptRecordError(
                "replicated batch not one a store could have written", physical_offset=position
            )
        commit_log = self.commit_log
        commit_log.append_copy(unit)
        if head.store_timestamp_ms > commit_log.last_store_timestamp_ms:
            commit_log.last_store_timestamp_ms = head.store_timestamp_ms
        note_batch(head, unit, position, self._counters, self.producer_states)
