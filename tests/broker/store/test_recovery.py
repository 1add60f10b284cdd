from __future__ import annotations

import shutil
import struct
from pathlib import Path

from aeromq.broker.store import GetMessageStatus, InboundMessage, MessageStore
from aeromq.broker.store._record import MESSAGE_MAGIC, RecordCheck, encode_record

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
            message = store.commit_log.read(entry[0], entry[1])
            assert message is not None, (queue.topic, queue.queue_id, offset)
            assert (message.topic, message.queue_id, message.queue_offset) == (
                queue.topic,
                queue.queue_id,
                offset,
            )


def test_should_truncate_a_torn_tail_to_the_last_whole_record(
    tmp_path: Path, clock: ManualClock
) -> None:
    store = _store(tmp_path, clock)
    _fill(store, 20)
    end = store.max_physical_offset
    segment = store.commit_log.files.find(end)
    assert segment is not None
    torn = encode_record(
        topic=b"TopicA",
        queue_id=0,
        body=b"never acknowledged",
        properties=b"",
        queue_offset=10,
        physical_offset=end,
        store_timestamp_ms=clock.now_ms,
        store_host=bytes(8),
    )
    at = end - segment.start_offset
    segment.mm[at : at + len(torn) - 7] = torn[:-7]  # the process died mid-write
    crash(store)

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None and not report.clean_shutdown
    assert report.end_offset == end and report.truncated_at == end
    assert report.truncated_check == RecordCheck.BAD_CRC.name  # the CRC was not written yet
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
    stale = encode_record(
        topic=b"TopicA",
        queue_id=0,
        body=b"old",
        properties=b"",
        queue_offset=0,
        physical_offset=end + 4096,  # written for another place
        store_timestamp_ms=clock.now_ms,
        store_host=bytes(8),
    )
    at = end - segment.start_offset
    segment.mm[at : at + len(stale)] = stale
    crash(store)

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None and report.truncated_check == RecordCheck.BAD_POSITION.name
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
    assert struct.unpack_from("<I", segment.mm, at + 4)[0] == MESSAGE_MAGIC
    segment.mm[at + 88] ^= 0xFF  # the first byte of its body
    crash(store)

    again = _store(tmp_path, clock)
    report = again.recovery_report
    assert report is not None
    assert report.truncated_at == sixth.physical_offset
    assert report.truncated_check == RecordCheck.BAD_CRC.name
    assert _bodies(again, 1) == [b"m1", b"m3"]
    assert _bodies(again, 0) == [b"m0", b"m2", b"m4"]
    _assert_queues_agree_with_log(again)
    again.shutdown()
