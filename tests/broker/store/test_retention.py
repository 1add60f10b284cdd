from __future__ import annotations

from collections.abc import Callable

from aeromq.broker.store import GetMessageStatus, InboundMessage, MessageStore

from .conftest import ManualClock

OpenStore = Callable[..., MessageStore]
HOUR_MS = 3_600_000


def _fill_segments(store: MessageStore, clock: ManualClock, segments: int) -> None:
    """Write ``segments`` commit log segments over two queues, the clock moving on, and a
    few messages of each queue in the last one."""
    i = 0
    while len(store.commit_log.files.files) < segments:
        store.put_message(InboundMessage("TopicA", i % 2, bytes(400), {"KEYS": f"k{i}"}))
        i += 1
        clock.advance(HOUR_MS // 40)
    for _ in range(4):
        store.put_message(InboundMessage("TopicA", i % 2, bytes(400), {"KEYS": f"k{i}"}))
        i += 1


def test_should_delete_segments_older_than_the_reserve_time(
    open_store: OpenStore, clock: ManualClock
) -> None:
    store = open_store(file_reserved_time_ms=2 * HOUR_MS, consume_queue_entries_per_segment=8)
    _fill_segments(store, clock, 4)
    before = [f.start_offset for f in store.commit_log.files.files]
    assert store.run_retention().commit_log_files == 0  # nothing two hours old yet
    clock.advance(24 * HOUR_MS)
    report = store.run_retention()
    assert report.commit_log_files == len(before) - 1  # all but the active one
    assert store.min_physical_offset == before[-1] == report.min_physical_offset
    assert report.consume_queue_files > 0 and report.index_files > 0
    for queue_id in (0, 1):
        low = store.get_min_offset("TopicA", queue_id)
        assert low > 0
        stale = store.get_messages("TopicA", queue_id, 0)
        assert (stale.status, stale.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, low)
        first = store.get_messages("TopicA", queue_id, low, max_count=1).messages[0]
        assert first.physical_offset >= store.min_physical_offset
    survivors = store.query_messages_by_key("TopicA", "k0")
    assert survivors == []


def test_should_delete_oldest_segments_beyond_the_disk_budget(
    open_store: OpenStore, clock: ManualClock
) -> None:
    store = open_store(max_store_bytes=2 * 16 * 1024)
    _fill_segments(store, clock, 5)
    report = store.run_retention()
    assert report.commit_log_files == 3
    assert store.commit_log.files.total_bytes() <= 2 * 16 * 1024
    assert store.get_min_offset("TopicA", 0) > 0


def test_should_keep_the_active_segment_whatever_its_age(
    open_store: OpenStore, clock: ManualClock
) -> None:
    store = open_store(file_reserved_time_ms=0)
    store.put_message(InboundMessage("TopicA", 0, b"x"))
    clock.advance(1000 * HOUR_MS)
    assert store.run_retention().commit_log_files == 0
    assert store.get_messages("TopicA", 0, 0).messages[0].body == b"x"


def test_should_skip_entries_whose_records_went_meanwhile(
    open_store: OpenStore, clock: ManualClock
) -> None:
    store = open_store(
        file_reserved_time_ms=0, consume_queue_entries_per_segment=64, max_filter_scan_entries=4
    )
    _fill_segments(store, clock, 3)
    clock.advance(HOUR_MS)
    assert store.run_retention().commit_log_files == 2
    queue = store.queues.get("TopicA", 0)
    assert queue is not None and queue.min_offset > 0
    live = queue.min_offset
    queue.min_offset = 0  # a reader that raced retention still sees the old bounds
    assert live > 4
    stale = store.get_messages("TopicA", 0, 0, max_count=2)  # scans 4 entries at most
    assert stale.status is GetMessageStatus.MESSAGE_WAS_REMOVING
    assert stale.messages == [] and stale.next_begin_offset == 4
    resumed = store.get_messages("TopicA", 0, live - 1, max_count=2)
    assert resumed.status is GetMessageStatus.FOUND
    assert [m.queue_offset for m in resumed.messages] == [live, live + 1]
