from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker import StoreError
from aeromq.broker.store import (
    GetMessageStatus,
    InboundMessage,
    MessageStore,
    _index_service,
    _recovery,
)
from aeromq.broker.store._checkpoint import Checkpoint, IndexMark
from aeromq.broker.store._commit_log import OLD_RECORD_MAGIC, LogCheck
from aeromq.broker.store._index_file import IndexFile
from aeromq.common.record_batch import BATCH_MAGIC, RecordBatch, encode_batch, patch_batch

from .conftest import ManualClock, crash, small_config

QUIET = {"flush_consume_queue_interval_ms": 600_000, "clean_interval_ms": 600_000}


def _store(tmp_path: Path, clock: ManualClock) -> MessageStore:
    store = MessageStore(small_config(tmp_path, **QUIET), clock_ms=clock)
    store.start()
    return store


def _fill(store: MessageStore, count: int, queues: int = 2) -> None:
    for i in range(count):
        message = InboundMessage("TopicA", i % queues, f"m{i}".encode(), {"TAGS": f"t{i % 2}"})
        assert store.put_message(message).ok


def _bodies(store: MessageStore, queue_id: int) -> list[bytes]:
    result = store.get_messages("TopicA", queue_id, 0, max_count=1000)
    return [m.body for m in result.messages]


def _assert_queues_agree_with_log(store: MessageStore) -> None:
    for queue in store.queues:
        for offset in range(queue.min_offset, queue.max_offset):
            entry = queue.entry(offset)
            assert entry is not None
            view = store.commit_log.batch_at(entry[0])  # framing, CRC and position checked
            batch = RecordBatch(bytes(view))
            view.release()
            assert batch.length == entry[1]
            assert (batch.topic, batch.queue_id) == (queue.topic, queue.queue_id)
            assert batch.base_queue_offset <= offset < batch.base_queue_offset + batch.count
            assert int(batch.tag_hashes[offset - batch.base_queue_offset]) == entry[2]


def _batch(body: bytes, queue_offset: int, physical_offset: int, stamp_ms: int) -> bytearray:
    """A stored batch of one record, as the commit log would hold it."""
    data = encode_batch(b"TopicA", [body])
    patch_batch(data, 0, queue_offset, physical_offset, stamp_ms, bytes(8), 0)
    return data


