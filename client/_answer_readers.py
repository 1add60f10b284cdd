"""Who reads a client session's answers, and how a caller waits for its own: one interface,
:class:`AnswerReader`, with two readers behind it, picked by ``SessionConfig.caller_reads``
(:func:`reader_for`).

What they share. A session's answers come on one subscription (its response stream) and go
through one assembler (:class:`~client._answer_assembler.AnswerAssembler`, which keeps each
image's partial message between fragments) into the answer dispatch
(``_answer_dispatch.py``), which completes the futures of the pending-request table
(``_pending_requests.py``). Two kinds of thread read them: the session's poller thread, and a
caller waiting for its answer (``ClientSession.wait``, ``ClientSession.request``), which reads
for itself rather than be handed the answer by another thread.

Who may poll when:

- only a thread holding the reader's :attr:`~AnswerReader.lock` polls the subscription, so the
  assembler and the dispatch run on one thread at a time (whichever holds it);
- :class:`PollerReads` (the default): the poller thread polls whenever it runs (it waits for the
  lock); a waiting caller polls only when the lock is free (it never waits for it: the poller
  is reading and completes the future), for up to 1 ms, or, when the broker rings the
  session's doorbell after each answer, between sleeps on the doorbell for up to 20 ms; then it
  blocks on its future. While callers sleep on the doorbell the poller does not idle on it (one
  thread woken per answer, not two): it checks deadlines every millisecond;
- :class:`CallerReads`: the waiting callers poll (they wait for the lock) until their answer or
  its timeout; the poller thread polls only when no caller has waited in the last 100 ms
  (answers nobody waits for), and otherwise only keeps the session every 10 ms;
- either way only the poller thread runs the session's housekeeping (deadlines, keepalives,
  liveness: ``_session_liveness.py``), at most every millisecond; the pending table is also
  filled by the callers' threads (``_request_sender.py``): its rules are in its module.

The poller thread's loop is the base class's (:meth:`AnswerReader._run`: it steps aside while
callers read when :attr:`~AnswerReader.callers_read`); each reader is a caller's way of waiting
(:meth:`~AnswerReader.await_answer`). A new way of waiting (say futex doorbells on every hop) is
one more :class:`AnswerReader` (overriding the loop too if it must), picked in
:func:`reader_for`; the rest of the session does not change.
"""

from __future__ import annotations

import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import Future
from typing import ClassVar, Final, TypeVar

from aeromq.client._answer_assembler import AnswerAssembler
from aeromq.client._session_config import SessionConfig
from aeromq.client._session_state import SESSION_LOG, SessionState
from aeromq.common import RequestTimeoutError
from aeromq.transport.client import Subscription
from aeromq.transport.concurrent.doorbell import Doorbell, DoorbellIdleStrategy
from aeromq.transport.concurrent.idle_strategy import (
    BackoffIdleStrategy,
    IdleStrategy,
    tighten_timer_slack,
)

__all__ = ["AnswerReader", "CallerReads", "PollerReads", "reader_for"]

_T = TypeVar("_T")

Housekeeping = Callable[[int], int]
"""``(now_ns) -> work``: the session's periodic work, run by the poller thread."""

_FRAGMENT_LIMIT: Final = 64
_HOUSEKEEPING_INTERVAL_NS: Final = 1_000_000
_CALLER_POLL_NS: Final = 1_000_000
_CALLER_WAIT_NS: Final = 20_000_000
_CALLER_WATCH_S: Final = 0.001
_CALLER_SPIN_NS: Final = 200_000
_HOUSEKEEPING_S: Final = 0.01
"""With ``caller_reads``, how often the poller thread keeps the session (deadlines, keepalives)."""
_CALLER_READ_GRACE_NS: Final = 100_000_000
"""With ``caller_reads``, how long after a caller last read the poller drains unread answers."""


