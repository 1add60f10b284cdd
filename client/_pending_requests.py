"""``PendingRequests``: a client session's requests in flight, by correlation id, with their
deadlines; the timeouts and the failing of them all.

Who touches it, from which thread:

- the request sender (``_request_sender.py``, a caller's thread) hands out a correlation id,
  puts the request's future in :attr:`~PendingRequests.futures` and its deadline on
  :attr:`~PendingRequests.deadlines` (under :attr:`~PendingRequests.lock`);
- the answer dispatch (``_answer_dispatch.py``, the thread that reads answers) pops a future
  from :attr:`~PendingRequests.futures` and completes it;
- the poller thread fails the futures past their deadline (:meth:`~PendingRequests.expire`),
  and any part fails them all when the session ends (:meth:`~PendingRequests.fail`,
  :meth:`~PendingRequests.fail_all`).

:attr:`~PendingRequests.futures` is changed only by single dict operations (one at a time
under the GIL: set, ``pop``, a copy of its keys), so it needs no lock, and whoever pops a
future completes it; a future another thread completed meanwhile (timed out as it was
answered) keeps its first outcome (:func:`resolve`, :func:`reject`). The deadline heap is
changed only under :attr:`~PendingRequests.lock`. After each failing of futures the session's
doorbell (when it has one) rings, so that callers asleep on it see their futures failed.

:attr:`~PendingRequests.call_reader` is how a request submitted while no thread reads the
answers gets one (``_answer_readers.py``): the reader sets it while its poller thread sleeps
off the session's doorbell with no reader about, and the sender calls it after registering a
request, which wakes the poller to read.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
from collections.abc import Callable
from concurrent.futures import InvalidStateError
from typing import Final, TypeAlias

from google.protobuf.message import Message as ProtoMessage

from aeromq.client._session_state import SESSION_LOG, SessionState
from aeromq.client._sync_answer import Completion
from aeromq.common import ClientError, PullAnswer, RequestTimeoutError, SendAnswer
from aeromq.transport.concurrent.doorbell import Doorbell

__all__ = ["Answer", "PendingRequests", "reject", "resolve"]

Answer: TypeAlias = ProtoMessage | PullAnswer | SendAnswer
"""What a request's future is completed with: the answer's body, a pull's ``PullAnswer``, or a
stored send's ``SendAnswer`` (read without protobuf, ``_answer_dispatch.py``)."""

_COMPACT_MIN_ENTRIES: Final = 1_024
"""Deadline entries past which, when most are of answered requests, :meth:`expire` drops
those."""


class PendingRequests:
    """Correlation ids -> futures of the requests in flight, and their deadlines (see module).

    ``deadlines`` holds ``(deadline ns, correlation id)`` of the requests sent, soonest first
    (a heap). An answered request's entry stays until its deadline or a compaction
    (:meth:`expire`), but holds no reference to its future: an answered future, its callbacks
    and what they hold (a send's messages) are freed at once, not kept for the request timeout.
    """

    __slots__ = (
        "_state",
        "call_reader",
        "correlation",
        "deadlines",
        "doorbell",
        "futures",
        "lock",
    )

    def __init__(self, state: SessionState) -> None:
        self.futures: dict[int, Completion[Answer]] = {}
        self.deadlines: list[tuple[int, int]] = []
        self.lock = threading.Lock()
        self.correlation = itertools.count(random.getrandbits(30) << 32)
        """The session's correlation ids (``next()`` of it: one id)."""
        self.doorbell: Doorbell | None = None
        """The session's own doorbell (set once it has one), rung after futures fail."""
        self.call_reader: Callable[[], None] | None = None
        """Set while no thread would read a new request's answer: the sender calls it after
        registering one (see module)."""
        self._state = state

    def next_deadline_ns(self) -> int:
        """The soonest deadline of a request still waiting for its answer (0: none); the
        entries of answered requests ahead of it are dropped on the way. Caller: the poller
        thread (its next wake-up)."""
        deadlines = self.deadlines
        futures = self.futures
        if deadlines and deadlines[0][1] not in futures:
            with self.lock:
                while deadlines and deadlines[0][1] not in futures:
                    heapq.heappop(deadlines)
        return deadlines[0][0] if deadlines else 0

    def expire(self, now_ns: int) -> int:
        """Fail with :class:`~client.RequestTimeoutError` each request whose deadline is past
        ``now_ns`` (monotonic); first drop the entries of answered requests when they are most
        of many. Returns how many failed. Caller: the poller thread."""
        work = 0
        deadlines = self.deadlines
        futures = self.futures
        if len(deadlines) > _COMPACT_MIN_ENTRIES and len(deadlines) > 2 * len(futures):
            with self.lock:  # most entries are of answered requests: drop them
                deadlines[:] = [entry for entry in deadlines if entry[1] in futures]
                heapq.heapify(deadlines)
        if deadlines and deadlines[0][0] <= now_ns:
            expired = []
            with self.lock:
                while deadlines and deadlines[0][0] <= now_ns:
                    expired.append(heapq.heappop(deadlines)[1])
            for correlation_id in expired:
                future = futures.pop(correlation_id, None)
                if future is not None and not future.done():
                    reject(
                        future,
                        RequestTimeoutError(
                            "no answer in time",
                            session_id=self._state.session_id,
                            correlation_id=correlation_id,
                        ),
                    )
                    work += 1
            if work and self.doorbell is not None:
                self.doorbell.ring()
        return work

    def fail(self, error: ClientError) -> None:
        """The session is unusable: remember why (the first error, ``SessionState.failure``)
        and fail everything pending with ``error``."""
        state = self._state
        if state.failure is None:
            state.failure = error
            SESSION_LOG.info("session failed: %s", error)
        self.fail_all(error)

    def fail_all(self, error: ClientError) -> None:
        """Fail every pending request with ``error``, and ring the doorbell."""
        futures = self.futures
        for correlation_id in list(futures):
            future = futures.pop(correlation_id, None)
            if future is not None and not future.done():
                reject(future, error)
        if self.doorbell is not None:
            self.doorbell.ring()  # callers asleep on it see their failed futures


def resolve(future: Completion[Answer], value: Answer) -> None:
    """Complete ``future`` with ``value``, unless it timed out or failed meanwhile."""
    try:  # not contextlib.suppress: three Python calls an answer, and a try costs nothing
        future.set_result(value)
    except InvalidStateError:  # timed out or failed meanwhile
        return


def reject(future: Completion[Answer], error: BaseException) -> None:
    """Fail ``future`` with ``error``, unless it was completed meanwhile."""
    try:
        future.set_exception(error)
    except InvalidStateError:  # completed meanwhile
        return
