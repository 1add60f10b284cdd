"""The timer in a broker group's stores (the replication layer's part played by hand): only the
leader puts timer messages back, the follower holds them and the put-backs as replicated
batches, and a follower elected leader delivers the rest, none of the old leader's twice."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.store import MessageStore
from aeromq.broker.timer import TimerService
from tests.broker.store._group import commit, group_config, replicate

from .conftest import now_ms, read_all, wait_for_count
from .test_timer_store import _timer_message


class _Replication:
    """Copies the leader's log to the follower and sets both high watermarks, every 5 ms,
    on a thread of its own, until stopped."""

    def __init__(self, leader: MessageStore, *followers: MessageStore) -> None:
        self.leader, self.followers = leader, followers
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            for follower in self.followers:
                replicate(self.leader, follower)
            commit(self.leader, *self.followers)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


@pytest.fixture
def members(tmp_path: Path) -> Iterator[tuple[list[MessageStore], list[TimerService]]]:
    """Two started members, the first leading, each with its timer service."""
    stores = [MessageStore(group_config(tmp_path / name)) for name in ("a", "b")]
    services = [TimerService(store, max_delay_ms=60_000) for store in stores]
    for store, service in zip(stores, services, strict=True):
        store.start()
        service.start()
    stores[0].start_leading()
    yield stores, services
    for store, service in zip(stores, services, strict=True):
        service.stop()
        store.shutdown()


def test_should_deliver_from_the_leader_only_and_resume_on_a_new_leader(
    members: tuple[list[MessageStore], list[TimerService]],
) -> None:
    (leader, follower), (_, follower_service) = members
    replication = _Replication(leader, follower)
    try:
        base = now_ms()
        for index in range(1, 3):
            result = leader.put_message(_timer_message("t", base - 1, bytes([index])))
            assert result.ok
        for index in range(3, 5):
            leader.put_message(_timer_message("t", base + 700, bytes([index])))
        assert len(wait_for_count(leader, "t", 2, queue_id=1)) == 2
        assert len(wait_for_count(follower, "t", 2, queue_id=1)) == 2  # replicated put-backs
    finally:
        replication.stop()
    assert follower_service.delivered == 0 and follower_service.pending == 0
    leader.stop_leading()
    follower.start_leading()
    replication = _Replication(follower)
    try:
        delivered = wait_for_count(follower, "t", 4, queue_id=1)
        time.sleep(0.3)  # nothing more comes
        delivered = read_all(follower, "t", 1)
    finally:
        replication.stop()
    assert [m.body for m in delivered] == [b"\x01", b"\x02", b"\x03", b"\x04"]
    assert follower_service.delivered == 2  # the old leader's two were found in the log
    assert all(m.store_timestamp_ms >= base + 700 for m in delivered[2:])
