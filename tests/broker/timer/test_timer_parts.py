"""The timer's pure parts: due times and delay levels, the index by due time, the delivered
marks, their checkpoint file, and the redirect of a marked batch into the timer topic."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from aeromq.broker._errors import StoreError
from aeromq.broker.timer import (
    DELAY_LEVELS_MS,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DELIVER_MS,
    TIMER_QUEUE_ID,
    TIMER_TOPIC,
    TimerCheckpoint,
    TimerRedirector,
    due_time,
    level_delay_ms,
)
from aeromq.broker.timer._checkpoint_writer import CheckpointWriter
from aeromq.broker.timer._index import TimerIndex
from aeromq.broker.timer._ledger import DeliveryLedger
from aeromq.broker.timer._records import Held
from aeromq.common import RecordBatch, encode_batch, stored_properties
from aeromq.common.record_batch import PRODUCER_STATE_FLAG, TIMER_FLAG

NOW = 1_700_000_000_000


def test_should_map_rocketmq_4s_eighteen_delay_levels() -> None:
    assert len(DELAY_LEVELS_MS) == 18
    assert [level_delay_ms(n) for n in (1, 2, 3, 4, 5, 14, 15, 16, 17, 18)] == [
        1_000, 5_000, 10_000, 30_000, 60_000, 600_000, 1_200_000, 1_800_000, 3_600_000,
        7_200_000,
    ]  # fmt: skip
    assert level_delay_ms(0) == level_delay_ms(-3) == 0
    assert level_delay_ms(40) == 7_200_000  # above 18: level 18, as RocketMQ


def test_should_read_the_due_time_of_each_property() -> None:
    assert due_time({}, NOW, 10_000).due_ms is None
    assert due_time({"TIMER_DELIVER_MS": str(NOW + 5)}, NOW, 10_000).due_ms == NOW + 5
    assert due_time({"TIMER_DELAY_SEC": "3"}, NOW, 10_000).due_ms == NOW + 3_000
    assert due_time({"DELAY": "2"}, NOW, 10_000).due_ms == NOW + 5_000
    assert due_time({"TIMER_DELIVER_MS": "1"}, NOW, 10_000).due_ms == 1  # past: due now
    far = due_time({"TIMER_DELAY_SEC": "11"}, NOW, 10_000)
    assert far.due_ms is None
    assert far.problem == (
        "delivery time beyond the broker's max delay: TIMER_DELAY_SEC=11 delay_ms=11000 "
        "max_delay_ms=10000"
    )
    assert due_time({"DELAY": "x"}, NOW, 10_000).problem == "not a number: DELAY='x'"


def test_should_give_the_due_entries_earliest_first_and_hold_the_rest() -> None:
    index: TimerIndex[str] = TimerIndex()
    index.add(30, 0, "a")
    index.add(10, 1)
    index.add(10, 2, "c")
    index.add(50, 3)
    assert index.next_due_ms() == 10
    assert index.pop_due(29, limit=10) == [(10, 1, None), (10, 2, "c")]
    assert index.pop_due(40, limit=10) == [(30, 0, "a")]
    assert len(index) == 1 and index.next_due_ms() == 50
    assert index.pop_due(49, limit=10) == []


def test_should_give_cold_entries_to_warm_before_they_are_due() -> None:
    index: TimerIndex[str] = TimerIndex()
    index.add(40, 0)
    index.add(20, 1)
    index.add(10, 2, "held")
    index.add(90, 3)
    assert index.cold == 3 and index.next_cold_ms() == 20
    assert index.pop_cold(50, limit=10) == [(20, 1), (40, 0)]
    index.add(20, 1, "warmed")
    assert index.pop_due(30, limit=10) == [(10, 2, "held"), (20, 1, "warmed")]
    assert index.cold == 1 and index.next_due_ms() == 90
    assert index.pop_due(100, limit=10) == [(90, 3, None)]


def test_should_move_the_low_mark_past_consecutive_deliveries() -> None:
    ledger = DeliveryLedger(low=5)
    ledger.mark(7)
    ledger.mark(6)
    assert ledger.low == 5 and ledger.delivered(3) and ledger.delivered(6)
    assert not ledger.delivered(5)
    ledger.mark(5)
    assert ledger.low == 8
    ledger.mark(10)
    assert ledger.marks() == b"\x00\x00\x01"
    again = DeliveryLedger(ledger.low, ledger.marks())
    assert again.low == 8 and again.delivered(10) and not again.delivered(9)


def test_should_keep_the_marks_through_the_checkpoint_file(tmp_path: Path) -> None:
    path = tmp_path / "timer" / "checkpoint.json"
    assert TimerCheckpoint.load(path) is None
    marks = bytes([0, 1, 1, 0, 0, 0, 0, 0, 0, 1])
    TimerCheckpoint(12, marks, 4096).save(path)
    assert TimerCheckpoint.load(path) == TimerCheckpoint(12, marks, 4096)
    path.write_text('{"version": 7}')
    with pytest.raises(StoreError, match="bad timer checkpoint"):
        TimerCheckpoint.load(path)


def _marked_batch(properties: list[bytes], attributes: int = TIMER_FLAG) -> bytes:
    return bytes(
        encode_batch(
            b"orders",
            [b"one", b"two"][: len(properties)],
            ["A", None][: len(properties)],
            properties,
            born_timestamp_ms=NOW - 5,
            born_host=bytes(range(8)),
            reconsume_times=2,
            attributes=attributes,
        )
    )


def test_should_rewrite_a_marked_batch_into_the_timer_topic() -> None:
    batch = _marked_batch([b"DELAY\x011\x02UNIQ_KEY\x01u1\x02", b"TIMER_DELIVER_MS\x0199\x02"])
    redirected = TimerRedirector(60_000)(memoryview(batch), "orders", 3, NOW)
    assert not isinstance(redirected, str)
    data, topic, queue_id = redirected
    assert (topic, queue_id) == (TIMER_TOPIC, TIMER_QUEUE_ID)
    view = RecordBatch(bytes(data))
    assert view.topic == TIMER_TOPIC and view.count == 2
    assert not view.attributes & (TIMER_FLAG | PRODUCER_STATE_FLAG)
    assert (view.reconsume_times, bytes(view.born_host)) == (2, bytes(range(8)))
    first, second = stored_properties(view, 0), stored_properties(view, 1)
    assert first == {
        "UNIQ_KEY": "u1",
        "TAGS": "A",
        PROPERTY_TIMER_DELIVER_MS: str(NOW + 1_000),
        PROPERTY_REAL_TOPIC: "orders",
        PROPERTY_REAL_QUEUE_ID: "3",
    }
    assert second[PROPERTY_TIMER_DELIVER_MS] == "99"
    assert [view.body(0), view.body(1)] == [b"one", b"two"]


def test_should_refuse_a_marked_batch_due_beyond_the_max_delay() -> None:
    batch = _marked_batch([f"TIMER_DELIVER_MS\x01{NOW + 61_000}\x02".encode()])
    refused = TimerRedirector(60_000)(memoryview(batch), "orders", 0, NOW)
    assert refused == (
        f"delivery time beyond the broker's max delay: TIMER_DELIVER_MS={NOW + 61_000} "
        "delay_ms=61000 max_delay_ms=60000 topic='orders'"
    )
    assert TimerRedirector(60_000).problem(batch, "orders", NOW) == refused


def test_should_write_the_newest_checkpoint_offered_on_its_own_thread(tmp_path: Path) -> None:
    path = tmp_path / "timer" / "checkpoint.json"
    writer = CheckpointWriter(path, 0o600)
    writer.start()
    for low in range(1, 6):
        writer.offer(TimerCheckpoint(low, b"\x01", low * 100))
    assert writer.close()  # stops the thread, then writes what is still pending
    assert TimerCheckpoint.load(path) == TimerCheckpoint(5, b"\x01", 500)
    assert 1 <= writer.saved <= 5


def test_should_keep_a_checkpoint_it_cannot_write_until_it_can(tmp_path: Path) -> None:
    blocker = tmp_path / "timer"
    blocker.write_text("a file where the directory should be")
    path = blocker / "checkpoint.json"
    writer = CheckpointWriter(path, 0o600)
    writer.offer(TimerCheckpoint(3, b"", 42))
    assert not writer.drain()
    assert writer.failed == 1
    blocker.unlink()
    assert writer.drain()  # the failed one, kept
    assert TimerCheckpoint.load(path) == TimerCheckpoint(3, b"", 42)


def test_should_hold_records_as_tuples_the_collector_stops_tracking() -> None:
    held = Held("orders", 1, NOW, b"body", None, b"UNIQ_KEY\x01u1\x02", 0, NOW, b"h" * 8, 0, 0)
    packed = held.packed()
    gc.collect()
    assert not gc.is_tracked(packed)  # a full collection does not walk the held records
    assert Held.unpacked(packed) == held
