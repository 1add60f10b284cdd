from __future__ import annotations

import struct
from pathlib import Path

import pytest

from aeromq.broker import NoSpaceError, StoreIOError
from aeromq.broker.store import _index_file as layout
from aeromq.broker.store import _index_service
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
    service.flush()
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
