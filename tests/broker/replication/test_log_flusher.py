"""``LogFlusher``: a member's fsync thread, a group commit the replication agent asks for."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from aeromq.broker.replication.log_flusher import LogFlusher
from tests.broker.replication._memory_log import MemoryLog
from tests.broker.replication._waits import wait_until


class _SlowLog(MemoryLog):
    """A log whose flush blocks until released (or fails while ``failing``), and makes
    durable what was appended when it began, as the store's does."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.failing = 0

    def flush(self) -> int:
        target = self.max_physical_offset
        self.entered.set()
        self.release.wait(10)
        if self.failing:
            self.failing -= 1
            raise OSError("disk gone")
        self._flushed = max(self._flushed, target)
        self.flushes += 1
        return self._flushed


@contextlib.contextmanager
def _flushing(log: MemoryLog) -> Iterator[tuple[LogFlusher, list[int]]]:
    """A flusher of ``log`` and the flushed offset it saw at each call back; closed after."""
    calls: list[int] = []
    flusher = LogFlusher(log, lambda: calls.append(log.flushed_physical_offset), "t-fsync")
    try:
        yield flusher, calls
    finally:
        if isinstance(log, _SlowLog):
            log.release.set()
        flusher.close()


def test_should_fsync_what_was_appended_and_then_call_back() -> None:
    log = MemoryLog()
    with _flushing(log) as (flusher, calls):
        log.append(b"x" * 100)
        flusher.request()
        wait_until(lambda: calls == [100])
        assert flusher.fsyncs == 1


def test_should_serve_the_requests_made_during_an_fsync_with_one_more() -> None:
    log = _SlowLog()
    with _flushing(log) as (flusher, calls):
        log.append(b"a" * 10)
        flusher.request()
        assert log.entered.wait(10)
        for _ in range(5):  # while the first fsync works: one more fsync covers them all
            log.append(b"b" * 10)
            flusher.request()
        log.release.set()
        wait_until(lambda: calls[-1:] == [60])
        assert flusher.fsyncs == 2
        assert calls == [10, 60]


def test_should_try_a_failed_fsync_again_without_calling_back() -> None:
    log = _SlowLog()
    log.release.set()
    log.failing = 1
    with _flushing(log) as (flusher, calls):
        log.append(b"c" * 7)
        flusher.request()
        wait_until(lambda: calls == [7])
        assert flusher.failures == 1
        assert flusher.fsyncs == 1


def test_should_stop_its_thread_on_close() -> None:
    flusher = LogFlusher(MemoryLog(), lambda: None, "t-fsync-close")
    flusher.close()
    flusher.close()
    assert not any(t.name == "t-fsync-close" for t in threading.enumerate())
