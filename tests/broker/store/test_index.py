from __future__ import annotations

import struct
from pathlib import Path

import pytest

from aeromq.broker import NoSpaceError, StoreIOError
from aeromq.broker.store import _index_file as layout
from aeromq.broker.store import _index_service
from aeromq.broker.store._checkpoint import IndexMark
from aeromq.broker.store._index_file import IndexFile, index_file_length, key_hash
from aeromq.broker.store._index_service import IndexService


def test_should_document_the_header_slot_and_entry_layouts() -> None:
    assert [
        layout.BEGIN_TIMESTAMP_OFFSET,
        layout.END_TIMESTAMP_OFFSET,
        layout.BEGIN_PHYSICAL_OFFSET_OFFSET,
        layout.END_PHYSICAL_OFFSET_OFFSET,
        layout.SLOT_COUNT_OFFSET,
        layout.ENTRIES_USED_OFFSET,
        layout.HEADER_LENGTH,
    ] == [0, 8, 16, 24, 32, 36, 40]
    assert [
        layout.ENTRY_KEY_HASH_OFFSET,
        layout.ENTRY_PHYSICAL_OFFSET_OFFSET,
        layout.ENTRY_TIME_DIFF_OFFSET,
        layout.ENTRY_PREVIOUS_OFFSET,
        layout.ENTRY_LENGTH,
    ] == [0, 4, 12, 16, 20]
    assert layout.SLOT_LENGTH == 4
    assert index_file_length(10, 5) == 40 + 40 + 100


def test_should_write_entry_header_and_slot_where_documented(tmp_path: Path) -> None:
    index_file = IndexFile.create(tmp_path, 5000, 1_000_000, slot_count=7, entry_count=4)
    h = key_hash("T", "k")
    assert index_file.put(h, 5000, 1_003_500)
    mm = index_file.mapped.mm
    assert struct.unpack_from("<qqqqii", mm, 0) == (1_000_000, 1_003_500, 5000, 5000, 7, 2)
    slot = struct.unpack_from("<i", mm, 40 + (h % 7) * 4)[0]
    assert slot == 1
    entry = struct.unpack_from("<iqii", mm, 40 + 7 * 4 + 1 * 20)
    assert entry == (h, 5000, 3, 0)
    index_file.close()


def test_should_chain_collisions_newest_first_and_fill_up(tmp_path: Path) -> None:
    index_file = IndexFile.create(tmp_path, 0, 0, slot_count=1, entry_count=4)
    assert index_file.put(11, 100, 0)
    assert index_file.put(22, 200, 1000)
    assert index_file.put(11, 300, 2000)
    assert not index_file.put(11, 400, 3000)  # entry 0 is never used: 3 fit
    assert index_file.is_full
    found: list[int] = []
    index_file.lookup(11, 0, 10_000, 10, found)
    assert found == [300, 100]
    found = []
    index_file.lookup(11, 1500, 10_000, 10, found)
    assert found == [300]
    index_file.close()


def test_should_roll_files_query_across_them_and_reload(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slot_count=5, entry_count=3)
    service.load()
    assert service.end_physical_offset == -1
    for i in range(5):
        service.put("T", [f"k{i % 2}", "all"], i * 100, 1000 + i)
    for written in (False, True):  # queued, then in the files
        assert len(service.files) == (5 if written else 0)  # two entries a file
        assert service.query("T", "k0", 10, 0, 10_000) == [400, 200, 0]
        assert service.query("T", "all", 2, 0, 10_000)[:2] == [400, 300]
        assert service.query("U", "k0", 10, 0, 10_000) == []
        assert service.end_physical_offset == 400
        if not written:
            assert service.query("T", "k0", 10, 1001, 1003) == [200]  # by the exact time
            assert service.drain() == 5
    assert service.flush(dispatched_offset=500) == IndexMark(400, 3, 400, 500)  # the newest file
    service.close()
    again = IndexService(tmp_path, slot_count=5, entry_count=3)
    again.load()
    assert again.query("T", "k1", 10, 0, 10_000) == [300, 100]
    assert again.delete_expired(250) == 3  # the files of 0, 100 and 200
    assert again.query("T", "k1", 10, 0, 10_000) == [300]
    again.close()


