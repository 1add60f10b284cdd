"""Transactions in a broker group's stores (the replication layer's part played by hand): only
the leader ends and checks back; the follower holds the half and op records as replicated
batches and, elected leader, checks back what is still without an end, and only that."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.store import MessageStore
from aeromq.broker.transaction import HALF_TOPIC, OP_TOPIC, Resolution, TransactionService
from aeromq.common import ResponseCode
from tests.broker.store._group import Replication, group_config

from .conftest import half_message, read_all, wait_until


@pytest.fixture
def members(tmp_path: Path) -> Iterator[tuple[list[MessageStore], list[TransactionService]]]:
    """Two started members, the first leading, each with its transaction service."""
    stores = [MessageStore(group_config(tmp_path / name)) for name in ("a", "b")]
    services = [
        TransactionService(store, timeout_ms=100, check_interval_ms=100, checkpoint_interval_ms=20)
        for store in stores
    ]
    for store, service in zip(stores, services, strict=True):
        store.start()
        service.start()
    stores[0].start_leading()
    yield stores, services
    for store, service in zip(stores, services, strict=True):
        service.stop()
        store.shutdown()


def test_should_end_and_check_back_on_the_leader_only_then_on_a_new_leader(
    members: tuple[list[MessageStore], list[TransactionService]],
) -> None:
    (leader, follower), (leader_service, follower_service) = members
    wait_until(lambda: leader_service.loaded, "the leader loaded")
    replication = Replication(leader, follower)
    try:
        ended = leader.put_message(half_message(b"e")).queue_offset
        left = leader.put_message(half_message(b"l")).queue_offset
        assert leader_service.end(ended, "", Resolution.COMMIT)[0] is ResponseCode.SUCCESS
        wait_until(lambda: leader_service.checks >= 1, "the leader's check")
        wait_until(lambda: len(read_all(follower, OP_TOPIC)) == 1, "the op record replicated")
        assert [m.body for m in read_all(follower, "orders", 1)] == [b"e"]
        assert len(read_all(follower, HALF_TOPIC)) == 2
        code, _ = follower_service.end(left, "", Resolution.COMMIT)
        assert code is ResponseCode.NOT_LEADER
    finally:
        replication.stop()
    assert follower_service.checks == 0 and follower_service.mailbox.take("g", 10) == []
    leader.stop_leading()
    follower.start_leading()
    replication = Replication(follower)
    try:
        wait_until(lambda: follower_service.checks >= 1, "the new leader's check")
        checked = {check.half.queue_offset for check in follower_service.mailbox.take("g", 10)}
        assert checked == {left}
        assert follower_service.end(left, "", Resolution.ROLLBACK)[0] is ResponseCode.SUCCESS
    finally:
        replication.stop()
    assert [m.body for m in read_all(follower, "orders", 1)] == [b"e"]
