"""The timer against a real store on disk: held in the timer topic, put back when due, never
before; delay levels; refused and past times; a send-back to a retry topic; a restart."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from aeromq.broker.store import InboundMessage, PutMessageResult, PutMessageStatus, TopicConfig
from aeromq.broker.timer import (
    PROPERTY_DELAY,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_OUT_MS,
    TIMER_TOPIC,
    TimerCheckpoint,
)
from aeromq.broker.timer._records import Held
from aeromq.common import encode_batch
from aeromq.common.record_batch import TIMER_FLAG, CompressionType, compress_batch

from .conftest import TimerStore, now_ms, read_all, wait_for_count

_CHECKPOINT = ("timer", "checkpoint.json")


def _timer_message(
    topic: str, due_ms: int, body: bytes = b"x", queue_id: int = 1
) -> InboundMessage:
    return InboundMessage(
        topic,
        queue_id,
        body,
        {PROPERTY_TIMER_DELIVER_MS: str(due_ms), "UNIQ_KEY": body.hex() or "00"},
    )


def test_should_hold_a_timer_message_until_due_then_put_it_back_to_its_queue(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, _ = open_timer_store()
    due_ms = now_ms() + 300
    result = store.put_message(_timer_message("orders", due_ms, b"late"))
    assert result.status is PutMessageStatus.PUT_OK
    assert read_all(store, "orders", 1) == []
    held = read_all(store, TIMER_TOPIC)
    assert [m.properties[PROPERTY_REAL_TOPIC] for m in held] == ["orders"]
    assert held[0].properties[PROPERTY_REAL_QUEUE_ID] == "1"
    delivered = wait_for_count(store, "orders", 1, queue_id=1)
    assert [m.body for m in delivered] == [b"late"]
    message = delivered[0]
    assert message.store_timestamp_ms >= due_ms
    assert message.properties[PROPERTY_TIMER_OUT_MS] == str(due_ms)
    assert PROPERTY_TIMER_DELIVER_MS not in message.properties
    assert PROPERTY_REAL_TOPIC not in message.properties


def test_should_deliver_in_due_order_not_in_store_order(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, _ = open_timer_store()
    base = now_ms() + 300
    for index, delta in enumerate((400, 0, 200, 100)):
        store.put_message(_timer_message("t", base + delta, bytes([index + 1])))
    delivered = wait_for_count(store, "t", 4, queue_id=1)
    assert [m.body for m in delivered] == [b"\x02", b"\x04", b"\x03", b"\x01"]
    assert all(int(m.properties[PROPERTY_TIMER_OUT_MS]) <= m.store_timestamp_ms for m in delivered)


def test_should_read_a_message_again_when_it_was_not_kept_from_the_first_read(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, _ = open_timer_store(hold_max_bytes=0)
    base = now_ms() + 200
    store.put_messages([_timer_message("t", base + i, bytes([i + 1])) for i in range(3)])
    delivered = wait_for_count(store, "t", 3, queue_id=1)
    assert [m.body for m in delivered] == [b"\x01", b"\x02", b"\x03"]


def test_should_read_ahead_a_message_due_beyond_the_hold_horizon_before_it_is_due(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, service = open_timer_store(hold_horizon_ms=200)
    base = now_ms() + 1_500
    store.put_messages([_timer_message("t", base + i, bytes([i + 1])) for i in range(3)])
    deadline = time.monotonic() + 10
    while service.pending < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert service.cold == 3  # due beyond the horizon when read: not held
    while service.cold and time.monotonic() < deadline:
        time.sleep(0.001)
    # (read ahead, or due already; ``pending`` counts the entries a read-ahead has out of the
    # index while it rereads their records: it read 0 here for 15 ms on a slow host before)
    assert service.pending == 3 or now_ms() >= base
    delivered = wait_for_count(store, "t", 3, queue_id=1)
    assert [m.body for m in delivered] == [b"\x01", b"\x02", b"\x03"]
    assert all(int(m.properties[PROPERTY_TIMER_OUT_MS]) <= m.store_timestamp_ms for m in delivered)


def test_should_count_entries_as_pending_while_a_read_ahead_rereads_their_records(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, service = open_timer_store(hold_horizon_ms=200)
    seen: list[tuple[int, int]] = []
    reread = service._reread

    def slow_reread(offsets: list[int]) -> dict[int, Held | None]:  # a slow disk's reread
        time.sleep(0.05)
        seen.append((len(offsets), service.pending))
        return reread(offsets)

    service._reread = slow_reread  # type: ignore[method-assign]  # a slower disk, same reads
    base = now_ms() + 800
    store.put_messages([_timer_message("t", base + i, bytes([i + 1])) for i in range(3)])
    assert len(wait_for_count(store, "t", 3, queue_id=1)) == 3
    assert seen and all(pending == 3 for _, pending in seen), seen


def test_should_deliver_a_time_in_the_past_at_once(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, _ = open_timer_store()
    store.put_message(_timer_message("t", now_ms() - 60_000))
    assert len(wait_for_count(store, "t", 1, timeout_s=5, queue_id=1)) == 1


def test_should_refuse_a_time_beyond_the_max_delay(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, _ = open_timer_store(max_delay_ms=10_000)
    result = store.put_message(_timer_message("t", now_ms() + 20_000))
    assert result.status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(_timer_message("t", now_ms() + 9_000)).ok
    assert len(read_all(store, TIMER_TOPIC)) == 1


def test_should_hold_a_send_back_to_a_retry_topic_by_its_delay_level(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, _ = open_timer_store()
    before = now_ms()
    retry = InboundMessage(
        "%RETRY%group-a", 0, b"again", {PROPERTY_DELAY: "1", "UNIQ_KEY": "u1"}, reconsume_times=1
    )
    assert store.put_message(retry).status is PutMessageStatus.PUT_OK
    assert read_all(store, "%RETRY%group-a") == []
    delivered = wait_for_count(store, "%RETRY%group-a", 1, timeout_s=10)
    assert [m.body for m in delivered] == [b"again"]
    assert delivered[0].store_timestamp_ms >= before + 1_000  # level 1: 1 s
    assert delivered[0].reconsume_times == 1
    assert PROPERTY_DELAY not in delivered[0].properties


def test_should_deliver_what_was_pending_after_a_restart_and_nothing_twice(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, service = open_timer_store()
    base = now_ms()
    store.put_message(_timer_message("t", base - 1, b"\x01"))  # due: delivered before the stop
    wait_for_count(store, "t", 1, queue_id=1)
    for index in range(2, 6):
        store.put_message(_timer_message("t", base + 600 + index, bytes([index])))
    service.stop()
    store.shutdown()
    checkpoint = store.config.data_dir.joinpath(*_CHECKPOINT)
    assert checkpoint.stat().st_mode & 0o777 == 0o600  # the store's file mode
    assert checkpoint.parent.stat().st_mode & 0o777 == 0o700
    store, _ = open_timer_store()
    delivered = wait_for_count(store, "t", 5, queue_id=1)
    assert [m.body for m in delivered] == [bytes([i]) for i in range(1, 6)]
    assert all(int(m.properties[PROPERTY_TIMER_OUT_MS]) <= m.store_timestamp_ms for m in delivered)


def test_should_not_deliver_again_what_was_put_back_after_the_last_checkpoint(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, service = open_timer_store()
    log_before = store.max_physical_offset
    for index in range(1, 4):
        store.put_message(_timer_message("t", now_ms() - 1, bytes([index])))
    assert len(wait_for_count(store, "t", 3, queue_id=1)) == 3
    service.stop()
    store.shutdown()
    # a crash right after the re-puts: the checkpoint still says none is delivered
    TimerCheckpoint(0, b"", log_before).save(store.config.data_dir.joinpath(*_CHECKPOINT))
    store, service = open_timer_store()
    store.put_message(_timer_message("t", now_ms() - 1, b"\x09"))
    delivered = wait_for_count(store, "t", 4, queue_id=1)
    assert [m.body for m in delivered] == [b"\x01", b"\x02", b"\x03", b"\x09"]
    assert service.delivered == 1


def test_should_hold_a_compressed_batch_plain_and_deliver_its_bodies(
    open_timer_store: Callable[..., TimerStore],
) -> None:
    store, _ = open_timer_store()
    store.topic_config.create_or_update(TopicConfig("orders", 2, 2))
    due = str(now_ms() + 200).encode()
    bodies = [b'{"order": %d, "status": "PAID", "note": "%s"}' % (i, b"x" * 30) for i in range(40)]
    plain = encode_batch(
        b"orders",
        bodies,
        properties=[
            b"TIMER_DELIVER_MS\x01" + due + b"\x02UNIQ_KEY\x01U%d\x02" % i for i in range(40)
        ],
        attributes=TIMER_FLAG,
    )
    packed = compress_batch(bytes(plain), CompressionType.ZSTD, min_body_bytes=0)
    assert len(packed) < len(plain)
    assert store.put_batch(packed, "orders", 1).status is PutMessageStatus.PUT_OK
    assert [m.body for m in read_all(store, TIMER_TOPIC)] == bodies  # held plain
    delivered = wait_for_count(store, "orders", 40, queue_id=1)
    assert [m.body for m in delivered] == bodies


def test_should_put_back_again_after_a_refusal_that_may_pass(
    open_timer_store: Callable[..., TimerStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, service = open_timer_store(retry_interval_ms=100)
    put_batch = store.put_batch
    refusals: list[str] = []

    def refuse_once(
        batch: bytes | bytearray | memoryview, topic: str, queue_id: int
    ) -> PutMessageResult:
        if topic == "t" and not refusals:
            refusals.append(topic)
            return PutMessageResult(PutMessageStatus.DISK_FULL)
        return put_batch(batch, topic, queue_id)

    due_ms = now_ms() + 300
    store.put_message(_timer_message("t", due_ms, b"\x07"))
    monkeypatch.setattr(store, "put_batch", refuse_once)  # the put-backs only
    delivered = wait_for_count(store, "t", 1, queue_id=1)
    assert [m.body for m in delivered] == [b"\x07"] and refusals == ["t"]
    assert delivered[0].store_timestamp_ms >= due_ms + 100  # after the retry interval
    assert service.delivered == 1 and service.pending == 0
