"""The timer service's reads of the timer queue and its put-backs, as record batches: no
message object per record (``get_batches`` and ``put_batch``, the parts sliced from the batch's
bytes, ``_records``).

Caller: the timer service's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final, NamedTuple

from aeromq.broker.store import GetMessageStatus, MessageStore, PutMessageResult
from aeromq.broker.timer._delays import TIMER_QUEUE_ID, TIMER_TOPIC
from aeromq.broker.timer._records import Held, batch_records, delivered_properties, read_held
from aeromq.common import RecordBatch, encode_batch, read_total_length
from aeromq.common.record_batch import TIMER_FLAG

__all__ = ["TimerRead", "batch_key", "put_back", "read_offsets", "read_queue"]

_log = logging.getLogger(__name__)

_RUN_GAP: Final = 64
"""Offsets read again at most this far apart are read in one run (the records between them are
decoded for nothing: cheaper than a read each, which decodes the record's whole batch)."""
_RUN_COUNT: Final = 1024
"""The most records of one run's read."""
_BORN_SPAN_BITS: Final = 30
"""Put-backs born within 2^30 ms (12 days) of each other share a batch (an i32 born delta)."""


class TimerRead(NamedTuple):
    """One read of the timer queue: ``(queue offset, held record or None when it cannot be
    read)`` in queue order, where to read next, and whether the read found anything."""

    records: list[tuple[int, Held | None]]
    next_offset: int
    found: bool


def read_queue(store: MessageStore, offset: int, max_count: int) -> TimerRead:
    """Up to ``max_count`` records of the timer queue from ``offset`` (see :class:`TimerRead`);
    a batch whose CRC fails gives None for each of its records (logged)."""
    result = store.get_batches(TIMER_TOPIC, TIMER_QUEUE_ID, offset, max_count=max_count)
    end = result.next_begin_offset
    records: list[tuple[int, Held | None]] = []
    data = result.data
    position = 0
    for _ in range(result.batch_count):
        total, _ = read_total_length(data, position)
        view = RecordBatch(data, position)
        position += total
        base = view.base_queue_offset
        first, last = max(offset - base, 0), min(end - base, view.count)
        if not view.crc_ok():
            _log.error("timer: a held batch fails its CRC: queue_offset=%d", base)
            records += [(base + index, None) for index in range(first, last)]
            continue
        records += _held_records(view, first, last)
    return TimerRead(records, end, result.status is GetMessageStatus.FOUND)


def read_offsets(store: MessageStore, offsets: Sequence[int]) -> dict[int, Held | None]:
    """The records of the timer queue at ``offsets`` (ascending), by offset (None: it cannot be
    read; absent: gone from the store), read in runs of nearby offsets: a read of one record
    decodes its whole batch (a batch of 200 cost about 700 us a record read one by one, 16 us
    in runs)."""
    found: dict[int, Held | None] = {}
    at = 0
    while at < len(offsets):
        first = offsets[at]
        end = at + 1
        while (
            end < len(offsets)
            and offsets[end] - offsets[end - 1] <= _RUN_GAP
            and offsets[end] - first < _RUN_COUNT
        ):
            end += 1
        last = offsets[end - 1]
        wanted = set(offsets[at:end])
        offset = first
        while offset <= last:
            read = read_queue(store, offset, last + 1 - offset)
            found.update(
                (at_offset, held) for at_offset, held in read.records if at_offset in wanted
            )
            if read.next_offset <= offset:
                break  # nothing more there (retention, or past the end)
            offset = read.next_offset
        at = end
    return found


def _held_records(view: RecordBatch, first: int, last: int) -> list[tuple[int, Held | None]]:
    data, body_ends, tag_ends, property_ends, start = batch_records(view)
    flags = view.flags.tolist()
    deltas = view.born_deltas_ms.tolist()
    base = view.base_queue_offset
    born, host = view.base_born_timestamp_ms, bytes(view.born_host)
    reconsume, attributes = view.reconsume_times, view.attributes & ~TIMER_FLAG
    found: list[tuple[int, Held | None]] = []
    for index in range(first, last):
        body_start = body_ends[index - 1] if index else start
        tag_start = tag_ends[index - 1] if index else body_ends[-1]
        property_start = property_ends[index - 1] if index else tag_ends[-1]
        parts = read_held(data[property_start : property_ends[index]])
        if parts is None:
            found.append((base + index, None))
            continue
        properties, due_ms, topic, queue_id = parts
        tag_end = tag_ends[index]
        held = Held(
            topic,
            queue_id,
            due_ms,
            data[body_start : body_ends[index]],
            data[tag_start:tag_end].decode() if tag_end > tag_start else None,
            properties,
            flags[index],
            born + deltas[index],
            host,
            reconsume,
            attributes,
        )
        found.append((base + index, held))
    return found


def put_back(store: MessageStore, records: Sequence[Held]) -> PutMessageResult:
    """Put ``records`` (of one real queue, reconsume times, born host and attributes, born
    within 2^30 ms) back to their queue as one batch, each with ``TIMER_OUT_MS``."""
    first = records[0]
    born = min(held.born_ms for held in records)
    batch = encode_batch(
        first.topic.encode(),
        [held.body for held in records],
        [held.tag for held in records],
        [delivered_properties(held.properties, held.due_ms) for held in records],
        flags=[held.flag for held in records],
        born_timestamp_ms=born,
        born_deltas_ms=[held.born_ms - born for held in records],
        born_host=first.born_host,
        reconsume_times=first.reconsume_times,
        attributes=first.attributes,
    )
    return store.put_batch(batch, first.topic, first.queue_id)


def batch_key(held: Held) -> tuple[str, int, int, bytes, int, int]:
    """What put-backs of one batch share (see :func:`put_back`)."""
    return (
        held.topic,
        held.queue_id,
        held.reconsume_times,
        held.born_host,
        held.attributes,
        held.born_ms >> _BORN_SPAN_BITS,
    )
