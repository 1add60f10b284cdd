"""Fixtures for the timer tests: a store on real disk with its timer service, on the wall clock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aeromq.broker.store import MessageStore, StoreConfig, StoredMessage
from aeromq.broker.timer import TimerService

TimerStore = tuple[MessageStore, TimerService]


@pytest.fixture
def open_timer_store(tmp_path: Path) -> Iterator[Callable[..., TimerStore]]:
    """``open_timer_store(max_delay_ms=...)``: a started store on ``tmp_path/store`` and its
    started timer service; each is stopped at the end (a test may stop them first)."""
    opened: list[TimerStore] = []

    def factory(max_delay_ms: int = 60_000) -> TimerStore:
        store = MessageStore(StoreConfig(tmp_path / "store", flush_interval_ms=50))
        store.start()
        service = TimerService(store, max_delay_ms=max_delay_ms, checkpoint_interval_ms=20)
        service.start()
        opened.append((store, service))
        return store, service

    yield factory
    for store, service in opened:
        service.stop()
        store.shutdown()


def now_ms() -> int:
    """The wall clock, epoch milliseconds (the store's and the service's)."""
    return time.time_ns() // 1_000_000


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


def wait_for_count(
    store: MessageStore, topic: str, count: int, timeout_s: float = 15.0, queue_id: int = 0
) -> list[StoredMessage]:
    """The messages of (topic, queue id) once there are ``count``, or what there is after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    found = read_all(store, topic, queue_id)
    while len(found) < count and time.monotonic() < deadline:
        time.sleep(0.01)
        found = read_all(store, topic, queue_id)
    return found
