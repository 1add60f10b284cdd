"""A store in a broker group as its leader: puts answered once the high watermark passes them
(or REPLICATION_TIMEOUT, or the status leadership's loss gives), nothing above the committed
offset visible to gets, max offsets, arrivals or key lookups, queue offsets given at append."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker import BrokerStateError, CorruptRecordError
from aeromq.broker.store import (
    GetMessageStatus,
    MessageStore,
    PutMessageResult,
    PutMessageStatus,
)

from ._group import TOPIC, batch, group_config
from .conftest import ManualClock, small_config


@pytest.fixture
def leader(tmp_path: Path, clock: ManualClock) -> Iterator[MessageStore]:
    store = MessageStore(group_config(tmp_path / "leader"), clock_ms=clock)
    store.start()
    store.start_leading()
    yield store
    store.shutdown()


def _put(
    store: MessageStore, bodies: list[bytes], queue_id: int = 0, *, keys: str | None = None
) -> tuple[PutMessageResult, list[PutMessageResult]]:
    """The result as appended, and the list its final answer goes to."""
    answers: list[PutMessageResult] = []
    appended = store.put_batch_async(batch(bodies, keys=keys), TOPIC, queue_id, answers.append)
    return appended, answers


def test_should_answer_a_put_only_once_the_high_watermark_passes_it(leader: MessageStore) -> None:
    appended, answers = _put(leader, [b"a", b"b"])
    assert appended.status is PutMessageStatus.PUT_OK and answers == []
    end = appended.physical_offset + appended.wrote_bytes
    assert leader.set_high_watermark(end - 1) == end - 1 and answers == []
    leader.set_high_watermark(end)
    assert [a.status for a in answers] == [PutMessageStatus.PUT_OK]
    assert leader.committed_offset == end


def test_should_make_a_put_readable_before_answering_it(leader: MessageStore) -> None:
    seen_max_offsets: list[int] = []
    appended = leader.put_batch_async(
        batch([b"a"]), TOPIC, 0, lambda _: seen_max_offsets.append(leader.get_max_offset(TOPIC, 0))
    )
    leader.set_high_watermark(appended.physical_offset + appended.wrote_bytes)
    assert seen_max_offsets == [1]  # a pull after the answer finds it


def test_should_show_nothing_above_the_committed_offset(leader: MessageStore) -> None:
    arrivals: list[tuple[str, int, int]] = []
    leader.add_arrival_listener(lambda t, q, m: arrivals.append((t, q, m)))
    first, _ = _put(leader, [b"one"], keys="k1")
    second, _ = _put(leader, [b"two"], keys="k2")
    assert leader.get_max_offset(TOPIC, 0) == 0 and arrivals == []
    assert leader.get_batches(TOPIC, 0, 0).status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
    assert leader.query_messages_by_key(TOPIC, "k1") == []
    with pytest.raises(CorruptRecordError):
        leader.look_message_by_offset(first.physical_offset)
    leader.set_high_watermark(first.physical_offset + first.wrote_bytes)
    assert leader.get_max_offset(TOPIC, 0) == 1 and arrivals == [(TOPIC, 0, 1)]
    got = leader.get_messages(TOPIC, 0, 0, max_count=10)
    assert [m.body for m in got.messages] == [b"one"]
    assert [m.body for m in leader.query_messages_by_key(TOPIC, "k1")] == [b"one"]
    assert leader.query_messages_by_key(TOPIC, "k2") == []
    assert leader.look_message_by_offset(first.physical_offset).body == b"one"
    assert second.queue_offset == 1  # given at append, apart from the queue's end


def test_should_wake_a_long_poll_when_committed_not_when_appended(leader: MessageStore) -> None:
    woke: list[bool] = []
    waiter = threading.Thread(
        target=lambda: woke.append(leader.wait_for_message(TOPIC, 0, 0, 3_000))
    )
    waiter.start()
    appended, _ = _put(leader, [b"x"])
    time.sleep(0.1)
    assert woke == []
    leader.set_high_watermark(appended.physical_offset + appended.wrote_bytes)
    waiter.join(5)
    assert woke == [True]


def test_should_refuse_puts_unless_leading(tmp_path: Path) -> None:
    with MessageStore(group_config(tmp_path / "member")) as store:
        appended, answers = _put(store, [b"x"])
        assert appended.status is PutMessageStatus.NOT_LEADER
        assert [a.status for a in answers] == [PutMessageStatus.NOT_LEADER]
        assert store.max_physical_offset == 0
        store.start_leading()
        assert _put(store, [b"x"])[0].ok
        assert store.stop_leading() == 1
        assert _put(store, [b"y"])[0].status is PutMessageStatus.NOT_LEADER


def test_should_fail_waiting_puts_when_leadership_is_lost(leader: MessageStore) -> None:
    _, answers = _put(leader, [b"x"])
    _, more = _put(leader, [b"y"])
    assert leader.fail_uncommitted(PutMessageStatus.NOT_LEADER) == 2
    assert [a.status for a in answers + more] == [PutMessageStatus.NOT_LEADER] * 2


def test_should_time_out_a_put_the_group_does_not_commit(tmp_path: Path) -> None:
    config = group_config(tmp_path / "leader", replication_timeout_ms=100)
    with MessageStore(config) as store:
        store.start_leading()
        began = time.monotonic()
        result = store.put_batch(batch([b"x"]), TOPIC, 0)
        assert result.status is PutMessageStatus.REPLICATION_TIMEOUT
        assert time.monotonic() - began < 3


def test_should_block_put_batch_until_committed(leader: MessageStore) -> None:
    def commit_soon() -> None:
        time.sleep(0.05)
        leader.set_high_watermark(leader.max_physical_offset)

    thread = threading.Thread(target=commit_soon)
    thread.start()
    result = leader.put_batch(batch([b"x"]), TOPIC, 2)
    thread.join()
    assert result.status is PutMessageStatus.PUT_OK and leader.get_max_offset(TOPIC, 2) == 1


def test_should_give_queue_offsets_at_append_across_queue_files(leader: MessageStore) -> None:
    appended = [_put(leader, [b"m"] * 7)[0] for _ in range(6)]  # 42 entries, 16 a file
    assert [a.queue_offset for a in appended] == [0, 7, 14, 21, 28, 35]
    leader.set_high_watermark(leader.max_physical_offset)
    assert leader.get_max_offset(TOPIC, 0) == 42
    got = leader.get_messages(TOPIC, 0, 30, max_count=20)
    assert len(got.messages) == 12 and got.messages[0].queue_offset == 30


def test_should_never_lower_the_committed_offset_nor_pass_the_log_end(leader: MessageStore) -> None:
    appended, _ = _put(leader, [b"x"])
    end = appended.physical_offset + appended.wrote_bytes
    assert leader.set_high_watermark(end + 10_000) == end
    assert leader.set_high_watermark(0) == end


def test_should_refuse_the_metadata_topic_through_a_put(leader: MessageStore) -> None:
    result = leader.put_batch_async(
        batch([b"x"], topic="%AEROMQ_META%"), "%AEROMQ_META%", 0, lambda r: None
    )
    assert result.status is PutMessageStatus.MESSAGE_ILLEGAL


def test_should_refuse_group_calls_on_a_single_broker(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path / "single")) as store:
        for call in (
            lambda: store.set_high_watermark(0),
            store.start_leading,
            lambda: store.append_replicated(0, b""),
            lambda: store.truncate_to(0),
        ):
            with pytest.raises(BrokerStateError):
                call()
        assert store.leading and store.committed_offset == store.max_physical_offset


def test_should_flush_the_log_only_and_return_how_far_it_is_durable(leader: MessageStore) -> None:
    appended, _ = _put(leader, [b"x"])
    assert (
        leader.flush()
        == leader.flushed_physical_offset
        == appended.physical_offset + appended.wrote_bytes
    )
