from __future__ import annotations

import bisect
import struct
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.broker.store._consume_queue import (
    ENTRY_DTYPE,
    ENTRY_LENGTH,
    PHYSICAL_OFFSET_OFFSET,
    SIZE_OFFSET,
    TAG_HASH_OFFSET,
    ConsumeQueue,
)


def _queue(directory: Path, per_file: int = 4) -> ConsumeQueue:
    queue = ConsumeQueue("T", 0, directory, per_file)
    queue.load()
    return queue


def _fill(queue: ConsumeQueue, count: int, size: int = 100) -> None:
    start = queue.max_offset
    physical = [(start + i) * 1000 for i in range(count)]
    queue.put(start, physical, [size] * count, [(start + i) % 3 for i in range(count)])


def test_should_document_the_twenty_byte_entry() -> None:
    assert (PHYSICAL_OFFSET_OFFSET, SIZE_OFFSET, TAG_HASH_OFFSET, ENTRY_LENGTH) == (0, 8, 12, 20)
    assert ENTRY_DTYPE.itemsize == ENTRY_LENGTH
    raw = np.array([(1 << 40, 77, -5)], dtype=ENTRY_DTYPE).tobytes()
    assert struct.unpack("<qiq", raw) == (1 << 40, 77, -5)


def test_should_write_entries_across_files_and_read_them_back(tmp_path: Path) -> None:
    queue = _queue(tmp_path)
    _fill(queue, 1)
    _fill(queue, 9)
    assert queue.max_offset == 10 and queue.min_offset == 0
    assert [f.start_offset for f in queue.files.files] == [0, 80, 160]
    assert queue.entry(5) == (5000, 100, 2)
    assert queue.entry(10) is None
    window = queue.entries(2, 10)  # stops at the end of the file
    assert window["offset"].tolist() == [2000, 3000]
    assert len(queue.entries(10, 5)) == 0 and len(queue.entries(-1, 5)) == 0
    queue.close()
    again = _queue(tmp_path)
    assert again.max_offset == 10 and again.entry(9) == (9000, 100, 0)
    again.close()


def test_should_make_room_for_a_batch_that_spans_more_than_two_files(tmp_path: Path) -> None:
    queue = _queue(tmp_path)  # four entries a file
    _fill(queue, 2)
    queue.ensure_room(2, 11)  # offsets 2 to 12: files 0, 80, 160 and 240, each in its turn
    assert [f.start_offset for f in queue.files.files] == [0, 80, 160, 240]
    queue.put_batch(2, 5_000, 900, list(range(11)))
    assert queue.max_offset == 13 and queue.entry(12) == (5_000, 900, 10)
    queue.close()


def test_should_stop_at_the_first_unwritten_entry_on_load(tmp_path: Path) -> None:
    queue = _queue(tmp_path)
    _fill(queue, 7)
    mapped = queue.files.files[1]
    mapped.mm[1 * ENTRY_LENGTH : 2 * ENTRY_LENGTH] = bytes(ENTRY_LENGTH)  # entry 5 torn
    queue.close()
    again = _queue(tmp_path)
    assert again.max_offset == 5
    assert again.entry(6) is None
    assert not any(again.files.files[1].mm[ENTRY_LENGTH:])  # 6 was zeroed too
    again.close()


def test_should_drop_entries_past_the_commit_log_end(tmp_path: Path) -> None:
    queue = _queue(tmp_path)
    _fill(queue, 10)  # entry i at i * 1000, 100 bytes
    queue.truncate_physical(6100)  # entry 6 ends at 6100: kept
    assert queue.max_offset == 7
    queue.truncate_physical(6099)
    assert queue.max_offset == 6
    assert [f.start_offset for f in queue.files.files] == [0, 80]
    queue.truncate_physical(0)
    assert queue.max_offset == 0
    queue.close()


def test_should_move_the_min_offset_with_retention(tmp_path: Path) -> None:
    queue = _queue(tmp_path)
    _fill(queue, 10)
    assert queue.delete_expired(4500) == 1  # file [0, 4) all before 4500
    assert queue.min_offset == 5
    assert [f.start_offset for f in queue.files.files] == [80, 160]
    assert queue.entries(3, 5).size == 0
    assert queue.delete_expired(100_000) == 1  # never the last file
    assert queue.min_offset == 10 == queue.max_offset
    queue.close()


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(st.integers(0, 3), min_size=1, max_size=60),
    removed=st.integers(0, 10),
    probe=st.integers(-2, 200),
)
def test_should_find_offsets_by_store_time_as_a_linear_scan_would(
    tmp_path_factory: object, steps: list[int], removed: int, probe: int
) -> None:
    directory = tmp_path_factory.mktemp("cq")  # type: ignore[attr-defined]
    stamps = []
    now = 0
    for step in steps:
        now += step
        stamps.append(now)
    queue = ConsumeQueue("T", 0, directory, 7)
    queue.load()
    queue.put(0, [i * 10 for i in range(len(stamps))], [10] * len(stamps), [0] * len(stamps))
    queue.min_offset = min(removed, len(stamps))

    def stamp_of(physical: int) -> int:
        return stamps[physical // 10]

    live = stamps[queue.min_offset :]
    lower = queue.min_offset + bisect.bisect_left(live, probe)
    upper = max(queue.min_offset, queue.min_offset + bisect.bisect_right(live, probe) - 1)
    assert queue.offset_by_time(probe, False, stamp_of) == lower
    assert queue.offset_by_time(probe, True, stamp_of) == upper
    queue.close()


def test_should_write_a_batchs_entries_in_bulk_across_files(tmp_path: Path) -> None:
    queue = _queue(tmp_path)  # 4 entries a file
    _fill(queue, 3)
    tags = np.array([11, 0, -7, 11, 5, 0], dtype=np.int64)
    queue.put_batch(3, 70_000, 640, tags)
    assert queue.max_offset == 9 and len(queue.files.files) == 3
    assert [queue.entry(offset) for offset in range(3, 9)] == [
        (70_000, 640, tag) for tag in tags.tolist()
    ]
    assert queue.entry(2) == (2000, 100, 2)  # the entry before is untouched
    queue.put_batch(9, 71_000, 90, np.array([3], dtype=np.int64))
    assert queue.max_offset == 10 and queue.entry(9) == (71_000, 90, 3)
    queue.close()
    again = _queue(tmp_path)
    assert again.max_offset == 10 and again.entry(5) == (70_000, 640, -7)
