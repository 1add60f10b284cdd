from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aeromq.broker import BrokerStateError, CorruptRecordError, StoreLockedError
from aeromq.broker.store import (
    BoundaryType,
    FlushMode,
    GetMessageStatus,
    InboundMessage,
    MessageStore,
    PutMessageStatus,
)
from aeromq.broker.store._checkpoint import Checkpoint
from aeromq.common import tag_hash_code

from .conftest import ManualClock, small_config

OpenStore = Callable[..., MessageStore]


def _message(queue_id: int = 0, body: bytes = b"body", **properties: str) -> InboundMessage:
    return InboundMessage("TopicA", queue_id, body, properties)


def _put(store: MessageStore, count: int, queue_id: int = 0, **properties: str) -> list[int]:
    offsets = []
    for i in range(count):
        result = store.put_message(_message(queue_id, f"m{i}".encode(), **properties))
        assert result.status is PutMessageStatus.PUT_OK, result
        offsets.append(result.queue_offset)
    return offsets


def test_should_assign_consecutive_queue_offsets_per_queue(open_store: OpenStore) -> None:
    store = open_store()
    assert _put(store, 3, queue_id=0) == [0, 1, 2]
    assert _put(store, 2, queue_id=5) == [0, 1]
    result = store.put_messages([_message(0, b"a"), _message(0, b"b")])
    assert (result.queue_offset, result.message_count) == (3, 2)
    assert result.physical_offsets == [result.physical_offset, result.physical_offset + 1]
    assert store.max_physical_offset == result.physical_offset + result.wrote_bytes
    assert store.get_max_offset("TopicA", 0) == 5 and store.get_min_offset("TopicA", 0) == 0
    assert store.queue_ids() == [("TopicA", 0), ("TopicA", 5)]


def test_should_answer_every_get_status_like_rocketmq(open_store: OpenStore) -> None:
    store = open_store()
    empty = store.get_messages("TopicA", 0, 0)
    assert (empty.status, empty.next_begin_offset, empty.max_offset) == (
        GetMessageStatus.NO_MESSAGE_IN_QUEUE,
        0,
        0,
    )
    _put(store, 5)
    found = store.get_messages("TopicA", 0, 1, max_count=2)
    assert found.status is GetMessageStatus.FOUND
    assert [m.body for m in found.messages] == [b"m1", b"m2"]
    assert (found.next_begin_offset, found.min_offset, found.max_offset) == (3, 0, 5)
    one = store.get_messages("TopicA", 0, 5)
    assert (one.status, one.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 5)
    badly = store.get_messages("TopicA", 0, 9)
    assert (badly.status, badly.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 5)
    store.queues.get_or_create("TopicA", 0).min_offset = 2
    small = store.get_messages("TopicA", 0, 1)
    assert (small.status, small.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, 2)


def test_should_cap_a_get_by_count_and_bytes_but_return_at_least_one(
    open_store: OpenStore,
) -> None:
    store = open_store()
    for i in range(40):
        store.put_message(_message(0, bytes([i]) * 100))
    assert len(store.get_messages("TopicA", 0, 0).messages) == 32  # RocketMQ's default cap
    size = store.get_messages("TopicA", 0, 0, max_count=1).buffer_total_size
    capped = store.get_messages("TopicA", 0, 0, max_bytes=3 * size)
    assert len(capped.messages) == 3 and capped.next_begin_offset == 3
    tiny = store.get_messages("TopicA", 0, 7, max_bytes=1)
    assert len(tiny.messages) == 1 and tiny.next_begin_offset == 8


def test_should_filter_by_tag_hash_and_still_advance(open_store: OpenStore) -> None:
    store = open_store()
    for i in range(10):
        store.put_message(_message(0, f"m{i}".encode(), TAGS="even" if i % 2 == 0 else "odd"))
    odd = store.get_messages("TopicA", 0, 0, max_count=3, tag_hashes={tag_hash_code("odd")})
    assert [m.body for m in odd.messages] == [b"m1", b"m3", b"m5"]
    assert odd.next_begin_offset == 6
    none = store.get_messages("TopicA", 0, 0, tag_hashes={tag_hash_code("other")})
    assert none.status is GetMessageStatus.NO_MATCHED_MSG
    assert none.next_begin_offset == 10 and none.messages == []


def test_should_bound_the_entries_scanned_by_a_filtered_get(open_store: OpenStore) -> None:
    store = open_store(max_filter_scan_entries=4)
    _put(store, 10, TAGS="x")
    result = store.get_messages("TopicA", 0, 0, max_count=2, tag_hashes={tag_hash_code("y")})
    assert result.status is GetMessageStatus.NO_MATCHED_MSG
    assert result.next_begin_offset == 4


