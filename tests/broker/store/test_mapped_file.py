from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from aeromq.broker import NoSpaceError, StoreError, StoreIOError
from aeromq.broker.store._mapped_file import MappedFile, file_name_for
from aeromq.broker.store._mapped_file_queue import MappedFileQueue
from tests.system._tmpfs import small_tmpfs


def test_should_name_files_by_their_start_offset_in_twenty_digits() -> None:
    assert file_name_for(0) == "0" * 20
    assert file_name_for(1 << 30) == "00000000001073741824"


def test_should_create_a_zero_filled_file_of_the_full_length(tmp_path: Path) -> None:
    mapped = MappedFile.create(tmp_path, 4096, 8192)
    try:
        assert mapped.path == tmp_path / file_name_for(4096)
        assert mapped.path.stat().st_size == 8192
        assert mapped.end_offset == 4096 + 8192
        assert not any(mapped.mm[:])
    finally:
        mapped.close()


def test_should_refuse_a_file_of_the_wrong_length(tmp_path: Path) -> None:
    path = tmp_path / file_name_for(0)
    path.write_bytes(b"x" * 100)
    with pytest.raises(StoreIOError, match=r"wrong length.*length=100 expected=4096"):
        MappedFile.open(path, 4096)


def test_should_zero_the_tail_up_to_the_last_written_byte(tmp_path: Path) -> None:
    mapped = MappedFile.create(tmp_path, 0, 1 << 20)
    try:
        mapped.mm[100:200] = b"\x01" * 100
        mapped.mm[500_000:500_010] = b"\x02" * 10
        assert mapped.zero_tail(150) == 500_010 - 150
        assert mapped.mm[100:150] == b"\x01" * 50
        assert not any(mapped.mm[150:])
        assert mapped.zero_tail(0) == 150  # [0, 150) rewritten, from 0 to the last 1
        assert mapped.zero_tail(0) == 0
    finally:
        mapped.close()


def test_should_write_pieces_back_to_back_where_the_map_shows_them(tmp_path: Path) -> None:
    mapped = MappedFile.create(tmp_path, 0, 3 * 4096)
    try:
        mapped.write_at(4090, (b"abc", memoryview(b"--defgh--")[2:7], bytearray(b"ij")))
        assert mapped.mm[4090:4100] == b"abcdefghij"  # across a page boundary
        assert not any(mapped.mm[:4090]) and not any(mapped.mm[4100:])
        with mapped.path.open("rb") as file:
            assert os.pread(file.fileno(), 10, 4090) == b"abcdefghij"
    finally:
        mapped.close()


def test_should_go_on_after_a_short_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_pwritev = os.pwritev

    def at_most_three_bytes(fd: int, buffers: list[memoryview], offset: int) -> int:
        first = buffers[0][:3]
        return real_pwritev(fd, [first], offset)

    mapped = MappedFile.create(tmp_path, 0, 4096)
    try:
        monkeypatch.setattr(os, "pwritev", at_most_three_bytes)
        mapped.write_at(10, (b"abcde", b"fghijklm"))
        assert mapped.mm[10:23] == b"abcdefghijklm"
    finally:
        mapped.close()


def test_should_refuse_a_write_outside_the_file(tmp_path: Path) -> None:
    mapped = MappedFile.create(tmp_path, 0, 4096)
    try:
        with pytest.raises(StoreIOError, match=r"outside.*position=4090 length=8 size=4096"):
            mapped.write_at(4090, (b"12345678",))
        assert not any(mapped.mm[:])
    finally:
        mapped.close()


def test_should_keep_data_in_the_file_after_close_and_reopen(tmp_path: Path) -> None:
    mapped = MappedFile.create(tmp_path, 0, 4096)
    mapped.mm[0:5] = b"hello"
    mapped.flush()
    mapped.close()
    mapped.close()  # idempotent
    again = MappedFile.open(tmp_path / file_name_for(0), 4096)
    try:
        assert again.mm[0:5] == b"hello"
    finally:
        again.close()


def test_should_load_contiguous_files_and_find_offsets(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path / "q", 4096)
    queue.load()
    assert queue.first is None and queue.find(0) is None and queue.min_offset == -1
    for start in (8192, 12288, 16384):
        queue.create(start)
    assert [f.start_offset for f in queue.files_between(9000, 12289)] == [8192, 12288]
    assert queue.files_between(5, 5) == []
    found = queue.find(13000)
    assert found is not None and found.start_offset == 12288
    assert queue.find(8191) is None and queue.find(20480) is None
    (tmp_path / "q" / "not-a-segment.tmp").write_bytes(b"x")
    queue.close()
    again = MappedFileQueue(tmp_path / "q", 4096)
    again.load()
    assert [f.start_offset for f in again.files] == [8192, 12288, 16384]
    assert again.total_bytes() == 3 * 4096
    again.close()


def test_should_refuse_gaps_and_misaligned_files(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, 4096)
    queue.load()
    queue.create(0)
    with pytest.raises(StoreError, match="not be contiguous"):
        queue.create(8192)
    queue.close()
    (tmp_path / file_name_for(8192)).write_bytes(bytes(4096))
    with pytest.raises(StoreError, match=r"not contiguous.*expected_start_offset=4096"):
        MappedFileQueue(tmp_path, 4096).load()


def test_should_truncate_from_an_offset_and_delete_from_the_front(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path, 4096)
    queue.load()
    for start in (0, 4096, 8192):
        queue.create(start).mm[:] = b"\x07" * 4096
    assert queue.truncate(5000) == (4096 - 904) + 4096
    assert [f.start_offset for f in queue.files] == [0, 4096]
    assert queue.files[1].mm[903] == 7 and not any(queue.files[1].mm[904:])
    assert not (tmp_path / file_name_for(8192)).exists()
    assert queue.delete_front(lambda f: True, max_files=10) == 1  # never the last
    assert [f.start_offset for f in queue.files] == [4096]
    assert not (tmp_path / file_name_for(0)).exists()
    queue.delete_all()
    assert not any(tmp_path.iterdir())


def test_should_allocate_a_new_file_for_real_and_refuse_one_the_disk_cannot_hold(
    tmp_path: Path,
) -> None:
    with small_tmpfs(tmp_path / "disk", 8) as disk:
        mapped = MappedFile.create(disk, 0, 4 << 20)
        try:
            assert os.stat(mapped.path).st_blocks * 512 >= 4 << 20  # blocks, not a sparse file
            assert stat.S_IMODE(os.stat(mapped.path).st_mode) == 0o600
            with pytest.raises(NoSpaceError) as refused:
                MappedFile.create(disk, 4 << 20, 8 << 20)
            assert refused.value.values["needed_bytes"] == 8 << 20
            assert refused.value.values["free_bytes"] < 8 << 20
            assert sorted(p.name for p in disk.iterdir()) == [mapped.path.name]  # none half-made
        finally:
            mapped.close()
