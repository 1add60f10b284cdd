"""Fixtures for the store tests: small segments in a data directory on real disk."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.store import MessageStore, StoreConfig


def small_config(data_dir: Path, **overrides: Any) -> StoreConfig:
    """A store config with tiny files, so tests roll segments and queue files quickly."""
    values: dict[str, Any] = {
        "commit_log_segment_bytes": 16 * 1024,
        "consume_queue_entries_per_segment": 16,
        "index_slots": 31,
        "index_entries": 64,
        "flush_interval_ms": 50,
        "flush_consume_queue_interval_ms": 100,
    }
    values.update(overrides)
    return StoreConfig(data_dir, **values)


class ManualClock:
    """A wall clock in milliseconds that only moves when told."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, delta_ms: int) -> None:
        self.now_ms += delta_ms


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def open_store(tmp_path: Path, clock: ManualClock) -> Iterator[Callable[..., MessageStore]]:
    """``open_store(**config overrides)`` starts a store on ``tmp_path/store``; every store
    opened is shut down at the end."""
    opened: list[MessageStore] = []

    def factory(**overrides: Any) -> MessageStore:
        store = MessageStore(small_config(tmp_path / "store", **overrides), clock_ms=clock)
        store.start()
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.shutdown()


def group_config(data_dir: Path, **overrides: Any) -> StoreConfig:
    """``small_config`` of a broker group's member (a short replication timeout)."""
    values: dict[str, Any] = {"replicated": True, "replication_timeout_ms": 3_000}
    values.update(overrides)
    return small_config(data_dir, **values)


@pytest.fixture
def pair(tmp_path: Path, clock: ManualClock) -> Iterator[tuple[MessageStore, MessageStore]]:
    """``(leader, follower)``: two started members of a broker group, the first leading, on
    ``tmp_path/leader`` and ``tmp_path/follower``; shut down at the end."""
    leader = MessageStore(group_config(tmp_path / "leader"), clock_ms=clock)
    follower = MessageStore(group_config(tmp_path / "follower"), clock_ms=clock)
    leader.start()
    follower.start()
    leader.start_leading()
    yield leader, follower
    leader.shutdown()
    follower.shutdown()


def crash(store: MessageStore) -> None:
    """Stop a store as a killed process would: no final flush, checkpoint or persist.

    The page cache keeps what was written (as after SIGKILL); the lock is released.
    """
    if store._scheduler is not None:
        store._scheduler.stop()
        store._scheduler = None
    if store._group_commit is not None:
        store._group_commit.stop()
        store._group_commit = None
    store._running = store._writable = False
    store._close_files()
    store._lock.release()
