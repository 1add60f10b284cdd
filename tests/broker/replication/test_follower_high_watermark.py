"""When a follower applies the leader's high watermark to its store: at most every
``follower_hw_interval_ms`` while APPENDs keep coming, at once after a cycle that took none,
and before it stops following. The fetcher alone, frames handed to it as the agent hands them,
the log in memory and the clock given (the data path over a real driver:
``test_data_path.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.replication import EpochFile, MemberInfo
from aeromq.broker.replication.fetcher import FetcherPhase, ReplicaFetcher
from aeromq.broker.replication.frame_codec import AppendFrame, HeartbeatFrame
from aeromq.broker.replication.replicator import ReplicationSettings
from tests.broker.replication._memory_log import MemoryLog

EPOCH = 1
MS = 1_000_000
LEADER = MemberInfo(0, 1, "127.0.0.1:1", "aeron:ipc", 1, "", 0, "127.0.0.1:2", "", "h")


class _Follower:
    """A fetcher streaming from the leader of :data:`EPOCH` into a log in memory."""

    def __init__(self, data_dir: Path, interval_ms: int) -> None:
        self.log = MemoryLog()
        self.fetcher = ReplicaFetcher(
            None,  # type: ignore[arg-type]  # no publication is taken: no driver needed
            self.log,
            EpochFile(data_dir),
            group="g",
            member_id=1,
            leader=LEADER,
            epoch=EPOCH,
            settings=ReplicationSettings(follower_hw_interval_ms=interval_ms),
        )
        self.fetcher.phase = FetcherPhase.FETCHING  # (the handshake found nothing to truncate)

    def append(self, payload: bytes, high_watermark: int, now_ns: int) -> int:
        """A cycle that took one APPEND carrying ``high_watermark``; whether it applied one."""
        frame = AppendFrame(
            EPOCH,
            0,
            self.log.max_physical_offset,
            high_watermark,
            memoryview(payload),
            leader_epoch=EPOCH,
        )
        self.fetcher.on_append(frame, now_ns)
        return self.fetcher.apply_high_watermark(now_ns)

    def heartbeat(self, high_watermark: int, now_ns: int) -> int:
        """A cycle that took only a HEARTBEAT; whether it applied a high watermark."""
        frame = HeartbeatFrame(EPOCH, self.log.max_physical_offset, high_watermark)
        self.fetcher.on_heartbeat(frame, now_ns)
        return self.fetcher.apply_high_watermark(now_ns)


@pytest.fixture
def follower(tmp_path: Path) -> Iterator[_Follower]:
    made = _Follower(tmp_path, interval_ms=20)
    yield made
    made.fetcher.close()


def test_should_apply_the_high_watermark_at_most_every_interval_while_appends_come(
    follower: _Follower,
) -> None:
    start = 1_000 * MS
    assert follower.append(b"a" * 100, 0, start) == 0  # nothing committed yet
    assert follower.append(b"b" * 100, 100, start + 1 * MS) == 1  # the first one at once
    assert follower.log.committed_offset == 100

    assert follower.append(b"c" * 100, 200, start + 5 * MS) == 0
    assert follower.append(b"d" * 100, 300, start + 20 * MS) == 0  # 19 ms since the last
    assert follower.log.committed_offset == 100

    assert follower.append(b"e" * 100, 400, start + 21 * MS) == 1
    assert follower.log.committed_offset == 400  # the highest the frames carried


def test_should_apply_what_is_due_at_once_after_a_cycle_without_an_append(
    follower: _Follower,
) -> None:
    start = 1_000 * MS
    follower.append(b"a" * 100, 0, start)
    follower.append(b"b" * 100, 100, start + 1 * MS)
    assert follower.append(b"c" * 100, 200, start + 2 * MS) == 0  # the stream goes on

    assert follower.heartbeat(300, start + 3 * MS) == 1  # the stream stopped: no wait

    assert follower.log.committed_offset == 300


def test_should_apply_what_is_due_before_it_stops_following(tmp_path: Path) -> None:
    follower = _Follower(tmp_path, interval_ms=20)
    start = 1_000 * MS
    follower.append(b"a" * 100, 100, start)
    assert follower.append(b"b" * 100, 200, start + 1 * MS) == 0

    follower.fetcher.close()  # as when this member is elected: it leads from what it applied

    assert follower.log.committed_offset == 200


def test_should_apply_after_every_cycle_with_no_interval(tmp_path: Path) -> None:
    follower = _Follower(tmp_path, interval_ms=0)
    start = 1_000 * MS
    try:
        for i in range(1, 5):
            assert follower.append(b"x" * 100, 100 * i, start + i * 1_000) == 1
            assert follower.log.committed_offset == 100 * i
    finally:
        follower.fetcher.close()