def test_should_count_report_and_drop_an_entry_whose_file_cannot_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = IndexService(tmp_path, slot_count=5, entry_count=3)
    service.load()
    seen: list[StoreIOError] = []
    service.on_error = seen.append

    def full(*_: object, **__: object) -> IndexFile:
        raise NoSpaceError("no room for a store file", path="x", needed_bytes=10, free_bytes=0)

    monkeypatch.setattr(IndexFile, "create", full)
    service.put("T", ["k"], 100, 1000)
    assert service.query("T", "k", 10, 0, 10_000) == [100]  # queued
    assert service.drain() == 1
    assert service.errors == 1 and isinstance(seen[0], NoSpaceError)
    assert not service.pending and service.query("T", "k", 10, 0, 10_000) == []
    service.close()


def test_should_write_the_oldest_entries_as_it_puts_past_the_queue_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_index_service, "MAX_PENDING", 4)
    service = IndexService(tmp_path, slot_count=5, entry_count=64)
    service.load()
    for i in range(10):
        service.put("T", [f"k{i}"], i * 100, 1000 + i)
        assert len(service.pending) <= 4
    assert service.files and service.files[-1].entries_used == 1 + 10 - len(service.pending)
    for i in range(10):
        assert service.query("T", f"k{i}", 10, 0, 10_000) == [i * 100]
    service.close()


def test_should_rewind_to_a_mark_deleting_later_files_and_rebuilding_the_slots(
    tmp_path: Path,
) -> None:
    service = IndexService(tmp_path, slot_count=7, entry_count=9)
    service.load()
    for i in range(5):  # 10 entries: the first file full (8), two in the second
        service.put("T", [f"k{i % 3}", f"u{i}"], i * 100, 1000 + i)
    mark = service.flush(dispatched_offset=450)
    assert mark == IndexMark(400, 3, 400, 450)
    for i in range(5, 9):  # after the mark: the second file filled, a third made
        service.put("T", [f"k{i % 3}", f"u{i}"], i * 100, 1000 + i)
    service.drain()
    assert [f.begin_physical_offset for f in service.files] == [0, 400, 800]
    second = service.files[1]
    slots_at = layout.HEADER_LENGTH
    for slot in range(7):  # what a crash of the machine may leave: slots past the entries
        struct.pack_into("<i", second.mapped.mm, slots_at + 4 * slot, 8)

    assert service.rewind(mark)
    assert [f.begin_physical_offset for f in service.files] == [0, 400]
    assert not (tmp_path / IndexFile.name_for(800)).exists()
    assert (second.entries_used, second.end_physical_offset) == (3, 400)
    slots = struct.unpack_from("<7i", second.mapped.mm, slots_at)
    assert all(0 <= number < 3 for number in slots)
    assert service.query("T", "k1", 10, 0, 10_000) == [400, 100]  # both files
    assert service.query("T", "u4", 10, 0, 10_000) == [400]
    assert service.query("T", "u5", 10, 0, 10_000) == []  # after the mark: indexed again later
    service.put("T", ["k2", "u5"], 500, 1005)  # as recovery does
    service.drain()
    assert service.query("T", "k2", 10, 0, 10_000) == [500, 200]
    assert service.end_physical_offset == 500
    service.close()


def test_should_not_rewind_when_the_marked_file_is_gone(tmp_path: Path) -> None:
    service = IndexService(tmp_path, slot_count=7, entry_count=9)
    service.load()
    service.put("T", ["k"], 100, 1000)
    service.drain()
    assert not service.rewind(IndexMark(50, 2, 60, 70))
    assert service.query("T", "k", 10, 0, 10_000) == [100]
    assert service.rewind(IndexMark(-1, 1, -1, 0))  # no file then: every file made since goes
    assert service.files == [] and service.query("T", "k", 10, 0, 10_000) == []
    service.close()


def test_should_drain_a_backlog_in_at_most_eight_chunks_and_a_few_entries_in_small_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    yields: list[float] = []
    monkeypatch.setattr(_index_service.time, "sleep", yields.append)
    service = IndexService(tmp_path, slot_count=4099, entry_count=8192)
    service.load()
    for i in range(100):
        service.put("T", [f"k{i}"], i * 100, 1000)
    assert service.drain() == 100
    assert len(yields) == 1  # chunks of DRAIN_CHUNK (64): the interpreter given up once
    yields.clear()
    backlog = 4000
    for i in range(backlog):
        service.put("T", [f"b{i}"], 10_000 + i * 100, 2000)
    assert service.drain() == backlog
    assert len(yields) <= 8  # n / 8 a chunk: 62 waits for the interpreter with 64 a chunk
    assert service.query("T", "b3999", 10, 0, 10_000) == [10_000 + 3999 * 100]
    service.close()