def test_should_never_return_a_record_with_a_flipped_byte(open_store: OpenStore) -> None:
    store = open_store()
    _put(store, 60)
    victim = store.get_messages("TopicA", 0, 30, max_count=1).messages[0]
    segment = store.commit_log.files.find(victim.physical_offset)
    assert segment is not None
    batch_length = store.get_batches("TopicA", 0, 30, max_count=1).buffer_total_size
    last_byte = victim.physical_offset - segment.start_offset + batch_length - 1
    segment.mm[last_byte] ^= 0x01  # under the CRC: only a CRC check sees it
    result = store.get_messages("TopicA", 0, 28, max_count=5)
    assert [m.queue_offset for m in result.messages] == [28, 29, 31, 32]
    assert result.next_begin_offset == 33 and result.message_count == 4
    assert len(result.corrupt) == 1
    error = result.corrupt[0]
    assert error.physical_offset == victim.physical_offset  # type: ignore[attr-defined]
    assert error.queue_offset == 30  # type: ignore[attr-defined]
    assert "check='BAD_CRC'" in str(error)
    assert store.corrupt_records_seen == 1
    with pytest.raises(CorruptRecordError, match=f"physical_offset={victim.physical_offset}"):
        store.look_message_by_offset(victim.physical_offset)
    only = store.get_messages("TopicA", 0, 30, max_count=1)
    assert only.messages == [] and only.status is GetMessageStatus.NO_MATCHED_MSG
    assert only.next_begin_offset == 31 and len(only.corrupt) == 1  # the next pull moves on
    raw = store.get_batches("TopicA", 0, 30, max_count=1)  # no CRC check on the pull path
    assert raw.status is GetMessageStatus.FOUND and raw.batch_count == 1


def test_should_find_offsets_by_store_time(open_store: OpenStore, clock: ManualClock) -> None:
    store = open_store()
    stamps = []
    for _ in range(6):
        stamps.append(store.put_message(_message()).store_timestamp_ms)
        clock.advance(1000)
    assert store.get_offset_by_time("TopicA", 0, stamps[2]) == 2
    assert store.get_offset_by_time("TopicA", 0, stamps[2] + 1) == 3
    assert store.get_offset_by_time("TopicA", 0, stamps[2] + 1, BoundaryType.UPPER) == 2
    assert store.get_offset_by_time("TopicA", 0, 0) == 0
    assert store.get_offset_by_time("TopicA", 0, stamps[-1] + 5) == 6
    assert store.get_offset_by_time("TopicB", 0, 0) == 0
    assert store.get_store_timestamp("TopicA", 0, 4) == stamps[4]
    assert store.get_earliest_message_time("TopicA", 0) == stamps[0]
    assert store.get_store_timestamp("TopicA", 0, 99) == -1


def test_should_never_let_store_time_go_backwards(
    open_store: OpenStore, clock: ManualClock
) -> None:
    store = open_store()
    first = store.put_message(_message()).store_timestamp_ms
    clock.advance(-5000)
    assert store.put_message(_message()).store_timestamp_ms == first


def test_should_query_by_key_unique_key_and_message_id(open_store: OpenStore) -> None:
    store = open_store()
    store.put_message(_message(0, b"one", KEYS="order-1 customer-9", UNIQ_KEY="U-1"))
    result = store.put_message(_message(1, b"two", KEYS="order-2", UNIQ_KEY="U-2"))
    store.put_message(_message(0, b"three", KEYS="order-1"))
    assert [m.body for m in store.query_messages_by_key("TopicA", "order-1")] == [
        b"three",
        b"one",
    ]
    assert [m.body for m in store.query_messages_by_key("TopicA", "U-2")] == [b"two"]
    assert store.query_messages_by_key("TopicA", "order-1", max_count=1)[0].body == b"three"
    assert store.query_messages_by_key("TopicB", "order-1") == []
    assert store.query_messages_by_key("TopicA", "order-1", begin_ms=2**61) == []
    (message_id,) = result.message_ids
    found = store.query_message_by_id(message_id)
    assert found.body == b"two" and found.message_id == message_id


