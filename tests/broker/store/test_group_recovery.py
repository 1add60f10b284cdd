"""A store in a broker group restarts with what it had: recovery dispatches only up to the
committed offset it persisted (the rest waits for the high watermark), queue offsets go on from
the whole log, and idempotent producers' retries are answered with their first result; the log
counts as flushed (and the fault suite's fsync ledger records it) only once its fsync returned."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from aeromq.broker.store import (
    FSYNC_LEDGER_ENV,
    FSYNC_LEDGER_FILE,
    MessageStore,
    PutMessageResult,
    PutMessageStatus,
)
from aeromq.broker.store._mapped_file import MappedFile
from tests.faults.disk import fsynced_offset

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


def test_should_cut_a_members_log_at_a_corrupt_batch_below_its_checkpoint(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = group_config(tmp_path / "member")
    store = MessageStore(config, clock_ms=clock)
    store.start()
    store.start_leading()
    first = append(store, [b"a", b"b"])
    second = append(store, [b"c"])
    append(store, [b"d"])
    store.set_high_watermark(store.max_physical_offset)
    store.flush()
    store._checkpoint(clean_shutdown=False)  # everything dispatched, as far as it says
    crash(store)
    segment = sorted((config.data_dir / "commitlog").iterdir())[0]
    with segment.open("r+b") as data:  # bit rot in the second batch's records, under its CRC
        data.seek(second.physical_offset + second.wrote_bytes - 2)
        data.write(b"\xff\xfe")
    with MessageStore(config, clock_ms=clock) as member:
        # the whole log checked: cut at the corrupt batch, never served; the rest is fetched
        assert member.max_physical_offset == first.physical_offset + first.wrote_bytes
        assert member.get_max_offset(TOPIC, 0) == 2
        got = member.get_messages(TOPIC, 0, 0, max_count=10)
        assert [m.body for m in got.messages] == [b"a", b"b"]


def test_should_record_each_fsync_of_the_log_for_the_fault_suite_when_asked_and_sync_at_start(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = group_config(tmp_path / "member")
    with MessageStore(config, clock_ms=clock) as store:
        store.start_leading()
        append(store, [b"a"])
        store.flush()
    assert not (config.data_dir / FSYNC_LEDGER_FILE).exists()  # off by default
    monkeypatch.setenv(FSYNC_LEDGER_ENV, "1")
    store = MessageStore(config, clock_ms=clock)
    store.start()
    store.start_leading()
    append(store, [b"b"])
    appended = store.max_physical_offset
    assert store.flush() == appended
    append(store, [b"c"])  # not fsynced
    crash(store)
    assert fsynced_offset(config.data_dir) == appended
    # a member's restart fsyncs what it recovered before it counts it durable (and acks it)
    with MessageStore(config, clock_ms=clock) as member:
        assert fsynced_offset(config.data_dir) == member.max_physical_offset > appended


def test_should_count_the_log_flushed_and_record_it_only_once_its_fsync_returned(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FSYNC_LEDGER_ENV, "1")
    disk = threading.Event()
    fsyncing = threading.Event()
    fsync = MappedFile.flush

    def slow_fsync(mapped: MappedFile) -> None:
        fsyncing.set()
        disk.wait(10)
        fsync(mapped)

    with MessageStore(group_config(tmp_path / "leader"), clock_ms=clock) as store:
        store.start_leading()
        before = store.flush()
        append(store, [b"a", b"b"])
        end = store.max_physical_offset
        monkeypatch.setattr(MappedFile, "flush", slow_fsync)
        flusher = threading.Thread(target=store.flush)  # as the leader's fsync thread does
        flusher.start()
        try:
            assert fsyncing.wait(10)
            time.sleep(0.02)
            # what the leader's high watermark takes as its own durable offset, and the ledger
            assert store.flushed_physical_offset == before < end
            assert fsynced_offset(store.config.data_dir) == before
        finally:
            disk.set()
            flusher.join(10)
        assert store.flushed_physical_offset == end
        assert fsynced_offset(store.config.data_dir) == end
