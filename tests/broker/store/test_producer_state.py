"""Idempotent producers on a single broker: a retry of one of the last 5 batches is answered
with its first result and not stored again, a sequence gap is OUT_OF_ORDER_SEQUENCE, the state
survives a restart and a crash (rebuilt from the log), idle producers are forgotten, and
batches without a producer state are stored as before."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aeromq.broker.store import FlushMode, MessageStore, PutMessageResult, PutMessageStatus
from aeromq.broker.store._producer_state import (
    OUT_OF_ORDER,
    WINDOW,
    ProducerStateTable,
    StoredBatch,
)
from aeromq.common.record_batch import MAX_SEQUENCE, ProducerState

from ._group import PRODUCER, TOPIC, batch
from .conftest import ManualClock, crash, small_config

OpenStore = Callable[..., MessageStore]


def _stored(sequence: int, count: int, at: int = 0) -> StoredBatch:
    return StoredBatch(sequence, count, at, at, 100, 1)


def test_should_take_any_first_batch_then_only_the_next_sequence() -> None:
    table = ProducerStateTable()
    state = ProducerState(PRODUCER, 40, 0)
    assert table.check(state, TOPIC, 0, 3) is None
    table.record(state, TOPIC, 0, _stored(40, 3))
    assert table.check(ProducerState(PRODUCER, 43, 0), TOPIC, 0, 1) is None
    assert table.check(ProducerState(PRODUCER, 44, 0), TOPIC, 0, 1) is OUT_OF_ORDER
    assert table.check(ProducerState(PRODUCER, 41, 0), TOPIC, 0, 1) is OUT_OF_ORDER
    assert table.check(ProducerState(PRODUCER, 99, 0), TOPIC, 1, 1) is None  # another queue


def test_should_find_a_duplicate_among_the_last_five_batches_only() -> None:
    table = ProducerStateTable()
    for n in range(WINDOW + 1):
        table.record(ProducerState(PRODUCER, 2 * n, 0), TOPIC, 0, _stored(2 * n, 2, 100 * n))
    assert table.check(ProducerState(PRODUCER, 0, 0), TOPIC, 0, 2) is OUT_OF_ORDER
    for n in range(1, WINDOW + 1):
        assert table.check(ProducerState(PRODUCER, 2 * n, 0), TOPIC, 0, 2) == _stored(
            2 * n, 2, 100 * n
        )
    assert table.check(ProducerState(PRODUCER, 2, 0), TOPIC, 0, 3) is OUT_OF_ORDER


def test_should_wrap_sequences_and_start_a_new_epoch_over() -> None:
    table = ProducerStateTable()
    table.record(
        ProducerState(PRODUCER, MAX_SEQUENCE - 1, 0), TOPIC, 0, _stored(MAX_SEQUENCE - 1, 2)
    )
    assert table.check(ProducerState(PRODUCER, 0, 0), TOPIC, 0, 1) is None
    assert table.check(ProducerState(PRODUCER, 500, 1), TOPIC, 0, 1) is None
    table.record(ProducerState(PRODUCER, 500, 1), TOPIC, 0, _stored(500, 1))
    assert table.check(ProducerState(PRODUCER, 0, 0), TOPIC, 0, 1) is OUT_OF_ORDER


def test_should_forget_producers_idle_past_the_cutoff_and_round_trip_a_snapshot(
    tmp_path: Path,
) -> None:
    table = ProducerStateTable()
    table.record(ProducerState(1, 0, 0), TOPIC, 0, StoredBatch(0, 1, 0, 0, 80, 1_000))
    table.record(ProducerState(2, 0, 3), TOPIC, 1, StoredBatch(0, 1, 80, 0, 80, 5_000))
    path = tmp_path / "producer_state"
    table.save(path, 160)
    snapshot = ProducerStateTable.load(path)
    assert snapshot is not None and snapshot.offset == 160 and len(snapshot.table) == 2
    assert snapshot.table.check(ProducerState(2, 0, 3), TOPIC, 1, 1) == StoredBatch(
        0, 1, 80, 0, 80, 5_000
    )
    assert table.expire(2_000) == 1 and len(table) == 1


def _put(
    store: MessageStore, sequence: int, bodies: list[bytes], queue_id: int = 0
) -> PutMessageResult:
    return store.put_batch(batch(bodies, sequence=sequence), TOPIC, queue_id)


def test_should_answer_a_retry_with_the_first_result_without_storing_it_again(
    open_store: OpenStore,
) -> None:
    store = open_store()
    first = _put(store, 0, [b"a", b"b"])
    second = _put(store, 2, [b"c"])
    end = store.max_physical_offset
    again = _put(store, 0, [b"a", b"b"])
    assert again.status is PutMessageStatus.PUT_OK
    assert (again.queue_offset, again.physical_offset, again.message_ids) == (
        first.queue_offset,
        first.physical_offset,
        first.message_ids,
    )
    assert _put(store, 2, [b"c"]).message_ids == second.message_ids
    assert store.max_physical_offset == end and store.get_max_offset(TOPIC, 0) == 3


def test_should_refuse_a_sequence_gap(open_store: OpenStore) -> None:
    store = open_store()
    assert _put(store, 0, [b"a"]).ok
    gap = _put(store, 5, [b"b"])
    assert gap.status is PutMessageStatus.OUT_OF_ORDER_SEQUENCE
    assert store.get_max_offset(TOPIC, 0) == 1
    assert _put(store, 1, [b"b"]).ok


def test_should_store_batches_without_a_producer_state_as_before(open_store: OpenStore) -> None:
    store = open_store()
    plain = batch([b"a"])
    first = store.put_batch(plain, TOPIC, 0)
    again = store.put_batch(plain, TOPIC, 0)
    assert (first.queue_offset, again.queue_offset) == (0, 1)
    assert len(store.producer_states) == 0


def test_should_answer_a_retry_with_the_first_result_after_a_restart(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = small_config(tmp_path / "store")
    with MessageStore(config, clock_ms=clock) as store:
        first = _put(store, 0, [b"a", b"b"], queue_id=1)
        _put(store, 2, [b"c"], queue_id=1)
    assert (tmp_path / "store" / "producer_state").exists()
    with MessageStore(config, clock_ms=clock) as store:
        again = _put(store, 0, [b"a", b"b"], queue_id=1)
        assert again.message_ids == first.message_ids
        assert store.get_max_offset(TOPIC, 1) == 3
        assert _put(store, 3, [b"d"], queue_id=1).queue_offset == 3


def test_should_rebuild_the_producer_state_from_the_log_after_a_crash(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = small_config(tmp_path / "store")
    store = MessageStore(config, clock_ms=clock)
    store.start()
    store.flush()  # a checkpoint before the idempotent batches: they are only in the log
    first = _put(store, 0, [b"a"])
    _put(store, 1, [b"b" * 3000])
    crash(store)
    with MessageStore(config, clock_ms=clock) as store:
        assert _put(store, 0, [b"a"]).message_ids == first.message_ids
        assert _put(store, 7, [b"x"]).status is PutMessageStatus.OUT_OF_ORDER_SEQUENCE
        assert store.get_max_offset(TOPIC, 0) == 2


def test_should_forget_an_idle_producer(open_store: OpenStore, clock: ManualClock) -> None:
    store = open_store(producer_expiry_ms=60_000)
    assert _put(store, 0, [b"a"]).ok
    clock.advance(61_000)
    store._expire_producers()
    assert len(store.producer_states) == 0
    assert _put(store, 900, [b"b"]).ok  # a forgotten producer starts anew


@pytest.mark.parametrize("flush_mode", [FlushMode.ASYNC, FlushMode.SYNC])
def test_should_answer_a_retry_through_put_batch_async(
    open_store: OpenStore, flush_mode: FlushMode
) -> None:
    store = open_store(flush_mode=flush_mode)
    answers: list[PutMessageResult] = []
    store.put_batch_async(batch([b"a"], sequence=0), TOPIC, 0, answers.append)
    store.put_batch_async(batch([b"a"], sequence=0), TOPIC, 0, answers.append)
    deadline = time.monotonic() + 10
    while len(answers) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert [(a.status, a.queue_offset) for a in answers] == [(PutMessageStatus.PUT_OK, 0)] * 2
    assert store.get_max_offset(TOPIC, 0) == 1


def _second_put_ahead(open_store: OpenStore) -> tuple[MessageStore, list[str]]:
    """A store whose queue 0 has its file and the producer's first batch (the next put goes
    the native way), and the arrivals told since, as ``"arrival END"``."""
    store = open_store()
    store.put_batch(batch([b"first"], sequence=0), TOPIC, 0)
    events: list[str] = []
    store.add_arrival_listener(lambda topic, queue_id, end: events.append(f"arrival {end}"))
    return store, events


def test_should_answer_an_async_put_before_recording_it_and_telling_its_arrival(
    open_store: OpenStore,
) -> None:
    # ASYNC flush: the result is final as appended, so the callback (a send's answer) runs
    # before the producer's state is recorded and before the arrival listeners are told; the
    # batch is readable and its key findable by then
    store, events = _second_put_ahead(open_store)

    def answered(result: PutMessageResult) -> None:
        assert store.get_max_offset(TOPIC, 0) == 2  # in its queue
        assert store.query_messages_by_key(TOPIC, "key-1")[0].body == b"a"  # found by its key
        retry = ProducerState(PRODUCER, 1, 0)
        assert store.producer_states.check(retry, TOPIC, 0, 1) is None  # recorded after
        events.append(f"answer {result.status.name} {result.queue_offset}")

    store.put_batch_async(batch([b"a"], sequence=1, keys="key-1"), TOPIC, 0, answered)
    assert events == ["answer PUT_OK 1", "arrival 2"]
    answers: list[PutMessageResult] = []
    store.put_batch_async(batch([b"a"], sequence=1, keys="key-1"), TOPIC, 0, answers.append)
    assert [(a.status, a.queue_offset) for a in answers] == [(PutMessageStatus.PUT_OK, 1)]


def test_should_record_a_producers_batch_whose_async_callback_raised(
    open_store: OpenStore,
) -> None:
    # the append's bookkeeping is done before the callback's error is raised: a retry of
    # the batch is answered as the duplicate it is, not stored again, and the arrival told
    store, arrivals = _second_put_ahead(open_store)

    def failing(_: PutMessageResult) -> None:
        raise RuntimeError("the answer could not be made")

    with pytest.raises(RuntimeError, match="could not be made"):
        store.put_batch_async(batch([b"a"], sequence=1), TOPIC, 0, failing)
    assert arrivals == ["arrival 2"]
    answers: list[PutMessageResult] = []
    store.put_batch_async(batch([b"a"], sequence=1), TOPIC, 0, answers.append)
    assert [(a.status, a.queue_offset) for a in answers] == [(PutMessageStatus.PUT_OK, 1)]
    assert store.get_max_offset(TOPIC, 0) == 2