class AnswerReader(ABC):
    """One way of reading a session's answers (see module): the poller thread's loop
    (:meth:`start`, :meth:`stop`) and a caller's wait (:meth:`await_answer`).

    Made with the session, before it is connected; :meth:`start` hands it the subscription
    once the channels are open. ``housekeeping`` is run by the poller thread about every
    millisecond."""

    callers_read: ClassVar[bool]
    """The waiting callers read the answers: the poller steps aside while they do."""

    def __init__(
        self, assembler: AnswerAssembler, state: SessionState, housekeeping: Housekeeping
    ) -> None:
        self.lock = threading.Lock()
        """Held by the one thread polling the subscription (see module)."""
        self.subscription: Subscription | None = None
        self.doorbell: Doorbell | None = None
        """The session's own doorbell (IPC): the broker may ring it after each answer."""
        self.rung = False
        """The broker rings :attr:`doorbell` after each answer (it said so at CONNECT)."""
        self._assembler = assembler
        self._state = state
        self._housekeeping = housekeeping
        self._idle: IdleStrategy | None = None
        self._thread: threading.Thread | None = None
        self._running = False
        self._callers_waiting = 0  # callers reading (or asleep on the doorbell) for an answer
        self._callers_lock = threading.Lock()
        self._last_read_ns = 0  # when a caller last read answers (CallerReads)

    def start(
        self, subscription: Subscription, doorbell: Doorbell | None, idle: IdleStrategy, name: str
    ) -> None:
        """Read ``subscription`` from now on: start the poller thread (``name``; ``idle`` between
        its empty polls). ``doorbell`` is the session's own, if it has one."""
        self.subscription = subscription
        self.doorbell = doorbell
        self._idle = idle
        self._running = True
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def on_connected(self, rung: bool) -> None:
        """The CONNECT answer said whether the broker rings the session's doorbell after each
        answer: from now on waiting callers (and a poller idle on the doorbell) rely on it."""
        self.rung = rung
        if isinstance(self._idle, DoorbellIdleStrategy):
            self._idle.all_rung = self._all_rung

    def _all_rung(self) -> bool:
        """For the poller's doorbell strategy: every answer rings (the broker said so), so it
        may sleep until rung (its housekeeping runs at each park's end, at most 1 ms apart)."""
        return self.rung

    def stop(self) -> None:
        """Stop the poller thread and wait for it (up to 5 s; not when called on it)."""
        self._running = False
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)

    @abstractmethod
    def await_answer(self, future: Future[_T], timeout_ms: int) -> None:
        """Called by a thread about to wait ``timeout_ms`` for ``future``: read answers on it as
        this reader does, and return when ``future`` is done or left to the poller thread (the
        caller then blocks on it). Raises :class:`~client.RequestTimeoutError` when the caller
        read until the timeout without its answer."""

    def _run(self) -> None:
        """The poller thread's loop, until :meth:`stop`: poll (unless the callers read), the
        housekeeping about every millisecond, then idle (see module for when it steps aside)."""
        tighten_timer_slack()  # parks of the poller end when asked, not 50 us later
        subscription, idle = self.subscription, self._idle
        assert subscription is not None and idle is not None
        poll = subscription.poll
        assembler = self._assembler
        lock = self.lock
        housekeeping = self._housekeeping
        callers_read = self.callers_read
        next_check_ns = 0
        while self._running:
            try:
                if callers_read and (
                    self._callers_waiting
                    or time.monotonic_ns() - self._last_read_ns < _CALLER_READ_GRACE_NS
                ):
                    work = 0  # the callers read the answers
                else:
                    with lock:
                        work = poll(assembler, _FRAGMENT_LIMIT)
                now_ns = time.monotonic_ns()
                if now_ns >= next_check_ns:
                    next_check_ns = now_ns + _HOUSEKEEPING_INTERVAL_NS
                    work += housekeeping(now_ns)
            except Exception:  # keep the poller alive: one bad answer must not stop it
                SESSION_LOG.exception("session poller error: session_id=%s", self._state.session_id)
                work = 0
            if callers_read and not work:
                time.sleep(_HOUSEKEEPING_S)
                continue
            if self._callers_waiting and not work:
                # a caller asleep on the doorbell reads every answer a ring brings: the poller
                # keeps out of its wake-ups and only checks deadlines meanwhile
                time.sleep(_CALLER_WATCH_S)
                continue
            idle.idle(work)