def test_should_write_queued_index_entries_within_tens_of_ms_not_at_the_checkpoint(
    open_store: OpenStore,
) -> None:
    # a checkpoint a minute away: the services thread's own drains write the keyed entries,
    # a few at a time, rather than the checkpoint a minute's worth at once
    store = open_store(flush_consume_queue_interval_ms=60_000)
    index = store.index
    assert index is not None
    for i in range(50):
        store.put_message(_message(0, b"keyed", KEYS=f"order-{i}"))
    deadline = time.monotonic() + 5.0
    while index.pending and time.monotonic() < deadline:
        time.sleep(0.005)
    assert not index.pending
    assert [m.body for m in store.query_messages_by_key("TopicA", "order-7")] == [b"keyed"]


def test_should_refuse_illegal_puts_with_a_status(open_store: OpenStore) -> None:
    store = open_store()
    illegal = PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_messages([]).status is illegal
    assert store.put_message(InboundMessage("bad topic!", 0, b"x")).status is illegal
    assert store.put_message(InboundMessage("T", -1, b"x")).status is illegal
    assert store.put_message(InboundMessage("T", 0, b"x" * 20_000)).status is illegal
    mixed = [InboundMessage("T", 0, b"x"), InboundMessage("U", 0, b"x")]
    assert store.put_messages(mixed).status is illegal
    assert store.put_message(InboundMessage("T", 0, b"x", flag=1 << 33)).status is illegal
    assert store.get_max_offset("T", 0) == 0 and store.max_physical_offset == 0


def test_should_wake_a_long_poll_when_a_message_arrives(open_store: OpenStore) -> None:
    store = open_store()
    _put(store, 1)
    arrivals: list[tuple[str, int, int]] = []
    store.add_arrival_listener(lambda *event: arrivals.append(event))
    assert store.wait_for_message("TopicA", 0, 0, timeout_ms=10)  # offset 0 is there
    began = time.monotonic()
    assert not store.wait_for_message("TopicA", 0, 1, timeout_ms=50)
    assert time.monotonic() - began >= 0.04
    woke: list[bool] = []
    waiter = threading.Thread(
        target=lambda: woke.append(store.wait_for_message("TopicA", 0, 1, timeout_ms=5000))
    )
    waiter.start()
    time.sleep(0.05)
    _put(store, 1, queue_id=3)  # another queue: no wake-up
    _put(store, 1)
    waiter.join(5)
    assert woke == [True]
    assert arrivals == [("TopicA", 3, 1), ("TopicA", 0, 2)]


def test_should_persist_across_restarts(tmp_path: Path, clock: ManualClock) -> None:
    config = small_config(tmp_path)
    with MessageStore(config, clock_ms=clock) as store:
        for i in range(200):
            store.put_message(_message(i % 3, f"m{i}".encode(), TAGS="t"))
        store.consumer_offsets.commit_offset("G", "TopicA", 1, 7)
        end = store.max_physical_offset
    with MessageStore(config, clock_ms=clock) as store:
        report = store.recovery_report
        assert report is not None and report.clean_shutdown
        assert report.records_scanned == 0 and report.end_offset == end
        assert store.get_max_offset("TopicA", 1) == 67
        assert store.get_messages("TopicA", 1, 66).messages[0].body == b"m199"
        assert store.consumer_offsets.query_offset("G", "TopicA", 1) == 7
        assert len(store.commit_log.files.files) > 1


def test_should_lock_the_data_directory(tmp_path: Path, open_store: OpenStore) -> None:
    open_store()
    with pytest.raises(StoreLockedError, match="in use"):
        MessageStore(small_config(tmp_path / "store")).start()


