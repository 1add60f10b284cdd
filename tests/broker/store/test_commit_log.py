from __future__ import annotations

from pathlib import Path

import pytest

from aeromq.broker import CorruptRecordError
from aeromq.broker.store import InboundMessage, PutMessageStatus
from aeromq.broker.store._batch_encoder import EncodedBatch
from aeromq.broker.store._commit_log import CommitLog
from aeromq.broker.store._message import pack_host
from aeromq.broker.store._record import BLANK_MAGIC, RecordCheck

HOST = pack_host("10.0.0.1:10911")


def _append(log: CommitLog, batch: EncodedBatch, messages: list[InboundMessage]) -> list[int]:
    status = batch.encode(
        messages, "T", b"T", 0, 0, log.max_offset, 1000, HOST, 4000, 4088, index_keys=True
    )
    assert status is PutMessageStatus.PUT_OK
    positions: list[int] = []
    log.append(batch, positions)
    return positions


@pytest.fixture
def log(tmp_path: Path) -> CommitLog:
    commit_log = CommitLog(tmp_path, 4096, HOST)
    commit_log.load()
    return commit_log


def test_should_append_and_read_back_by_physical_offset(log: CommitLog) -> None:
    batch = EncodedBatch(capacity=16)
    messages = [InboundMessage("T", 0, f"m{i}".encode(), {"TAGS": "a"}) for i in range(3)]
    positions = _append(log, batch, messages)
    assert positions[0] == 0 and log.max_offset == positions[2] + batch.sizes[2]
    for i, position in enumerate(positions):
        message = log.read(position, batch.sizes[i])
        assert message is not None
        assert (message.body, message.queue_offset, message.physical_offset) == (
            f"m{i}".encode(),
            i,
            position,
        )
        assert message.store_host == HOST
        assert log.store_timestamp(position) == 1000
    assert log.read(positions[1], batch.sizes[1] + 1) is None  # the size must match
    assert log.read(1 << 40, 100) is None
    assert log.read_checked(positions[2]).body == b"m2"


def test_should_roll_to_a_new_segment_behind_a_blank_record(log: CommitLog) -> None:
    batch = EncodedBatch()
    body = b"x" * 1000
    positions = []
    for _ in range(5):
        positions += _append(log, batch, [InboundMessage("T", 0, body)])
    size = batch.sizes[0]
    assert positions[:3] == [0, size, 2 * size]
    assert positions[4] == 4096 + size  # the fourth did not fit: it starts segment two
    moved = log.read(positions[3], size)  # encoded for the old segment, then moved
    assert moved is not None and moved.physical_offset == positions[3] == 4096
    assert [f.start_offset for f in log.files.files] == [0, 4096]
    assert log.check(3 * size) == (RecordCheck.BLANK, 4096 - 3 * size)
    first = log.files.files[0]
    assert int.from_bytes(first.mm[3 * size + 4 : 3 * size + 8], "little") == BLANK_MAGIC
    assert log.first_store_timestamp(log.files.files[1]) == 1000


def test_should_report_a_corrupt_record_with_its_offset(log: CommitLog) -> None:
    batch = EncodedBatch()
    positions = _append(log, batch, [InboundMessage("T", 0, b"a" * 50)] * 2)
    mapped = log.files.files[0]
    mapped.mm[positions[1] + 100] ^= 0x40
    assert log.read(positions[1], batch.sizes[1]) is None
    with pytest.raises(CorruptRecordError, match=f"physical_offset={positions[1]} check='BAD_CRC'"):
        log.read_checked(positions[1])
    with pytest.raises(CorruptRecordError, match="no record at this offset"):
        log.read_checked(log.max_offset)
    assert log.read(positions[0], batch.sizes[0]) is not None


def test_should_flush_and_truncate(log: CommitLog) -> None:
    batch = EncodedBatch()
    positions = _append(log, batch, [InboundMessage("T", 0, b"a" * 50)] * 3)
    end = log.max_offset
    assert log.flush() == end == log.flushed_offset
    dropped = log.truncate(positions[1])
    assert end - positions[1] - 4 < dropped <= end - positions[1]  # up to the last non-zero
    assert log.max_offset == positions[1] == log.flushed_offset
    assert log.check(positions[1]) == (RecordCheck.END, 0)
    log.close()


def test_should_keep_nothing_of_a_batch_with_a_field_out_of_range(log: CommitLog) -> None:
    batch = EncodedBatch()
    bad = InboundMessage("T", 0, b"x", flag=1 << 40)
    status = batch.encode(
        [InboundMessage("T", 0, b"ok"), bad], "T", b"T", 0, 0, 0, 1, HOST, 4000, 4088, True
    )
    assert status is PutMessageStatus.MESSAGE_ILLEGAL
    mixed = [InboundMessage("T", 0, b"ok"), InboundMessage("T", 1, b"other queue")]
    assert (
        batch.encode(mixed, "T", b"T", 0, 0, 0, 1, HOST, 4000, 4088, True)
        is PutMessageStatus.MESSAGE_ILLEGAL
    )
    huge = [InboundMessage("T", 0, b"x" * 4000)]
    assert (
        batch.encode(huge, "T", b"T", 0, 0, 0, 1, HOST, 4000, 4088, True)
        is PutMessageStatus.MESSAGE_ILLEGAL
    )
    props = [InboundMessage("T", 0, b"x", {"k": "v" * 40000})]
    assert (
        batch.encode(props, "T", b"T", 0, 0, 0, 1, HOST, 1 << 20, 1 << 20, True)
        is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    )
    assert log.max_offset == 0
