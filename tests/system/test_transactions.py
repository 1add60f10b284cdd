"""Transactional messages against a real broker process: a committed message visible once, a
rolled back one never; an unknown outcome resolved by the check-back (commit and rollback); the
producer SIGKILLed after its half message (a new producer of the group answers); the broker
SIGKILLed between the half message and its end (after the restart the check-back resolves it);
the official RocketMQ 5 client's transactions on the RocketMQ 5 endpoint (the client runs in a
process of its own: ``tests/rocketmq5/conftest.py``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq import (
    ConsumeFromWhere,
    DefaultLitePullConsumer,
    LitePullConsumerConfig,
    Message,
    MessageExt,
)
from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.producer import LocalTransactionState, TransactionProducer
from tests.rocketmq5.conftest import endpoint, official

_ARGS = (
    "--auto-create-topic", "true", "--default-queue-count", "2",
    "--ingress-udp-endpoint", "none", "--flush-interval", "50ms", "--index-enabled", "false",
    "--transaction-timeout", "500ms", "--transaction-check-interval", "500ms",
    "--transaction-check-max", "40", "--log-level", "WARNING",
)  # fmt: skip
COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW


class Listener:
    """Answers by the message body: ``execute`` for the local transaction, ``check`` later."""

    def __init__(
        self, execute: dict[bytes, LocalTransactionState], check: dict[bytes, LocalTransactionState]
    ) -> None:
        self.execute = execute
        self.check = check
        self.checked: list[bytes] = []

    def execute_local_transaction(self, message: Message, arg: object) -> LocalTransactionState:
        return self.execute.get(message.body, UNKNOW)

    def check_local_transaction(self, message_ext: MessageExt) -> LocalTransactionState:
        self.checked.append(message_ext.body)
        return self.check.get(message_ext.body, UNKNOW)


def _consume(
    broker: ServerProcess, topic: str, count: int, timeout_s: float = 20.0, quiet_s: float = 0.0
) -> list[MessageExt]:
    """The messages of ``topic`` from its start once ``count`` came (or after ``timeout_s``),
    then those of ``quiet_s`` more (a window for what must not come). The windows start once
    the consumer has started: a window of a second that included a loaded machine's start-up
    could end before the first poll, or with the first message not yet pulled."""
    config = LitePullConsumerConfig(
        consumer_group=f"check-{topic}-{time.monotonic_ns()}",
        endpoints=(broker.grpc_address,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
    )
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(topic, "*")
    found: list[MessageExt] = []
    with consumer:
        deadline = time.monotonic() + timeout_s
        while len(found) < count and time.monotonic() < deadline:
            found += consumer.poll(timeout_ms=100)
        deadline = time.monotonic() + quiet_s
        while time.monotonic() < deadline:
            found += consumer.poll(timeout_ms=100)
    return found


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker_process(tmp_path_factory.mktemp("txn") / "data", extra_args=_ARGS)
    yield process
    process.stop()


def test_should_show_a_committed_message_once_and_a_rolled_back_one_never(
    broker: ServerProcess,
) -> None:
    listener = Listener({b"commit": COMMIT, b"rollback": ROLLBACK}, {})
    with TransactionProducer("txn-ends", broker.grpc_address, listener) as producer:
        committed = producer.send_message_in_transaction(Message("txn-ends", b"commit"), arg=1)
        rolled = producer.send_message_in_transaction(Message("txn-ends", b"rollback"))
    assert committed.local_transaction_state is COMMIT
    assert rolled.local_transaction_state is ROLLBACK
    found = _consume(broker, "txn-ends", 1, quiet_s=1.0)  # and a second for one that never comes
    assert [m.body for m in found] == [b"commit"]
    [message] = found
    assert message.get_property("TRAN_PREPARED_QUEUE_OFFSET") == str(committed.queue_offset)
    assert message.get_property("UNIQ_KEY") == committed.msg_id
    assert listener.checked == []


def test_should_resolve_unknown_outcomes_by_the_check_back(broker: ServerProcess) -> None:
    listener = Listener({}, {b"later-commit": COMMIT, b"later-rollback": ROLLBACK})
    with TransactionProducer(
        "txn-checks", broker.grpc_address, listener, check_poll_ms=1_000
    ) as producer:
        for body in (b"later-commit", b"later-rollback"):
            sent = producer.send_message_in_transaction(Message("txn-checks", body))
            assert sent.local_transaction_state is UNKNOW
        # not visible before its check (which may come within the window on a loaded machine:
        # the transaction timeout is 500 ms)
        early = _consume(broker, "txn-checks", 1, timeout_s=0.2)
        assert all(message.body in listener.checked for message in early), early
        found = _consume(broker, "txn-checks", 1, timeout_s=20.0)
        assert [m.body for m in found] == [b"later-commit"]
        deadline = time.monotonic() + 10
        while producer.checks_answered < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert producer.checks_answered == 2
    assert sorted(set(listener.checked)) == [b"later-commit", b"later-rollback"]
    assert [m.body for m in _consume(broker, "txn-checks", 1, quiet_s=1.0)] == [b"later-commit"]


_CHILD = textwrap.dedent(
    """
    import sys, time
    from aeromq import Message
    from aeromq.producer import LocalTransactionState, TransactionProducer

    class Unknown:
        def execute_local_transaction(self, message, arg):
            return LocalTransactionState.UNKNOW
        def check_local_transaction(self, message_ext):
            return LocalTransactionState.UNKNOW

    producer = TransactionProducer("txn-orphans", sys.argv[1], Unknown()).start()
    producer.send_message_in_transaction(Message("txn-orphans", b"orphan"))
    print("sent", flush=True)
    time.sleep(60)
    """
)


def test_should_let_a_new_producer_answer_for_one_killed_after_its_half_message(
    broker: ServerProcess,
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, broker.grpc_address], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "sent"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        if child.stdout is not None:
            child.stdout.close()
    listener = Listener({}, {b"orphan": COMMIT})
    with TransactionProducer("txn-orphans", broker.grpc_address, listener, check_poll_ms=1_000):
        found = _consume(broker, "txn-orphans", 1, timeout_s=20.0)
    assert [m.body for m in found] == [b"orphan"]
    assert b"orphan" in listener.checked


def test_should_end_and_check_back_the_official_clients_transactions(
    broker: ServerProcess,
) -> None:
    sent = official("transact", endpoint(broker), "txn-v2", "--commit", "c", "--rollback", "r",
                    "--check-commit", "uc", "--check-rollback", "ur")  # fmt: skip
    assert sent["checked"] == ["uc", "ur"]
    got = official("receive", endpoint(broker), "txn-v2", "v2-readers", 2)["messages"]
    assert sorted(m["body"] for m in got) == ["c", "uc"]
    assert sorted(m["id"] for m in got) == sorted([sent["ids"]["c"], sent["ids"]["uc"]])


def test_should_resolve_a_half_message_after_a_broker_sigkill(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    args = (*_ARGS, "--flush-mode", "SYNC")
    broker = start_broker_process(data_dir, extra_args=args)
    try:
        listener = Listener({}, {b"survivor": COMMIT})
        producer = TransactionProducer("txn-crash", broker.grpc_address, listener)
        with producer:
            producer.send_message_in_transaction(Message("txn-crash", b"survivor"))
            broker.kill()  # between the half message and its end
        broker = start_broker_process(data_dir, extra_args=args)
        with TransactionProducer("txn-crash", broker.grpc_address, listener, check_poll_ms=1_000):
            found = _consume(broker, "txn-crash", 1, timeout_s=20.0)
        assert [m.body for m in found] == [b"survivor"]
        assert [m.body for m in _consume(broker, "txn-crash", 1, quiet_s=1.0)] == [b"survivor"]
    finally:
        broker.stop()