def test_should_refuse_work_when_not_running(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path))
    assert store.put_message(_message()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    with pytest.raises(BrokerStateError, match="not running"):
        store.flush()
    store.start()
    with pytest.raises(BrokerStateError, match="already started"):
        store.start()
    store.shutdown()
    store.shutdown()
    assert store.put_message(_message()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_should_acknowledge_sync_puts_once_durable(open_store: OpenStore) -> None:
    store = open_store(flush_mode=FlushMode.SYNC)
    result = store.put_message(_message())
    assert result.status is PutMessageStatus.PUT_OK
    assert store.flushed_physical_offset >= result.physical_offset + result.wrote_bytes
    done = threading.Event()
    outcomes = []

    def callback(outcome: object) -> None:
        outcomes.append(outcome)
        done.set()

    pending = store.put_messages_async([_message(), _message()], callback)
    assert done.wait(5)
    assert outcomes == [pending] and pending.status is PutMessageStatus.PUT_OK
    assert store.flushed_physical_offset >= pending.physical_offset + pending.wrote_bytes


def test_should_call_back_at_once_under_async_flush(open_store: OpenStore) -> None:
    store = open_store()
    outcomes: list[object] = []
    result = store.put_messages_async([_message()], outcomes.append)
    assert outcomes == [result] and result.ok
    bad = store.put_messages_async([], outcomes.append)
    assert outcomes[-1] is bad and bad.status is PutMessageStatus.MESSAGE_ILLEGAL


def test_should_delete_a_topics_queues(open_store: OpenStore) -> None:
    store = open_store()
    _put(store, 3, queue_id=0)
    _put(store, 3, queue_id=1)
    assert store.delete_topic("TopicA") == 2
    assert store.get_max_offset("TopicA", 0) == 0
    assert not (store.config.consume_queue_dir / "TopicA").exists()
    assert _put(store, 1) == [0]


def test_should_back_the_index_drain_off_while_nothing_is_queued(open_store: OpenStore) -> None:
    store = open_store(flush_consume_queue_interval_ms=60_000)  # (no checkpoint drains them)
    duties = {duty.name: duty for duty in store._scheduler.duties}  # type: ignore[union-attr]
    drain = duties["index-drain"]
    deadline = time.monotonic() + 5.0
    while drain.interval_ms < 160 and time.monotonic() < deadline:  # idle: doubles up to 160
        time.sleep(0.02)
    assert drain.interval_ms == 160
    runs, started_s = drain.runs, time.monotonic()
    time.sleep(0.5)
    idle_runs, elapsed_s = drain.runs - runs, time.monotonic() - started_s
    # about six a second idle, not fifty: at most one a 160 ms interval and one at its start
    # over the time that passed (4 in the half second; a loaded host can oversleep it)
    assert idle_runs <= elapsed_s / 0.160 + 1, (idle_runs, elapsed_s)
    store.put_message(_message(0, b"keyed", KEYS="order-1"))
    deadline = time.monotonic() + 5.0
    while store.index.pending and time.monotonic() < deadline:  # type: ignore[union-attr]
        time.sleep(0.01)
    assert not store.index.pending  # type: ignore[union-attr]  # drained within 160 ms or so
    assert drain.interval_ms == 160  # a few entries a drain: the interval stays long


def test_should_drain_the_index_sooner_while_many_entries_are_queued_a_drain(
    open_store: OpenStore,
) -> None:
    store = open_store(flush_consume_queue_interval_ms=60_000)  # (no checkpoint drains them)
    duties = {duty.name: duty for duty in store._scheduler.duties}  # type: ignore[union-attr]
    drain = duties["index-drain"]
    deadline = time.monotonic() + 5.0
    while drain.interval_ms < 160 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert drain.interval_ms == 160
    for i in range(20):  # 20 sends of 50 keyed messages: 1,000 a drain at first
        store.put_messages([_message(0, b"m", KEYS=f"k-{i}-{j}") for j in range(50)])
    deadline = time.monotonic() + 5.0
    while drain.interval_ms == 160 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert 20 <= drain.interval_ms <= 80  # halved by each drain that found more than 256
    for i in range(20):
        [found] = store.query_messages_by_key("TopicA", f"k-{i}-49")
        assert found.properties["KEYS"] == f"k-{i}-49"


def test_should_flush_and_checkpoint_on_time_while_a_thread_puts_keyed_messages_flat_out(
    tmp_path: Path,
) -> None:
    """The index's drain must not hold up the store's other duties: a put loop without a pause
    (the interpreter busy) once kept the scheduler in one drain for seconds, and neither the
    commit log's ASYNC flush nor the checkpoint ran."""
    config = small_config(
        tmp_path,
        commit_log_segment_bytes=64 << 20,
        consume_queue_entries_per_segment=1 << 20,
        index_slots=100_003,
        index_entries=2_000_000,
        flush_interval_ms=100,
        flush_consume_queue_interval_ms=200,
    )
    store = MessageStore(config)
    store.start()
    try:
        flushed: list[int] = []
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(0.05):
                flushed.append(store.commit_log.flushed_offset)

        watcher = threading.Thread(target=watch)
        watcher.start()
        n = 0
        until = time.monotonic() + 3.0
        while time.monotonic() < until:
            batch = [InboundMessage("T", 0, b"x" * 100, {"KEYS": f"k{n + i}"}) for i in range(100)]
            assert store.put_messages(batch).ok
            n += 100
        stop.set()
        watcher.join()
        checkpoint = Checkpoint.load(config.checkpoint_path)
        assert checkpoint is not None and checkpoint.dispatched_offset > 0, n
        advances = sum(1 for a, b in itertools.pairwise(flushed) if b > a)
        assert advances >= 6, (advances, n)  # every 100 ms asked: at least 6 in 3 s
    finally:
        store.shutdown()
