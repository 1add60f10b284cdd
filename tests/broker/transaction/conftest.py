"""Fixtures for the transaction tests: a store on real disk with its transaction service."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aeromq.broker.store import InboundMessage, MessageStore, StoreConfig, StoredMessage
from aeromq.broker.transaction import TransactionService
from aeromq.common.record_batch import TRANSACTION_PREPARED_FLAG

TxnStore = tuple[MessageStore, TransactionService]


@pytest.fixture
def open_txn_store(tmp_path: Path) -> Iterator[Callable[..., TxnStore]]:
    """``open_txn_store(timeout_ms=..., check_max=..., check_interval_ms=...)``: a started store
    on ``tmp_path/store`` and its started, loaded transaction service; each stopped at the end
    (a test may stop them first)."""
    opened: list[TxnStore] = []

    def factory(
        timeout_ms: int = 60_000, check_max: int = 15, check_interval_ms: int = 60_000
    ) -> TxnStore:
        store = MessageStore(StoreConfig(tmp_path / "store", flush_interval_ms=50))
        store.start()
        service = TransactionService(
            store,
            timeout_ms=timeout_ms,
            check_max=check_max,
            check_interval_ms=check_interval_ms,
            checkpoint_interval_ms=20,
        )
        service.start()
        opened.append((store, service))
        wait_until(lambda: service.loaded, "the service loaded")
        return store, service

    yield factory
    for store, service in opened:
        service.stop()
        store.shutdown()


def half_message(body: bytes, topic: str = "orders", queue_id: int = 1) -> InboundMessage:
    """A half message of group ``g`` with a unique key made of its body."""
    return InboundMessage(
        topic,
        queue_id,
        body,
        {"TRAN_MSG": "true", "PGROUP": "g", "UNIQ_KEY": body.hex()},
        sys_flag=TRANSACTION_PREPARED_FLAG,
    )


def read_all(store: MessageStore, topic: str, queue_id: int = 0) -> list[StoredMessage]:
    """Every message of (topic, queue id) now."""
    found: list[StoredMessage] = []
    offset = 0
    for _ in range(1_000):
        result = store.get_messages(topic, queue_id, offset, max_count=256)
        found += result.messages
        if result.next_begin_offset == offset:
            break
        offset = result.next_begin_offset
    return found


def wait_until(condition: Callable[[], object], what: str, timeout_s: float = 10.0) -> None:
    """Return once ``condition()`` is true; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
