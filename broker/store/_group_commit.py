"""SYNC flush with group commit (RocketMQ's ``GroupCommitService``, leader-follower style).

Writers append, then ask for their end offset to be durable. A blocking writer
(``wait_durable``) that finds no flush running becomes the leader: it runs ``fdatasync``
itself for everything appended so far, which covers every writer that appended meanwhile,
and releases them all at once; writers that arrive while a flush runs wait for it and the
next leader. ``fdatasync`` drops the GIL, so the others keep appending while the disk
works: the more writers, the more records per flush. Asynchronous writers leave a callback
(``request``); a background thread leads flushes for them and calls them back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from aeromq.broker._errors import StoreIOError

__all__ = ["GroupCommitService"]

_log = logging.getLogger(__name__)

DurableCallback = Callable[[bool], None]
_Pending = tuple[int, float, DurableCallback]


class GroupCommitService:
    """Flushes with ``flush() -> flushed offset``, led by the writers that need it.

    ``wait_durable`` and the callbacks report False when the offset is not durable within
    the timeout, or when a flush failed (the error is kept in ``failure``; after it, nothing
    is durable any more).
    """

    def __init__(self, flush: Callable[[], int], flushed_offset: int, timeout_ms: int) -> None:
        self._flush = flush
        self._timeout_s = timeout_ms / 1000.0
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # writers waiting for a flush
        self._work = threading.Condition(lock)  # the callback thread waiting for work
        self._flushed = flushed_offset
        self._flushing = False
        self._callbacks: list[_Pending] = []
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
        """Flush what callbacks wait for, settle them, and end the thread."""
        with self._cond:
            self._running = False
            self._work.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def wait_durable(self, offset: int) -> bool:
        """Block until everything before ``offset`` is durable; False on timeout or failure."""
        cond = self._cond
        due: list[_Pending] = []
        with cond:
            deadline = 0.0
            while self._flushed < offset:
                if self.failure is not None or self._stopped:
                    break
                if not self._flushing:
                    due += self._lead()
                    continue
                now = time.monotonic()
                if not deadline:
                    deadline = now + self._timeout_s
                elif now >= deadline:
                    break
                cond.wait(deadline - now)
            durable = self._flushed >= offset
        _settle(due, self._flushed)
        return durable

    def request(self, offset: int, callback: DurableCallback) -> None:
        """Call ``callback(True)`` once ``offset`` is durable (False on timeout or failure);
        at once if it already is. The service's thread checks the timeouts, unless it is
        itself the one waiting on a hung flush."""
        with self._cond:
            if self._flushed < offset and self.failure is None and not self._stopped:
                self._callbacks.append((offset, time.monotonic() + self._timeout_s, callback))
                self._work.notify()
                return
            durable = self._flushed >= offset
        _call(callback, durable)

    def _lead(self) -> list[_Pending]:
        """Run one flush (called and returning with the condition held); returns the
        callbacks it settled, to be called outside the lock."""
        self._flushing = True
        self._cond.release()
        try:
            flushed = self._flush()
            self.flush_count += 1
        except StoreIOError as exc:
            _log.error("sync flush failed: %s", exc)
            flushed = self._flushed
            self.failure = exc
        finally:
            self._cond.acquire()
            self._flushing = False
        if flushed > self._flushed:
            self._flushed = flushed
        self._cond.notify_all()
        if self._callbacks:
            self._work.notify()
        return self._take_due(final=self.failure is not None)

    def _take_due(self, final: bool) -> list[_Pending]:
        if not self._callbacks:
            return []
        now = time.monotonic()
        flushed = self._flushed
        due: list[_Pending] = []
        pending: list[_Pending] = []
        for item in self._callbacks:
            (due if final or item[0] <= flushed or item[1] <= now else pending).append(item)
        self._callbacks = pending
        return due

    def _run(self) -> None:
        """Lead flushes for callbacks that no blocking writer's flush covered, settle
        callbacks as they come due, and at stop flush once more and settle the rest."""
        work = self._work
        while True:
            due: list[_Pending] = []
            with work:
                while self._running:
                    due = self._take_due(final=False)
                    if due:
                        break
                    if (
                        not self._flushing
                        and self.failure is None
                        and any(c[0] > self._flushed for c in self._callbacks)
                    ):
                        due = self._lead()
                        break
                    callbacks = self._callbacks
                    work.wait(
                        max(0.0, min(c[1] for c in callbacks) - time.monotonic())
                        if callbacks
                        else None
                    )
                if not self._running:
                    while self._flushing:
                        self._cond.wait()
                    if self.failure is None and any(c[0] > self._flushed for c in self._callbacks):
                        due += self._lead()
                    due += self._take_due(final=True)
                    self._stopped = True
                    self._cond.notify_all()
            _settle(due, self._flushed)
            if self._stopped:
                return


def _settle(due: list[_Pending], flushed: int) -> None:
    for offset, _deadline, callback in due:
        _call(callback, offset <= flushed)


def _call(callback: DurableCallback, durable: bool) -> None:
    try:
        callback(durable)
    except Exception:
        _log.exception("a durability callback raised")