def test_should_truncate_a_torn_tail_to_the_last_whole_record(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = _store(tmp_path, clock)
    _fill(store, 20)
    end = store.max_physical_offset
    segment = store.commit_log.files.find(end)
    assert segment is not None
    torn = _batch(b"never acknowledged", 10, end, clock.now_ms)
    at = end - segment.start_offset
    segment.mm[at : at + len(torn) - 7] = torn[:-7]  # the process died mid-write
    crash(store)

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None and not report.clean_shutdown
    assert report.end_offset == end and report.truncated_at == end
    assert report.truncated_check == LogCheck.BAD_CRC.name  # its last bytes were not written
    assert report.zeroed_bytes > 0
    assert not any(segment.path.read_bytes()[at:])
    assert _bodies(again, 0) == [f"m{i}".encode() for i in range(0, 20, 2)]
    result = again.put_message(InboundMessage("TopicA", 0, b"after"))
    assert (result.queue_offset, result.physical_offset) == (10, end)
    _assert_queues_agree_with_log(again)
    again.shutdown()


def test_should_rebuild_queue_entries_written_after_the_checkpoint(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = _store(tmp_path, clock)  # checkpoint at 0 from the start
    _fill(store, 30)
    crash(store)
    shutil.rmtree(tmp_path / "consumequeue")  # as if never flushed

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None
    assert (report.scanned_from, report.records_scanned) == (0, 30)
    assert report.records_redispatched == 30 and report.truncated_at is None
    assert _bodies(again, 1) == [f"m{i}".encode() for i in range(1, 30, 2)]
    _assert_queues_agree_with_log(again)
    again.shutdown()


def test_should_drop_queue_entries_past_the_end_of_the_log(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = _store(tmp_path, clock)
    _fill(store, 10)
    queue = store.queues.get("TopicA", 0)
    assert queue is not None
    queue.put(5, [store.max_physical_offset + 100], [120], [0])  # points past the log
    crash(store)

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None and report.queue_entries_dropped == 1
    assert again.get_max_offset("TopicA", 0) == 5
    assert again.get_messages("TopicA", 0, 5).status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    again.shutdown()


def test_should_not_revive_a_stale_record_left_past_the_end(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = _store(tmp_path, clock)
    _fill(store, 4)
    end = store.max_physical_offset
    segment = store.commit_log.files.find(end)
    assert segment is not None
    stale = _batch(b"old", 0, end + 4096, clock.now_ms)  # written for another place
    at = end - segment.start_offset
    segment.mm[at : at + len(stale)] = stale
    crash(store)

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None and report.truncated_check == LogCheck.BAD_POSITION.name
    assert again.get_max_offset("TopicA", 0) == 2
    again.shutdown()


def test_should_recover_from_the_start_without_a_checkpoint(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = _store(tmp_path, clock)
    _fill(store, 300)  # several segments, with blank records
    crash(store)
    (tmp_path / "checkpoint").unlink()
    shutil.rmtree(tmp_path / "consumequeue")
    shutil.rmtree(tmp_path / "index")

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None and report.records_scanned == 300
    assert len(again.commit_log.files.files) > 2
    assert _bodies(again, 0)[-1] == b"m298"
    assert len(_bodies(again, 0)) == 150
    _assert_queues_agree_with_log(again)
    again.shutdown()


def test_should_treat_a_corrupt_record_after_the_checkpoint_as_the_end(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = _store(tmp_path, clock)
    _fill(store, 10)
    sixth = store.get_messages("TopicA", 1, 2, max_count=1).messages[0]  # m5
    segment = store.commit_log.files.find(sixth.physical_offset)
    assert segment is not None
    at = sixth.physical_offset - segment.start_offset
    assert struct.unpack_from("<I", segment.mm, at + 4)[0] == BATCH_MAGIC
    body_at = at + RecordBatch(segment.view[at:]).data_start
    assert segment.mm[body_at : body_at + 2] == b"m5"
    segment.mm[body_at] ^= 0xFF  # the first byte of its body
    crash(store)

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None
    assert report.truncated_at == sixth.physical_offset
    assert report.truncated_check == LogCheck.BAD_CRC.name
    assert _bodies(again, 1) == [b"m1", b"m3"]
    assert _bodies(again, 0) == [b"m0", b"m2", b"m4"]
    _assert_queues_agree_with_log(again)
    again.shutdown()


def test_should_rebuild_every_entry_of_a_batch_and_index_its_keys(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = _store(tmp_path, clock)
    messages = [
        InboundMessage("TopicA", 0, f"b{i}".encode(), {"TAGS": f"t{i % 3}", "KEYS": f"key{i}"})
        for i in range(7)
    ]
    put = store.put_messages(messages)
    assert put.ok and put.message_count == 7
    crash(store)
    shutil.rmtree(tmp_path / "consumequeue")
    shutil.rmtree(tmp_path / "index")

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None and report.records_scanned == 7
    assert report.records_redispatched == 7
    assert _bodies(again, 0) == [f"b{i}".encode() for i in range(7)]
    _assert_queues_agree_with_log(again)
    (found,) = again.query_messages_by_key("TopicA", "key5")
    assert (found.body, found.physical_offset) == (b"b5", put.physical_offset + 5)
    again.shutdown()


def test_should_refuse_to_start_on_a_log_of_the_old_format(
    tmp_path: Path, clock: ManualClock
) -> None:
    segment = tmp_path / "commitlog" / f"{0:020d}"
    segment.parent.mkdir(parents=True)
    old = struct.pack("<iI", 120, OLD_RECORD_MAGIC) + bytes(112)  # an "AQM1" record's start
    segment.write_bytes(old + bytes(16 * 1024 - len(old)))
    store = MessageStore(small_config(tmp_path, **QUIET), clock_ms=clock)
    with pytest.raises(StoreError, match="older format") as caught:
        store.start()
    assert f"path='{segment}'" in str(caught.value)
    assert "AQM1" in str(caught.value) and "AQB1" in str(caught.value)
    assert segment.read_bytes()[: len(old)] == old  # nothing truncated
    assert segment.stat().st_size == 16 * 1024
    again = MessageStore(small_config(tmp_path, **QUIET), clock_ms=clock)
    with pytest.raises(StoreError, match="older format"):  # the lock was released
        again.start()


def test_should_not_rewrite_an_unchanged_checkpoint_and_record_every_change(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = _store(tmp_path, clock)
    try:
        _fill(store, 4)
        store.flush()
        path = store.config.checkpoint_path
        written = path.stat()
        store.flush()  # nothing new: the same file, not a rewritten copy
        again = path.stat()
        assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
        _fill(store, 1)
        store.flush()
        assert (
            path.stat().st_ino != written.st_ino or path.stat().st_mtime_ns != written.st_mtime_ns
        )
    finally:
        store.shutdown()
    reopened = _store(tmp_path, clock)  # the last checkpoint holds all five
    try:
        assert len(_bodies(reopened, 0)) + len(_bodies(reopened, 1)) == 5
    finally:
        reopened.shutdown()


_PAGE = 4096


def _keyed(store: MessageStore, prefix: str, count: int) -> None:
    for i in range(count):
        message = InboundMessage("TopicA", i % 2, f"{prefix}{i}".encode(), {"KEYS": f"{prefix}{i}"})
        assert store.put_message(message).ok


def _torn(crashed: dict[str, bytes], durable: dict[str, bytes], pages_new: int) -> dict[str, bytes]:
    """The index files a crash of the machine may leave: page ``p`` of each file as the page
    cache held it when bit ``p`` of ``pages_new`` is set, else as its last flush left it (zeros
    for a file or page made after it)."""
    torn = {}
    for name, now in crashed.items():
        old = durable.get(name, b"").ljust(len(now), b"\0")
        pages = [
            (now if pages_new >> (at // _PAGE) & 1 else old)[at : at + _PAGE]
            for at in range(0, len(now), _PAGE)
        ]
        torn[name] = b"".join(pages)
    return torn


@pytest.mark.parametrize("pages_new", [0b0000, 0b1111, 0b0001, 0b1110, 0b0101, 0b1010])
def test_should_find_every_key_once_after_a_crash_of_the_machine_tore_the_index(
    tmp_path: Path, clock: ManualClock, pages_new: int
) -> None:
    config = {**QUIET, "index_slots": 1500, "index_entries": 400}  # 6 KB of slots, 8 of entries
    store = MessageStore(small_config(tmp_path / "live", **config), clock_ms=clock)
    store.start()
    _keyed(store, "a", 40)
    store.flush()  # the index flushed: its mark
    index_dir = tmp_path / "live" / "index"
    durable = {p.name: p.read_bytes() for p in index_dir.iterdir()}
    _keyed(store, "b", 40)
    store._checkpoint(clean_shutdown=False)  # a periodic one: the index written, not flushed
    assert Checkpoint.load(store.config.checkpoint_path).index_mark.entries_used == 41
    crash(store)
    crashed = {p.name: p.read_bytes() for p in index_dir.iterdir()}
    assert crashed != durable  # the 40 after the mark are in the files, not yet durable
    for name, data in _torn(crashed, durable, pages_new).items():
        (index_dir / name).write_bytes(data)

    again = MessageStore(small_config(tmp_path / "live", **config), clock_ms=clock)
    again.start()
    try:
        for key in [f"a{i}" for i in range(40)] + [f"b{i}" for i in range(40)]:
            found = again.query_messages_by_key("TopicA", key)
            assert [m.body for m in found] == [key.encode()], key
    finally:
        again.shutdown()


def test_should_flush_the_index_on_its_own_interval_and_mark_what_it_made_durable(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = MessageStore(
        small_config(tmp_path, **QUIET, flush_index_interval_ms=600_000), clock_ms=clock
    )
    store.start()
    try:
        first = Checkpoint.load(store.config.checkpoint_path)
        assert first is not None and first.index_mark == IndexMark(-1, 1, -1, 0)
        _keyed(store, "k", 3)
        store._checkpoint(clean_shutdown=False)  # within the interval: written, not flushed
        index = store.index
        assert index is not None and not index.pending
        newest = index.files[-1]
        assert newest.entries_used == 4 and newest._flushed_used != 4
        second = Checkpoint.load(store.config.checkpoint_path)
        assert second is not None and second.index_mark == first.index_mark
        store.flush()  # an admin flush makes the index durable too
        third = Checkpoint.load(store.config.checkpoint_path)
        assert third is not None and third.index_mark is not None
        assert third.index_mark.entries_used == 4 and newest._flushed_used == 4
        assert third.index_mark.dispatched_offset == store.commit_log.max_offset
    finally:
        store.shutdown()


def test_should_write_the_keys_it_indexes_again_in_chunks_not_two_a_put(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_index_service, "MAX_PENDING", 256)  # scaled down, 2,000 records
    monkeypatch.setattr(_recovery, "DRAIN_AT", 128)
    config = {**QUIET, "index_slots": 4096, "index_entries": 8192}
    store = MessageStore(small_config(tmp_path, **config), clock_ms=clock)
    store.start()
    for first in range(0, 2000, 100):
        batch = [
            InboundMessage("TopicA", first // 100 % 2, f"k{i}".encode(), {"KEYS": f"k{i}"})
            for i in range(first, first + 100)
        ]
        assert store.put_messages(batch).ok
    crash(store)  # the index's mark is the start's: recovery indexes all 2,000 again
    writes: list[int] = []
    put_entries = IndexFile.put_entries

    def counted(self: IndexFile, entries: list[Any]) -> int:
        writes.append(len(entries))
        return put_entries(self, entries)

    monkeypatch.setattr(IndexFile, "put_entries", counted)
    again = MessageStore(small_config(tmp_path, **config), clock_ms=clock)
    again.start()
    try:
        assert (
            again.recovery_report is not None and again.recovery_report.records_redispatched >= 2000
        )
        assert 10 <= len(writes) <= 40, writes  # 2,000 / 128 drains, not 1,000 writes of 2
        for key in ("k0", "k999", "k1999"):
            found = again.query_messages_by_key("TopicA", key)
            assert [m.body for m in found] == [key.encode()], key
    finally:
        again.shutdown()
