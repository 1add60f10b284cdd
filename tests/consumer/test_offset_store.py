from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from aeromq.client import BrokerUnavailableError, IllegalStateError, MessageQueue
from aeromq.consumer.offset_store import (
    LocalFileOffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from aeromq.consumer.testing import InMemoryBroker

GROUP = "g"
Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)


@pytest.fixture
def queues(broker: InMemoryBroker) -> list[MessageQueue]:
    return broker.create_topic("T", 2)


def test_should_read_minus_one_when_nothing_was_committed(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    store = RemoteBrokerOffsetStore(broker, GROUP)
    for read_type in ReadOffsetType:
        assert store.read_offset(Q0, read_type) == -1


def test_should_read_memory_first_then_the_broker(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.commit_offset(GROUP, Q0, 17)
    store = RemoteBrokerOffsetStore(broker, GROUP)
    assert store.read_offset(Q0, ReadOffsetType.READ_FROM_MEMORY) == -1
    assert store.read_offset(Q0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 17
    assert store.read_offset(Q0, ReadOffsetType.READ_FROM_MEMORY) == 17
    store.update_offset(Q0, 20)
    assert store.read_offset(Q0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 20
    assert store.read_offset(Q0, ReadOffsetType.READ_FROM_STORE) == 17


def test_should_persist_only_changed_offsets(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    store = RemoteBrokerOffsetStore(broker, GROUP)
    store.update_offset(Q0, 5)
    assert broker.committed_offset(GROUP, Q0) == -1
    store.persist_all([Q0, Q1])
    assert broker.committed_offset(GROUP, Q0) == 5
    assert broker.calls["commit_offset"] == 1
    store.persist_all([Q0, Q1])
    assert broker.calls["commit_offset"] == 1
    assert not store.is_dirty(Q0)


def test_should_persist_only_the_queues_asked_for(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    store = RemoteBrokerOffsetStore(broker, GROUP)
    store.update_offset(Q0, 5)
    store.update_offset(Q1, 6)
    store.persist(Q1)
    assert (broker.committed_offset(GROUP, Q0), broker.committed_offset(GROUP, Q1)) == (-1, 6)


def test_should_never_move_back_with_increase_only(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    store = RemoteBrokerOffsetStore(broker, GROUP)
    store.update_offset(Q0, 9)
    store.update_offset(Q0, 3, increase_only=True)
    assert store.offsets() == {Q0: 9}
    store.update_offset(Q0, 3)
    assert store.offsets() == {Q0: 3}


def test_should_keep_a_failed_offset_dirty_and_raise(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    store = RemoteBrokerOffsetStore(broker, GROUP)
    store.update_offset(Q0, 5)
    store.update_offset(Q1, 6)
    broker.fail_next("commit_offset", BrokerUnavailableError("down"))
    with pytest.raises(BrokerUnavailableError):
        store.persist_all([Q0, Q1])
    assert store.is_dirty(Q0)
    assert broker.committed_offset(GROUP, Q1) == 6
    store.persist_all([Q0, Q1])
    assert broker.committed_offset(GROUP, Q0) == 5


def test_should_forget_a_removed_queue(broker: InMemoryBroker, queues: list[MessageQueue]) -> None:
    store = RemoteBrokerOffsetStore(broker, GROUP)
    store.update_offset(Q0, 5)
    store.remove_offset(Q0)
    store.persist_all([Q0])
    assert store.offsets() == {}
    assert broker.committed_offset(GROUP, Q0) == -1


def test_should_send_the_last_commit_with_the_release_in_one_call(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    for queue in queues:
        assert broker.acquire_queue(GROUP, queue, "me").granted
    store = RemoteBrokerOffsetStore(broker, GROUP)
    store.update_offset(Q0, 12)
    store.release(Q0, "me")
    store.release(Q1, "me")  # nothing committed: a release only
    assert broker.calls["release_queue"] == 2 and broker.calls["commit_offset"] == 0
    assert broker.committed_offset(GROUP, Q0) == 12 and not store.is_dirty(Q0)
    assert broker.committed_offset(GROUP, Q1) == -1
    assert [broker.queue_holder(GROUP, q) for q in queues] == ["", ""]


def test_should_keep_a_commit_dirty_when_its_release_fails(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    store = RemoteBrokerOffsetStore(broker, GROUP)
    store.update_offset(Q0, 5)
    broker.fail_next("release_queue", BrokerUnavailableError("down"))
    with pytest.raises(BrokerUnavailableError):
        store.release(Q0, "me")
    assert store.is_dirty(Q0) and broker.committed_offset(GROUP, Q0) == -1


def test_should_write_and_load_the_local_file(shm_dir: Path) -> None:
    store = LocalFileOffsetStore(shm_dir, "127.0.0.1@DEFAULT", GROUP)
    assert store.path == shm_dir / "127.0.0.1@DEFAULT" / GROUP / "offsets.json"
    store.load()
    assert store.offsets() == {}
    store.update_offset(Q0, 11)
    store.update_offset(Q1, 12)
    store.persist_all([Q0])
    document = json.loads(store.path.read_text())
    assert document["consumer_group"] == GROUP
    assert {(e["queue_id"], e["offset"]) for e in document["offsets"]} == {(0, 11), (1, 12)}
    again = LocalFileOffsetStore(shm_dir, "127.0.0.1@DEFAULT", GROUP)
    again.load()
    assert again.offsets() == {Q0: 11, Q1: 12}
    assert again.read_offset(Q1, ReadOffsetType.READ_FROM_STORE) == 12


def test_should_leave_no_temporary_file_after_a_write(shm_dir: Path) -> None:
    store = LocalFileOffsetStore(shm_dir, "c", GROUP)
    for offset in range(5):
        store.update_offset(Q0, offset)
        store.persist(Q0)
    assert [p.name for p in store.path.parent.iterdir()] == ["offsets.json"]


def test_should_refuse_a_corrupt_local_file(shm_dir: Path) -> None:
    store = LocalFileOffsetStore(shm_dir, "c", GROUP)
    store.path.parent.mkdir(parents=True)
    store.path.write_text("{not json")
    with pytest.raises(IllegalStateError, match="corrupt"):
        store.load()


class SlowFirstUpdate(InMemoryBroker):
    """The first offset update blocks until released: a persist in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = threading.Event()
        self.release = threading.Event()
        self.first = True

    def commit_offset(self, consumer_group: str, queue: MessageQueue, offset: int) -> None:
        if self.first:
            self.first = False
            self.in_flight.set()
            assert self.release.wait(5)
        super().commit_offset(consumer_group, queue, offset)


def test_should_never_let_an_older_persist_land_after_a_newer_one() -> None:
    broker = SlowFirstUpdate()
    try:
        broker.create_topic("T", 1)
        store = RemoteBrokerOffsetStore(broker, GROUP)
        store.update_offset(Q0, 100)
        timer = threading.Thread(target=store.persist_all, args=([Q0],))
        timer.start()
        assert broker.in_flight.wait(5)
        store.update_offset(Q0, 150)
        dropping = threading.Thread(target=store.persist, args=(Q0,))
        dropping.start()
        time.sleep(0.05)
        broker.release.set()
        timer.join(5)
        dropping.join(5)
        assert broker.committed_offset(GROUP, Q0) == 150
    finally:
        broker.shutdown()
