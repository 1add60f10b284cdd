"""A store in a broker group restarts with what it had: recovery dispatches only up to the
committed offset it persisted (the rest waits for the high watermark), queue offsets go on from
the whole log, and idempotent producers' retries are answered with their first result."""

from __future__ import annotations

from pathlib import Path

from aeromq.broker.store import MessageStore, PutMessageResult, PutMessageStatus

from ._group import TOPIC, append, batch, commit, group_config, replicate
from .conftest import ManualClock, crash, small_config


def test_should_dispatch_at_start_only_up_to_the_persisted_committed_offset(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = group_config(tmp_path / "leader")
    store = MessageStore(config, clock_ms=clock)
    store.start()
    store.start_leading()
    first = append(store, [b"a", b"b"])
    store.set_high_watermark(first.physical_offset + first.wrote_bytes)
    store._checkpoint(clean_shutdown=False)
    second = append(store, [b"c"])
    store.set_high_watermark(second.physical_offset + second.wrote_bytes)  # not persisted
    append(store, [b"d"])  # never committed
    assert store.get_max_offset(TOPIC, 0) == 3
    crash(store)
    with MessageStore(config, clock_ms=clock) as store:
        assert store.committed_offset == first.physical_offset + first.wrote_bytes
        assert store.get_max_offset(TOPIC, 0) == 2  # the rest waits for the watermark
        assert store.max_physical_offset > store.committed_offset
        store.set_high_watermark(store.max_physical_offset)
        got = store.get_messages(TOPIC, 0, 0, max_count=10)
        assert [m.body for m in got.messages] == [b"a", b"b", b"c", b"d"]


def test_should_go_on_with_queue_offsets_from_the_whole_log_after_a_restart(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = group_config(tmp_path / "leader")
    with MessageStore(config, clock_ms=clock) as store:
        store.start_leading()
        append(store, [b"a"] * 3)
        store.set_high_watermark(store.max_physical_offset)
        append(store, [b"b"] * 2)  # appended, not committed
    with MessageStore(config, clock_ms=clock) as store:
        assert store.get_max_offset(TOPIC, 0) == 3
        store.start_leading()
        assert append(store, [b"c"]).queue_offset == 5  # no offset given twice


def test_should_answer_a_retry_with_its_first_result_after_a_restart(
    tmp_path: Path, clock: ManualClock
) -> None:
    leader_config = group_config(tmp_path / "leader")
    follower_config = group_config(tmp_path / "follower")
    leader = MessageStore(leader_config, clock_ms=clock)
    follower = MessageStore(follower_config, clock_ms=clock)
    leader.start()
    follower.start()
    leader.start_leading()
    first = append(leader, [b"x", b"y"], sequence=0)
    append(leader, [b"z"], sequence=2)
    replicate(leader, follower)
    commit(leader, follower)
    leader.shutdown()
    crash(follower)  # the follower's producer state is only in its log
    with MessageStore(follower_config, clock_ms=clock) as member:
        member.start_leading()  # the follower is the new leader
        answers: list[PutMessageResult] = []
        member.put_batch_async(batch([b"x", b"y"], sequence=0), TOPIC, 0, answers.append)
        assert answers == []  # its crash lost the committed offset: the group's comes again
        member.set_high_watermark(member.max_physical_offset)
        assert [a.status for a in answers] == [PutMessageStatus.PUT_OK]
        assert answers[0].message_ids == first.message_ids
        assert member.get_max_offset(TOPIC, 0) == 3


def test_should_take_a_single_brokers_log_as_committed(tmp_path: Path, clock: ManualClock) -> None:
    data_dir = tmp_path / "store"
    with MessageStore(small_config(data_dir), clock_ms=clock) as single:
        single.put_batch(batch([b"a", b"b"]), TOPIC, 0)
    with MessageStore(group_config(data_dir), clock_ms=clock) as member:
        assert member.committed_offset == member.max_physical_offset > 0
        assert member.get_max_offset(TOPIC, 0) == 2
        member.start_leading()
        assert append(member, [b"c"]).queue_offset == 2