class PollerReads(AnswerReader):
    """The poller thread reads the answers; a waiting caller reads too while the poller is
    not reading, briefly (see module), so that a quick answer is not handed between threads."""

    callers_read = False

    def __init__(
        self, assembler: AnswerAssembler, state: SessionState, housekeeping: Housekeeping
    ) -> None:
        super().__init__(assembler, state, housekeeping)
        # guesses the callers update without a lock: a lost update only shifts a guess
        self._spin_score = 3  # 1 or more: callers' answers mostly came within _CALLER_SPIN_NS
        self._caller_waits = 0

    def await_answer(self, future: Future[_T], timeout_ms: int) -> None:
        """Read answers on this thread for a short while when the poller thread is not reading
        (no hand-over between threads for a quick answer), then leave it to the poller. With a
        doorbell the broker rings, sleep on it between polls (:meth:`_wait_on_doorbell`).
        ``timeout_ms`` is not used: the poller fails the future at its deadline."""
        subscription = self.subscription
        if subscription is None:
            return
        bell = self.doorbell
        if self.rung and bell is not None:
            self._wait_on_doorbell(future, bell, subscription)
            return
        self._poll_until(future, subscription, time.monotonic_ns() + _CALLER_POLL_NS)

    def _poll_until(self, future: Future[_T], subscription: Subscription, until_ns: int) -> None:
        """Poll for answers while ``future`` is not done, until ``until_ns`` (monotonic): read
        them when the poller thread is not reading, else yield to it."""
        lock = self.lock
        poll = subscription.poll
        assembler = self._assembler
        while not future.done() and time.monotonic_ns() < until_ns:
            if lock.acquire(blocking=False):
                try:
                    poll(assembler, _FRAGMENT_LIMIT)
                finally:
                    lock.release()
            else:
                os.sched_yield()

    def _wait_on_doorbell(
        self, future: Future[_T], bell: Doorbell, subscription: Subscription
    ) -> None:
        """The caller's wait with a doorbell: poll when the poller is not reading, else leave
        the answer to it; between polls sleep until the broker rings (an answer came) or
        someone fails the future (they ring too), for up to 20 ms. While answers have mostly
        come back within 200 us (a saturating count, and one wait in 64 probes, as the doorbell
        idle strategy's spin window), it polls without sleeping for that long first: a wake-up
        from the futex costs more latency than such an answer waits. Meanwhile the poller thread
        does not sleep on the doorbell (one thread woken per answer, not two): it checks
        deadlines every millisecond, and an answer the caller does not wait for is read by the
        caller's polls."""
        lock = self.lock
        poll = subscription.poll
        assembler = self._assembler
        monotonic_ns = time.monotonic_ns
        started_ns = monotonic_ns()
        self._caller_waits += 1
        probe = not self._caller_waits & 63  # a wait that slept is measured late: probe anew
        spin = self._spin_score >= 1 or probe
        deadline_ns = started_ns + _CALLER_WAIT_NS
        with self._callers_lock:
            self._callers_waiting += 1
        try:
            if spin:
                self._poll_until(future, subscription, started_ns + _CALLER_SPIN_NS)
            while not future.done():
                observed = bell.prepare()
                if not lock.acquire(blocking=False):
                    return  # the poller is reading: it completes the future
                try:
                    poll(assembler, _FRAGMENT_LIMIT)
                finally:
                    lock.release()
                if future.done():
                    return
                remaining_ns = deadline_ns - monotonic_ns()
                if remaining_ns <= 0:
                    return
                bell.await_ring(observed, remaining_ns)
        finally:
            with self._callers_lock:
                self._callers_waiting -= 1
            quick = future.done() and monotonic_ns() - started_ns < _CALLER_SPIN_NS
            self._spin_score = min(3, max(0, self._spin_score + (1 if quick else -1)))


class CallerReads(AnswerReader):
    """The waiting callers read the answers (``SessionConfig.caller_reads``); the poller thread
    keeps the session and reads only answers nobody waits for (see module)."""

    callers_read = True

    def await_answer(self, future: Future[_T], timeout_ms: int) -> None:
        """Read answers on this thread until ``future`` is done or ``timeout_ms`` has passed
        (then :class:`~client.RequestTimeoutError`); between empty polls sleep until the broker
        rings (it does after each answer; up to 20 ms a sleep, as failures and timeouts ring
        too), or without a doorbell park briefly."""
        subscription = self.subscription
        if subscription is not None:
            deadline_ns = time.monotonic_ns() + timeout_ms * 1_000_000
            lock = self.lock
            poll = subscription.poll
            assembler = self._assembler
            monotonic_ns = time.monotonic_ns
            bell = self.doorbell if self.rung else None
            idle = BackoffIdleStrategy(max_park_period_ns=100_000)
            with self._callers_lock:
                self._callers_waiting += 1
            try:
                while not future.done():
                    observed = bell.prepare() if bell is not None else 0
                    with lock:
                        work = poll(assembler, _FRAGMENT_LIMIT)
                    remaining_ns = deadline_ns - monotonic_ns()
                    if future.done() or remaining_ns <= 0:
                        break
                    if work:
                        idle.reset()
                    elif bell is not None:
                        bell.await_ring(observed, min(remaining_ns, _CALLER_WAIT_NS))
                    else:
                        idle.idle(0)
            finally:
                self._last_read_ns = monotonic_ns()
                with self._callers_lock:
                    self._callers_waiting -= 1
        if not future.done():
            raise RequestTimeoutError(
                "no answer in time", session_id=self._state.session_id, timeout_ms=timeout_ms
            )


def reader_for(
    config: SessionConfig,
    assembler: AnswerAssembler,
    state: SessionState,
    housekeeping: Housekeeping,
) -> AnswerReader:
    """The reader ``config`` asks for: :class:`CallerReads` with ``caller_reads``, else
    :class:`PollerReads`."""
    reader = CallerReads if config.caller_reads else PollerReads
    return reader(assembler, state, housekeeping)
