"""Transactions against a real store on disk: half messages held in the half topic, ends
(commit, rollback, twice, refused), check-backs, discards after the maximum, a restart."""

from __future__ import annotations

from collections.abc import Callable

from aeromq.broker.store import PutMessageStatus
from aeromq.broker.transaction import HALF_TOPIC, OP_TOPIC, Resolution
from aeromq.common import ResponseCode

from .conftest import TxnStore, half_message, read_all, wait_until


def test_should_hold_a_half_message_until_commit_then_put_it_to_its_queue_once(
    open_txn_store: Callable[..., TxnStore],
) -> None:
    store, service = open_txn_store()
    result = store.put_message(half_message(b"h1"))
    assert result.status is PutMessageStatus.PUT_OK
    assert read_all(store, "orders", 1) == []
    [half] = read_all(store, HALF_TOPIC)
    assert half.queue_offset == result.queue_offset
    assert (half.properties["REAL_TOPIC"], half.properties["REAL_QID"]) == ("orders", "1")
    assert half.sys_flag == 0
    assert service.end(result.queue_offset, "6831", Resolution.COMMIT) == (ResponseCode.SUCCESS, "")
    assert service.end(result.queue_offset, "6831", Resolution.COMMIT)[0] is ResponseCode.SUCCESS
    [message] = read_all(store, "orders", 1)
    assert message.body == b"h1"
    assert message.properties["TRAN_PREPARED_QUEUE_OFFSET"] == str(result.queue_offset)
    assert "REAL_TOPIC" not in message.properties
    [op] = read_all(store, OP_TOPIC)
    assert (op.body, op.properties["TRAN_OUTCOME"]) == (str(result.queue_offset).encode(), "COMMIT")
    assert (service.committed, service.pending) == (1, 0)


def test_should_drop_a_rolled_back_half_message_and_refuse_a_wrong_end(
    open_txn_store: Callable[..., TxnStore],
) -> None:
    store, service = open_txn_store()
    offset = store.put_message(half_message(b"h2")).queue_offset
    code, text = service.end(offset, "not-its-id", Resolution.COMMIT)
    assert code is ResponseCode.INVALID_PARAMETER and "another" in text
    assert service.end(offset + 5, "", Resolution.COMMIT)[0] is ResponseCode.INVALID_PARAMETER
    assert service.end(offset, "6832", Resolution.ROLLBACK)[0] is ResponseCode.SUCCESS
    assert service.end(offset, "6832", Resolution.COMMIT)[0] is ResponseCode.SUCCESS  # ended
    assert read_all(store, "orders", 1) == []
    assert [op.properties["TRAN_OUTCOME"] for op in read_all(store, OP_TOPIC)] == ["ROLLBACK"]
    assert service.rolled_back == 1


def test_should_check_back_a_half_message_then_discard_it_after_the_maximum(
    open_txn_store: Callable[..., TxnStore],
) -> None:
    store, service = open_txn_store(timeout_ms=100, check_max=2, check_interval_ms=100)
    offset = store.put_message(half_message(b"h3")).queue_offset
    wait_until(lambda: service.checks >= 1, "a check")
    [check] = service.mailbox.take("g", 10)
    assert (check.topic, check.queue_id, check.half.queue_offset) == ("orders", 1, offset)
    assert check.check_times == 1
    assert service.mailbox.take("other-group", 10) == []
    wait_until(lambda: service.discarded == 1, "the discard")
    assert service.checks == 2
    assert [op.properties["TRAN_OUTCOME"] for op in read_all(store, OP_TOPIC)] == ["DISCARD"]
    assert read_all(store, "orders", 1) == []
    assert service.pending == 0


def test_should_check_back_after_a_restart_what_was_not_ended_before(
    open_txn_store: Callable[..., TxnStore],
) -> None:
    store, service = open_txn_store(timeout_ms=100, check_interval_ms=100)
    ended = store.put_message(half_message(b"h4")).queue_offset
    left = store.put_message(half_message(b"h5")).queue_offset
    assert service.end(ended, "", Resolution.COMMIT)[0] is ResponseCode.SUCCESS
    service.stop()
    store.shutdown()
    store, service = open_txn_store(timeout_ms=100, check_interval_ms=100)
    assert service.pending == 1
    wait_until(lambda: service.checks >= 1, "a check after the restart")
    checked = {check.half.queue_offset for check in service.mailbox.take("g", 10)}
    assert checked == {left}
    assert service.end(left, "", Resolution.COMMIT)[0] is ResponseCode.SUCCESS
    assert [m.body for m in read_all(store, "orders", 1)] == [b"h4", b"h5"]
