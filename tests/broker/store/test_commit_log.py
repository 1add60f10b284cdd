from __future__ import annotations

import struct
from pathlib import Path

import pytest

from aeromq.broker import CorruptRecordError, StoreError
from aeromq.broker.store._commit_log import (
    BLANK_MAGIC,
    MAP_COPY_MAX_LENGTH,
    OLD_RECORD_MAGIC,
    ZERO_AHEAD_BYTES,
    CommitLog,
    LogCheck,
    check_at,
)
from aeromq.broker.store._message import pack_host
from aeromq.common.record_batch import (
    BROKER_FIELDS_LENGTH,
    CRC_OFFSET,
    RecordBatch,
    encode_batch,
)

HOST = pack_host("10.0.0.1:10911")


def _batch(*bodies: bytes, tags: list[str | None] | None = None) -> bytearray:
    return encode_batch(b"T", list(bodies), tags)


def _append(log: CommitLog, batch: bytearray, queue_offset: int = 0, queue_id: int = 0) -> int:
    return log.append_batch(memoryview(batch), queue_offset, 1000, queue_id)


@pytest.fixture
def log(tmp_path: Path) -> CommitLog:
    commit_log = CommitLog(tmp_path, 4096, HOST)
    commit_log.load()
    return commit_log


def _stored(log: CommitLog, offset: int) -> RecordBatch:
    view = log.batch_at(offset)
    batch = RecordBatch(bytes(view))
    view.release()
    return batch


def test_should_write_a_small_batch_through_the_map_as_pwritev_writes_a_large_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    large = b"L" * (MAP_COPY_MAX_LENGTH + 1)
    batches = [_batch(b"s"), _batch(large), _batch(b"t", b"u")]
    segments = []
    for name, limit in (("map", MAP_COPY_MAX_LENGTH), ("pwritev", -1)):
        monkeypatch.setattr("aeromq.broker.store._commit_log.MAP_COPY_MAX_LENGTH", limit)
        commit_log = CommitLog(tmp_path / name, 64 << 10, HOST)
        commit_log.load()
        offsets = [
            _append(commit_log, b, queue_offset=i, queue_id=2) for i, b in enumerate(batches)
        ]
        assert offsets == [0, len(batches[0]), len(batches[0]) + len(batches[1])]
        segments.append(bytes(commit_log.files.files[0].mm))
        stored = [_stored(commit_log, o) for o in offsets]
        assert [b.body(b.count - 1) for b in stored] == [b"s", large, b"u"]
        assert [(b.base_queue_offset, b.queue_id) for b in stored] == [(0, 2), (1, 2), (2, 2)]
        assert all(b.crc_ok() for b in stored)
        commit_log.close()
    assert segments[0] == segments[1]


def test_should_store_the_batch_as_it_came_with_the_broker_fields_patched(
    log: CommitLog,
) -> None:
    first = _batch(b"a", b"bb", tags=["x", None])
    second = _batch(b"c" * 10)
    assert _append(log, first, queue_offset=7, queue_id=3) == 0
    assert _append(log, second, queue_offset=9, queue_id=3) == len(first)
    assert log.max_offset == len(first) + len(second)
    stored = bytes(log.files.files[0].mm[: len(first)])
    # only the broker fields differ; the CRC the producer wrote still holds
    assert stored[:8] == first[:8] and stored[CRC_OFFSET:] == first[CRC_OFFSET:]
    assert stored[8 : 8 + BROKER_FIELDS_LENGTH] != first[8 : 8 + BROKER_FIELDS_LENGTH]
    batch = _stored(log, 0)
    assert batch.crc_ok()
    assert (batch.base_queue_offset, batch.base_physical_offset, batch.queue_id) == (7, 0, 3)
    assert (batch.store_timestamp_ms, batch.store_host) == (1000, HOST)
    assert (batch.body(0), batch.body(1), batch.tag(0)) == (b"a", b"bb", "x")
    assert _stored(log, len(first)).base_physical_offset == len(first)
    assert log.store_timestamp(len(first)) == 1000
    assert bytes(first[8:CRC_OFFSET]) == bytes(BROKER_FIELDS_LENGTH)  # the caller's untouched


def test_should_roll_to_a_new_segment_behind_a_blank(log: CommitLog) -> None:
    batch = _batch(b"x" * 1000)
    size = len(batch)
    positions = [_append(log, batch, queue_offset=i) for i in range(5)]
    assert positions[:3] == [0, size, 2 * size]
    assert positions[3] == 4096 and positions[4] == 4096 + size  # the fourth did not fit
    assert _stored(log, 4096).base_physical_offset == 4096
    assert [f.start_offset for f in log.files.files] == [0, 4096]
    assert log.check(3 * size) == (LogCheck.BLANK, 4096 - 3 * size)
    first = log.files.files[0]
    assert struct.unpack_from("<iI", first.mm, 3 * size) == (4096 - 3 * size, BLANK_MAGIC)
    assert log.first_store_timestamp(log.files.files[1]) == 1000


