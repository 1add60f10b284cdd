"""SYNC flush with group commit (RocketMQ's ``GroupCommitService``).

Writers append, then ask for their end offset to be durable: a blocking writer waits
(``wait_durable``), an asynchronous one leaves a callback (``request``). One flusher thread
runs ``fdatasync`` for everything appended so far, which covers every request made in the
meantime, then releases all of them at once. ``fdatasync`` drops the GIL, so writers keep
appending while the disk works: the more writers, the more records per flush.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from broker._errors import StoreIOError

__all__ = ["GroupCommitService"]

_log = logging.getLogger("broker.store")

DurableCallback = Callable[[bool], None]


class GroupCommitService:
    """Flushes with ``flush() -> flushed offset`` on its own thread when asked to.

    ``wait_durable`` and the callbacks report False when the offset is not durable within
    the timeout, or when the flush failed (the error is kept in ``failure``).
    """

    def __init__(self, flush: Callable[[], int], flushed_offset: int, timeout_ms: int) -> None:
        self._flush = flush
        self._timeout_s = timeout_ms / 1000.0
        self._cond = threading.Condition()
        self._flushed = flushed_offset
        self._requested = flushed_offset
        self._callbacks: list[tuple[int, float, DurableCallback]] = []
        self._running = False
        self._stopped = True
        self._thread: threading.Thread | None = None
        self.failure: StoreIOError | None = None
        self.flush_count = 0

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    def start(self) -> None:
        self._running = True
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="store-group-commit", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Flush what was requested, complete every waiter, and end the thread."""
        with self._cond:
            self._running = False
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def wait_durable(self, offset: int) -> bool:
        """Block until everything before ``offset`` is durable; False on timeout or failure."""
        cond = self._cond
        with cond:
            if self._flushed >= offset:
                return True
            if self._requested < offset:
                self._requested = offset
                cond.notify_all()
            deadline = time.monotonic() + self._timeout_s
            while self._flushed < offset:
                if self.failure is not None or self._stopped:
                    return self._flushed >= offset
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                cond.wait(remaining)
            return True

    def request(self, offset: int, callback: DurableCallback) -> None:
        """Call ``callback(True)`` on the flusher thread once ``offset`` is durable (False
        on timeout or failure); at once if it already is. Timeouts are checked between
        flushes: while one flush hangs in the kernel, its callbacks wait for it."""
        with self._cond:
            if self._flushed < offset and self.failure is None and not self._stopped:
                self._callbacks.append((offset, time.monotonic() + self._timeout_s, callback))
                if self._requested < offset:
                    self._requested = offset
                    self._cond.notify_all()
                return
            durable = self._flushed >= offset
        _call(callback, durable)

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while self._running and self._requested <= self._flushed:
                    cond.wait(self._timeout_s if self._callbacks else None)
                    if self._callbacks and self._requested <= self._flushed:
                        break  # expire callbacks below
                stopping = not self._running
            if self._requested > self._flushed and self.failure is None:
                try:
                    flushed = self._flush()
                    self.flush_count += 1
                except StoreIOError as exc:
                    _log.error("sync flush failed: %s", exc)
                    flushed = self._flushed
                    self.failure = exc
            else:
                flushed = self._flushed
            with cond:
                if flushed > self._flushed:
                    self._flushed = flushed
                cond.notify_all()
                done, pending = _split(self._callbacks, flushed, time.monotonic(), stopping)
                self._callbacks = pending
            for offset, _deadline, callback in done:
                _call(callback, offset <= flushed)
            if stopping or self.failure is not None:
                self._finish()
                return

    def _finish(self) -> None:
        with self._cond:
            callbacks, self._callbacks = self._callbacks, []
            self._running = False
            self._stopped = True
            self._cond.notify_all()
        for offset, _deadline, callback in callbacks:
            _call(callback, offset <= self._flushed)


def _split(
    callbacks: list[tuple[int, float, DurableCallback]], flushed: int, now: float, final: bool
) -> tuple[list[tuple[int, float, DurableCallback]], list[tuple[int, float, DurableCallback]]]:
    done = []
    pending = []
    for item in callbacks:
        if final or item[0] <= flushed or item[1] <= now:
            done.append(item)
        else:
            pending.append(item)
    return done, pending


def _call(callback: DurableCallback, durable: bool) -> None:
    try:
        callback(durable)
    except Exception:
        _log.exception("a durability callback raised")
