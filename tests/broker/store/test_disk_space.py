"""The store's free-space watermark: refusals, the statvfs cache, a segment's raised bar."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.store import _disk_space
from aeromq.broker.store._disk_space import DiskSpaceGuard

MIB = 1 << 20


class _FakeFs:
    """statvfs of a file system with ``free`` bytes of 4 KiB blocks out of 100 MiB; counts reads."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.reads = 0

    def statvfs(self, _path: Any) -> os.statvfs_result:
        self.reads += 1
        blocks = 100 * MIB // 4096
        return os.statvfs_result((4096, 4096, blocks, self.free // 4096, self.free // 4096,
                                  0, 0, 0, 0, 255))  # fmt: skip


@pytest.fixture
def fs(monkeypatch: pytest.MonkeyPatch) -> _FakeFs:
    fake = _FakeFs(free=50 * MIB)
    monkeypatch.setattr(_disk_space.os, "statvfs", fake.statvfs)
    return fake


def _guard(tmp_path: Path, now: list[int], **kwargs: Any) -> DiskSpaceGuard:
    values: dict[str, Any] = {"min_free_bytes": 10 * MIB, "max_used_percent": None}
    values.update(kwargs)
    return DiskSpaceGuard(tmp_path, check_interval_ms=100, clock_ns=lambda: now[0], **values)


def test_should_refuse_below_the_watermark_and_take_sends_again_when_space_returns(
    tmp_path: Path, fs: _FakeFs
) -> None:
    now = [0]
    guard = _guard(tmp_path, now)
    assert guard.has_room(MIB)
    fs.free = 10 * MIB  # 10 MiB free: a 1 MiB put would leave 9, under the 10 MiB watermark
    now[0] += 100_000_000
    assert not guard.has_room(MIB)
    assert guard.refusing
    assert "free_bytes=10485760 needed_bytes=11534336" in guard.describe()
    fs.free = 40 * MIB
    now[0] += 100_000_000
    assert guard.has_room(MIB) and not guard.refusing


def test_should_read_the_file_system_at_most_once_per_interval_and_count_puts_between(
    tmp_path: Path, fs: _FakeFs
) -> None:
    now = [0]
    guard = _guard(tmp_path, now)
    puts = sum(guard.has_room(MIB) for _ in range(100))  # 50 MiB free, 10 MiB kept
    assert (puts, fs.reads) == (40, 1)  # the puts since the read count against the free space
    now[0] += 100_000_000
    assert guard.has_room(MIB) and fs.reads == 2


def test_should_refuse_past_the_used_percentage(tmp_path: Path, fs: _FakeFs) -> None:
    guard = _guard(tmp_path, [0], min_free_bytes=0, max_used_percent=40)
    assert not guard.has_room(MIB)  # 50 of 100 MiB used
    fs.free = 70 * MIB
    guard.refresh()
    assert guard.has_room(MIB)


def test_should_wait_for_a_refused_segments_size_before_trying_again(
    tmp_path: Path, fs: _FakeFs
) -> None:
    now = [0]
    guard = _guard(tmp_path, now)
    guard.refused(needed_bytes=64 * MIB, free_bytes=50 * MIB)
    assert not guard.has_room(MIB)  # 50 MiB free: the watermark passes, the segment would not
    fs.free = 70 * MIB
    now[0] += 100_000_000
    assert guard.has_room(MIB)