def test_should_check_framing_crc_and_position(log: CommitLog) -> None:
    batch = _batch(b"a" * 50, b"b" * 50)
    at = _append(log, batch)
    end = _append(log, batch, queue_offset=2)
    mapped = log.files.files[0]
    assert log.check(at) == (LogCheck.OK, len(batch))
    assert check_at(mapped.view, at, mapped.size, at + 1) == (LogCheck.BAD_POSITION, 0)
    mapped.mm[end + len(batch) - 1] ^= 0x40  # under the CRC
    assert log.check(end) == (LogCheck.BAD_CRC, 0)
    with pytest.raises(CorruptRecordError, match=f"physical_offset={end} check='BAD_CRC'"):
        log.batch_at(end)
    with pytest.raises(CorruptRecordError, match="no batch at this offset"):
        log.batch_at(log.max_offset)
    assert log.check(log.max_offset) == (LogCheck.END, 0)
    struct.pack_into("<i", mapped.mm, at, 5000)  # a length past the segment
    assert log.check(at) == (LogCheck.BAD_SIZE, 0)
    struct.pack_into("<I", mapped.mm, at + 4, 0xDEADBEEF)
    assert log.check(at) == (LogCheck.BAD_MAGIC, 0)
    struct.pack_into("<iI", mapped.mm, at, 100, OLD_RECORD_MAGIC)
    assert log.check(at) == (LogCheck.OLD_FORMAT, 0)


def test_should_find_the_batch_holding_a_record_offset(log: CommitLog) -> None:
    sizes = []
    for count in (3, 1, 5, 2):
        batch = _batch(*[b"r" * 900] * count) if count == 1 else _batch(*[b"r"] * count)
        sizes.append(len(batch))
        _append(log, batch)
    starts = [0, sizes[0], sizes[0] + sizes[1], sizes[0] + sizes[1] + sizes[2]]
    assert log.find_batch(starts[2] + 4) == starts[2]
    assert log.find_batch(0) == 0 and log.find_batch(starts[1] - 1) == 0
    assert log.find_batch(starts[3] + sizes[3] - 1) == starts[3]
    assert log.find_batch(log.max_offset) == -1
    assert log.find_batch(1 << 40) == -1
    cached = log._batch_starts[0]
    assert cached == [*starts, log.max_offset]  # walked once, to the end
    assert log.find_batch(starts[1]) == starts[1] and log._batch_starts[0] is cached
    later = _append(log, _batch(b"late"))  # appended after the walk: found by walking on
    assert log.find_batch(later + 1) == later


def test_should_find_no_batch_inside_the_blank(log: CommitLog) -> None:
    big = _batch(b"x" * 3000)
    _append(log, big)
    second = _append(log, big)
    assert second == 4096
    assert log.find_batch(len(big) + 10) == -1  # in the blank filler
    assert log.find_batch(4096 + 3) == 4096


def test_should_flush_and_truncate(log: CommitLog) -> None:
    batch = _batch(b"a" * 50)
    positions = [_append(log, batch, queue_offset=i) for i in range(3)]
    end = log.max_offset
    assert log.find_batch(positions[2]) == positions[2]
    assert log.flush() == end == log.flushed_offset
    dropped = log.truncate(positions[1])
    assert end - positions[1] - 8 < dropped <= end - positions[1]  # up to the last non-zero
    assert log.max_offset == positions[1] == log.flushed_offset
    assert log.check(positions[1]) == (LogCheck.END, 0)
    assert log.find_batch(positions[2]) == -1  # the cache went with the tail
    log.close()


def test_should_write_zeros_ahead_of_the_end_only_when_near_and_never_over_batches(
    tmp_path: Path,
) -> None:
    commit_log = CommitLog(tmp_path, 4 * ZERO_AHEAD_BYTES, HOST)
    commit_log.load()
    assert commit_log.zero_ahead() is None  # no segment yet: the first append makes it
    batch = _batch(b"a" * 5000)
    first = _append(commit_log, batch)
    mapped = commit_log.files.last
    assert mapped is not None
    end = commit_log.max_offset
    marks = (end, end + ZERO_AHEAD_BYTES - 1, end + ZERO_AHEAD_BYTES)  # stand-ins for zeros
    for at in marks:
        mapped.mm[at] = 0xFF
    assert commit_log.zero_ahead() is mapped
    assert [mapped.mm[at] for at in marks] == [0, 0, 0xFF]  # the next MiB from the end on
    assert commit_log.zero_ahead() is None  # a MiB ahead: not yet
    while commit_log.max_offset + ZERO_AHEAD_BYTES // 2 < marks[2]:
        _append(commit_log, batch)
    assert commit_log.zero_ahead() is mapped  # within half a MiB of the zeros' end: the next
    assert mapped.mm[marks[2]] == 0
    assert _stored(commit_log, first).body(0) == b"a" * 5000
    commit_log.close()


def test_should_zero_ahead_within_the_last_segment_only(tmp_path: Path) -> None:
    commit_log = CommitLog(tmp_path, 4096, HOST)
    commit_log.load()
    first = _append(commit_log, _batch(b"a" * 100))
    mapped = commit_log.zero_ahead()
    assert mapped is not None and mapped.end_offset == 4096
    mapped.flush()
    assert commit_log.zero_ahead() is None  # the segment's end: nothing more to write
    assert commit_log.check(commit_log.max_offset) == (LogCheck.END, 0)
    second = _append(commit_log, _batch(b"b" * 100))  # over the zeros
    assert [_stored(commit_log, at).body(0) for at in (first, second)] == [b"a" * 100, b"b" * 100]
    commit_log.close()


def test_should_refuse_to_load_segments_of_the_old_format(tmp_path: Path) -> None:
    segment = tmp_path / f"{0:020d}"
    segment.write_bytes(struct.pack("<iI", 100, OLD_RECORD_MAGIC) + bytes(4088))
    log = CommitLog(tmp_path, 4096, HOST)
    with pytest.raises(StoreError, match="older format") as caught:
        log.load()
    assert f"path='{segment}'" in str(caught.value)
    assert "found_format='AQM1" in str(caught.value)
    assert "expected_format='AQB1" in str(caught.value)
    assert log.files.files == []
