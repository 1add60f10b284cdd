"""The committed offset of a store in a broker group, and the puts that wait for it.

In a group a put is final once the group's high watermark (HW: the commit log offset below
which every byte is fsynced on every member of the in-sync set) passes the end of its batch.
:class:`CommitWatermark` holds that offset (``committed_offset``, raised only, by the
replication layer through ``MessageStore.set_high_watermark``) and the puts appended on the
leader that wait for it, each with its end offset, its result and its callback:

- :meth:`CommitWatermark.raise_to` moves the offset, :meth:`CommitWatermark.settle` then calls
  back every put it passed (``PUT_OK``);
- a put still waiting ``timeout_ms`` after it was appended is called back with
  ``REPLICATION_TIMEOUT`` (its batch is in the leader's log, but the group may or may not keep
  it: the outcome is unknown, and an idempotent producer's retry is safe), by a thread of its
  own that sleeps until the oldest deadline, or for ``timeout_ms`` while no put waits: a put
  that comes meanwhile has a later deadline than that sleep's end, so the thread is never
  woken for one (it was, for the first put after every commit: one wake-up a commit, and a
  wait for the GIL beside the session agent and the replication, in a group's busiest
  moment);
- :meth:`CommitWatermark.fail_all` calls every waiting put back with a status at once (the
  leader lost its leadership, or the store shuts down);
- :attr:`CommitWatermark.on_wait`, when set, is called after each put starts waiting (outside
  the lock, on the putter's thread): the replication agent sleeps until new bytes are there to
  replicate and fsync, and this wakes it.

Callbacks run outside the lock, on the thread that settled them (the replication layer's, the
timer's, or the putter's when its batch was already committed); one that raises is logged.

Caller: the store's commit path (``_commit_path``) and its put paths. Thread-safe.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

from aeromq.broker.store._results import PutCallback, PutMessageResult, PutMessageStatus

__all__ = ["CommitWatermark"]

_log = logging.getLogger(__name__)


class _Waiter:
    """One put waiting for the committed offset to reach ``end``."""

    __slots__ = ("callback", "deadline", "done", "end", "result")

    def __init__(
        self, end: int, deadline: float, result: PutMessageResult, callback: PutCallback
    ) -> None:
        self.end = end
        self.deadline = deadline
        self.result = result
        self.callback = callback
        self.done = False


class CommitWatermark:
    """The committed offset (from ``committed_offset``) and the puts waiting for it; a waiting
    put times out after ``timeout_ms`` (see module)."""

    def __init__(self, timeout_ms: int, committed_offset: int = 0) -> None:
        self.committed_offset = committed_offset
        self._timeout_s = timeout_ms / 1000.0
        self._cond = threading.Condition(threading.Lock())
        self._by_end: list[tuple[int, int, _Waiter]] = []  # a heap by end offset
        self._by_age: collections.deque[_Waiter] = collections.deque()  # oldest first
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._running = False
        self.on_wait: Callable[[], object] | None = None
        """Called after each put starts waiting (see module)."""

    @property
    def waiting(self) -> int:
        """How many puts wait (timed-out ones the heap still holds aside)."""
        with self._cond:
            return sum(1 for waiter in self._by_age if not waiter.done)

    def start(self) -> None:
        """Start the timer thread. Caller: the store's start."""
        with self._cond:
            self._running = True
        self._thread = threading.Thread(target=self._run, name="store-commit-timer", daemon=True)
        self._thread.start()

    def stop(self, status: PutMessageStatus = PutMessageStatus.REPLICATION_TIMEOUT) -> None:
        """Fail every waiting put with ``status`` and end the timer thread."""
        with self._cond:
            self._running = False
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.fail_all(status)

    def request(self, end: int, result: PutMessageResult, callback: PutCallback) -> None:
        """Call ``callback(result)`` once the committed offset reaches ``end`` (at once if it
        has), or with ``result.status`` set to ``REPLICATION_TIMEOUT`` after the timeout."""
        with self._cond:
            if end > self.committed_offset:
                waiter = _Waiter(end, time.monotonic() + self._timeout_s, result, callback)
                heapq.heappush(self._by_end, (end, next(self._order), waiter))
                self._by_age.append(waiter)  # the timer wakes by itself before its deadline
                waiting = True
            else:
                waiting = False
        if not waiting:
            _call(callback, result)
            return
        on_wait = self.on_wait
        if on_wait is not None:
            on_wait()

    def wait(self, end: int, result: PutMessageResult) -> PutMessageResult:
        """Block until the committed offset reaches ``end`` (``result`` as it is), or the put
        is failed or times out (its status set); returns ``result``."""
        settled = threading.Event()
        self.request(end, result, lambda _: settled.set())
        settled.wait()
        return result

    def raise_to(self, offset: int) -> None:
        """Move the committed offset up to ``offset`` (never down); :meth:`settle` calls the
        puts back. Caller: the store, under its put lock, once it has dispatched up to it."""
        with self._cond:
            if offset > self.committed_offset:
                self.committed_offset = offset

    def settle(self) -> int:
        """Call back every put the committed offset has passed; returns how many."""
        due: list[_Waiter] = []
        with self._cond:
            heap = self._by_end
            committed = self.committed_offset
            while heap and heap[0][0] <= committed:
                waiter = heapq.heappop(heap)[2]
                if not waiter.done:
                    waiter.done = True
                    due.append(waiter)
            by_age = self._by_age
            while by_age and by_age[0].done:
                by_age.popleft()
        for waiter in due:
            _call(waiter.callback, waiter.result)
        return len(due)

    def fail_all(self, status: PutMessageStatus) -> int:
        """Call every waiting put back with ``status``; returns how many."""
        with self._cond:
            due = [waiter for waiter in self._by_age if not waiter.done]
            for waiter in due:
                waiter.done = True
            self._by_end.clear()
            self._by_age.clear()
        for waiter in due:
            waiter.result.status = status
            _call(waiter.callback, waiter.result)
        return len(due)

    def _expire(self, now: float) -> list[_Waiter]:
        """Take the puts past their deadline (called with the lock held)."""
        due: list[_Waiter] = []
        by_age = self._by_age
        while by_age and (by_age[0].done or by_age[0].deadline <= now):
            waiter = by_age.popleft()
            if not waiter.done:
                waiter.done = True
                due.append(waiter)
        if due and len(self._by_end) > 2 * len(by_age) + 64:  # drop the timed-out from the heap
            self._by_end = [item for item in self._by_end if not item[2].done]
            heapq.heapify(self._by_end)
        return due

    def _run(self) -> None:
        """Time out the oldest waiting puts, sleeping until the next deadline."""
        cond = self._cond
        while True:
            with cond:
                if not self._running:
                    return
                due = self._expire(time.monotonic())
                if not due:
                    cond.wait(
                        max(0.0, self._by_age[0].deadline - time.monotonic())
                        if self._by_age
                        else self._timeout_s
                    )
                    continue
            for waiter in due:
                waiter.result.status = PutMessageStatus.REPLICATION_TIMEOUT
                _call(waiter.callback, waiter.result)


def _call(callback: PutCallback, result: PutMessageResult) -> None:
    try:
        callback(result)
    except Exception:
        _log.exception("a put's callback raised")
