"""Who reads a client session's answers, and how a thread waits for its own: one interface,
:class:`AnswerReader`, with two readers behind it (``_answer_reader_kinds.py``: ``PollerReads``
and ``CallerReads``, picked by ``SessionConfig.caller_reads`` in ``reader_for``).

What they share. A session's answers come on one subscription (its response stream) and go
to one handler, the answer dispatch's (``_answer_dispatch.py``: whole answers straight on, the
fragments of longer ones through its assembler, which keeps each image's partial message
between fragments), which completes the futures of the pending-request table
(``_pending_requests.py``). Two kinds of thread read them: the session's poller thread, and a
thread waiting for something the answers bring (a caller of ``ClientSession.request`` for its
answer, a consumer's ``poll()`` for pulled messages: :meth:`AnswerReader.read_until`), which
reads for itself rather than be handed the answers by another thread.

Who may poll when:

- only a thread holding the reader's :attr:`~AnswerReader.lock` polls the subscription, so the
  handler, its assembler and the dispatch run on one thread at a time (whichever holds it);
- when the session's doorbell is rung after each answer (:attr:`rung`: by the broker over IPC,
  by the session's own media driver as the answer lands over UDP, ``_session_setup.py``) and the
  poller's idle strategy is a doorbell one (the default), every waiting thread reads: it polls,
  and between polls sleeps on the doorbell until the broker rings (or whoever completes what it
  waits for rings: a failure, a local put), at once: it does not poll through a spin window
  first. The broker's session agent polls through one of its own after each request
  (adaptive, 100 us, 200 us after a send), so one side of a one-at-a-time exchange spins, not both: while the caller
  polled too (up to 200 us), the agent slept between a one-at-a-time producer's sends and was
  woken by each while the producer polled for its answer, 60-80 us of its CPU a send
  (``docs/latency.md``, "One spinner per exchange"). The one exception is a caller sending
  back to back, each request as soon as the last answer came, with the agent then spinning
  between them anyway: it polls for its answer through a short window of its own first
  (``_back_to_back.py``), since for it the wake-up was half of each round trip.
  The poller thread then keeps out of the way: while a thread reads, and for a second after
  the last one left (``linger``: it is likely back soon), it sleeps on a doorbell of its own
  until the session's next housekeeping is due (:meth:`~client._session_liveness.SessionLiveness.next_due_ns`:
  a pending request's deadline, a keepalive, the driver check every 100 ms), so one answer
  wakes one thread. It reads only when requests are pending and nobody else reads, asleep on
  the session's doorbell between polls; a request submitted while nobody would read its answer
  wakes it (``PendingRequests.call_reader``), and so does a caller leaving requests pending
  that nobody waits for. An idle session costs ten wake-ups a second (the driver check);
- otherwise (no futexes, or another idle strategy was asked for) the poller thread
  polls with its idle strategy. ``PollerReads`` (the default): a waiting caller polls
  when the lock is free, for up to 1 ms, then blocks on its future; while callers sleep on the
  doorbell (rung, with a polling poller) the poller checks deadlines every millisecond.
  ``CallerReads``: the waiting callers poll until their answer or its timeout, parking
  briefly between polls (no doorbell), and the poller reads only answers nobody waited for
  in the last 100 ms, keeping the session every 10 ms meanwhile;
- either way only the poller thread runs the session's housekeeping (deadlines, keepalives,
  liveness: ``_session_liveness.py``); the pending table is also filled by the callers'
  threads (``_request_sender.py``): its rules are in its module.

A reader's :attr:`~AnswerReader.lock` is not re-entrant: a thread that reads answers runs the
futures' callbacks, and a callback that waits for another answer of the same session cannot
read it (:meth:`~AnswerReader.read_until` returns at once; the wait is left to the future).
"""

from __future__ import annotations

import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, Final, TypeVar

from aeromq.client._back_to_back import BackToBackSpin
from aeromq.client._pending_requests import PendingRequests
from aeromq.client._session_state import SESSION_LOG, SessionState
from aeromq.client._sync_answer import Completion
from aeromq.common import RequestTimeoutError
from aeromq.transport.client import Subscription
from aeromq.transport.concurrent.doorbell import HAS_FUTEX, Doorbell
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy, SpinPredictor
from aeromq.transport.concurrent.idle_strategy import (
    IdleStrategy,
    tighten_timer_slack,
)
from aeromq.transport.logbuffer import FragmentHandler

__all__ = [
    "CALLER_POLL_NS",
    "CALLER_READ_GRACE_NS",
    "CALLER_WAIT_NS",
    "FRAGMENT_LIMIT",
    "LINGER_NS",
    "AnswerReader",
    "Housekeeping",
    "NextDue",
]

_T = TypeVar("_T")
_B = TypeVar("_B")

Housekeeping = Callable[[int], int]
"""``(now_ns) -> work``: the session's periodic work, run by the poller thread."""
NextDue = Callable[[int], int]
"""``(now_ns) -> due_ns``: when the housekeeping has something to do next."""

FRAGMENT_LIMIT: Final = 64
_HOUSEKEEPING_INTERVAL_NS: Final = 1_000_000
CALLER_POLL_NS: Final = 1_000_000
CALLER_WAIT_NS: Final = 20_000_000
_CALLER_WATCH_S: Final = 0.001
_CALLER_SPIN_NS: Final = 200_000
"""A caller waiting on a doorbell its poller does not sleep on (a polling poller) polls this
long before it sleeps while answers have mostly come so fast; a rung session's readers do not
(see module)."""
_HOUSEKEEPING_S: Final = 0.01
"""With ``caller_reads`` and a polling poller, how often it keeps the session."""
CALLER_READ_GRACE_NS: Final = 100_000_000
"""With ``caller_reads`` and a polling poller, how long after a caller last read the poller
drains unread answers."""
LINGER_NS: Final = 1_000_000_000
"""How long the poller of a rung session keeps out of the way after the last reading thread
left (it is likely back soon: one-at-a-time sends, ``poll()`` in a loop): a second, so that
an answer wakes one thread at a send a second or more."""
_NEVER: Final = 1 << 62


class AnswerReader(ABC):
    """One way of reading a session's answers (see module): the poller thread's loop
    (:meth:`start`, :meth:`stop`), a thread reading while it waits (:meth:`read_until`) and a
    caller's wait for its answer (:meth:`request`, :meth:`await_answer`).

    Made with the session, before it is connected; :meth:`start` hands it the subscription
    once the channels are open. ``housekeeping`` is run by the poller thread when
    ``next_due`` says (about every millisecond when it polls)."""

    callers_read: ClassVar[bool]
    """Without a rung doorbell the waiting callers read the answers: the poller steps aside."""
    calls_poller: ClassVar[bool]
    """A request submitted while no thread reads wakes the poller at once (else the poller
    reads it when the readers' linger or its next housekeeping ends)."""
    linger_ns: ClassVar[int]
    """How long the poller of a rung session keeps away after a caller waiting for its answer
    left (0: it takes over at once if requests nobody waits for are pending)."""

    def __init__(
        self,
        handler: FragmentHandler,
        state: SessionState,
        pending: PendingRequests,
        housekeeping: Housekeeping,
        next_due: NextDue,
        *,
        back_to_back_spin_ns: int = 0,
    ) -> None:
        self.lock = threading.Lock()
        """Held by the one thread polling the subscription (see module)."""
        self.subscription: Subscription | None = None
        self.doorbell: Doorbell | None = None
        """The session's own doorbell (IPC): the broker may ring it after each answer."""
        self.rung = False
        """The broker rings :attr:`doorbell` after each answer (it said so at CONNECT)."""
        self._reads_rung = False  # reads_when_rung, kept by start and on_connected
        self._handler = handler
        self._state = state
        self._pending = pending
        self._housekeeping = housekeeping
        self._next_due = next_due
        self._idle: IdleStrategy | None = None
        self._thread: threading.Thread | None = None
        self._running = False
        self._callers_lock = threading.Lock()
        self._readers = 0  # threads in read_until (a rung session's readers)
        self._resume_ns = 0  # the poller of a rung session reads again from then on
        self._callers_waiting = 0  # callers asleep on the doorbell of a polling poller
        self._last_read_ns = 0  # when a caller last read answers (CallerReads, polled)
        self.release_ring: Callable[[], None] = _no_ring
        """Rings the broker for the pulls the answers' callbacks sent on the reading thread
        (see ``_request_sender.py``): called as each poll that ran them returns."""
        self._bell = Doorbell.allocate() if HAS_FUTEX else None  # the poller's own
        self._spin = SpinPredictor(_CALLER_SPIN_NS)
        self._back_to_back = BackToBackSpin(back_to_back_spin_ns)
        self._poller_spin = SpinPredictor(0)  # the poller's, from its idle strategy
        self._read_word: int | None = None
        """The doorbell's word read before a poll that read every answer (see :meth:`_read`):
        the next :meth:`read_until` waits on it before its first poll; taken once."""

    def start(
        self, subscription: Subscription, doorbell: Doorbell | None, idle: IdleStrategy, name: str
    ) -> None:
        """Read ``subscription`` from now on: start the poller thread (``name``; ``idle`` between
        its empty polls). ``doorbell`` is the session's own, if it has one."""
        self.subscription = subscription
        self.doorbell = doorbell
        self._idle = idle
        if isinstance(idle, DoorbellIdleStrategy):
            self._poller_spin = SpinPredictor(idle.spin_window_ns)
        self._reads_rung = self._rung_reading()
        self._running = True
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def on_connected(self, rung: bool) -> None:
        """The CONNECT answer said whether the broker rings the session's doorbell after each
        answer: from now on waiting threads (and a poller idle on the doorbell) rely on it."""
        self.rung = rung
        if isinstance(self._idle, DoorbellIdleStrategy):
            self._idle.all_rung = self._all_rung
        self._reads_rung = self._rung_reading()

    def _all_rung(self) -> bool:
        """For the poller's doorbell strategy: every answer rings (the broker said so)."""
        return self.rung

    @property
    def reads_when_rung(self) -> bool:
        """Waiting threads read the answers, asleep on the doorbell between polls, and the
        poller keeps out of their way (a rung session, a doorbell strategy; see module)."""
        return self._reads_rung

    def _rung_reading(self) -> bool:
        return self.rung and self._bell is not None and isinstance(self._idle, DoorbellIdleStrategy)

    def stop(self) -> None:
        """Stop the poller thread and wait for it (up to 5 s; not when called on it)."""
        self._running = False
        self._pending.call_reader = None
        self._wake_poller()
        self.wake_readers()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)

    def wake_readers(self) -> None:
        """Ring the session's doorbell: threads in :meth:`read_until` look at what they wait
        for again (another thread made it happen, or gave up on it)."""
        bell = self.doorbell
        if bell is not None:
            bell.ring()

    # -- a thread reading while it waits -----------------------------------------------------

    def read_until(
        self,
        done: Callable[[], bool],
        deadline_ns: int,
        linger_ns: int,
        before: Callable[[], None] | None = None,
    ) -> bool:
        """Read answers on this thread until ``done()`` or ``deadline_ns`` (monotonic): poll,
        and between polls sleep on the session's doorbell (see module). False at once, having
        read nothing, when the session is not read that way (:attr:`reads_when_rung`) or this
        thread is already reading (a future's callback). ``done`` is asked after each poll and
        wake-up; whoever makes it true from another thread calls :meth:`wake_readers`. The
        poller keeps away for ``linger_ns`` after the last reader leaves (0: it takes over
        at once if requests nobody waits for are pending). ``before``: called once this thread
        counts as a reader, before its first poll (not when False is returned), so that the
        requests it submits are this thread's to read and do not call the poller (a consumer's
        deferred pulls). Also returns, True, once the session failed or closed."""
        bell = self.doorbell
        subscription = self.subscription
        if (
            bell is None
            or subscription is None
            or not self._reads_rung
            or self._state.polling_thread == threading.get_ident()
        ):
            return False
        with self._callers_lock:  # a reader more (a consumer's every poll: inline)
            self._readers += 1
            self._pending.call_reader = None  # a thread reads: new requests need no poller
        try:
            if before is not None:
                before()
            self._read(done, deadline_ns, bell, subscription)
        finally:
            self._leave(linger_ns)
        return True

    def request(
        self, submit: Callable[[_B, int], Completion[_T]], body: _B, timeout_ms: int
    ) -> Completion[_T]:
        """``submit(body, timeout_ms)`` a request and wait up to ``timeout_ms`` for its answer
        as :meth:`await_answer` does; the future. The thread counts as a reader from before the
        submit, so that its request does not call the poller; a caller sending back to back
        polls for its answer through a short window before it sleeps (``_back_to_back.py``).
        (The submit and its arguments apart, not a closure of them: a Python call less a
        request.)"""
        bell, subscription = self.doorbell, self.subscription
        if (
            bell is None
            or subscription is None
            or not self._reads_rung  # reads_when_rung without a call
            or self._state.polling_thread == threading.get_ident()
        ):
            future = submit(body, timeout_ms)
            self.await_answer(future, timeout_ms)
            return future
        with self._callers_lock:  # a reader more, as in read_until
            self._readers += 1
            self._pending.call_reader = None
        try:
            # the word before the submit: the answer's ring, which can only follow the submit,
            # ends the first wait, so no poll is needed before it (that poll found nothing but
            # cost the caller about a twentieth of a send's CPU)
            observed = bell.prepare()
            future = submit(body, timeout_ms)
            submitted_ns = time.monotonic_ns()
            deadline_ns = submitted_ns + timeout_ms * 1_000_000
            back_to_back = self._back_to_back
            if back_to_back.should_poll(submitted_ns) and self._readers == 1:
                observed = self._poll_briefly(future.done, bell, subscription, submitted_ns)
            if not future.done():  # (polled for and read: no call more)
                self._read(future.done, deadline_ns, bell, subscription, observed)
            back_to_back.answered(time.monotonic_ns())
        finally:
            self._leave(self.linger_ns)
        if self.callers_read and not future.done():
            raise RequestTimeoutError(
                "no answer in time", session_id=self._state.session_id, timeout_ms=timeout_ms
            )
        return future

    def _poll_briefly(
        self, done: Callable[[], bool], bell: Doorbell, subscription: Subscription, since_ns: int
    ) -> int:
        """A back-to-back caller's polls for its answer (``_back_to_back.py``), until
        ``done()`` or the spin window since ``since_ns`` ends; returns the doorbell's word read
        before the last poll, which the wait after it (if any) starts from."""
        predictor = self._back_to_back.predictor
        until_ns = since_ns + predictor.window_ns
        state = self._state
        monotonic_ns = time.monotonic_ns
        while True:
            observed = bell.prepare()
            self._poll_locked(subscription)
            now_ns = monotonic_ns()
            if done() or now_ns >= until_ns or state.failure is not None or state.closed:
                predictor.observe(now_ns - since_ns)
                return observed

    def _leave(self, linger_ns: int) -> None:
        now_ns = time.monotonic_ns()
        with self._callers_lock:
            self._readers -= 1
            last = not self._readers
            if last:
                self._resume_ns = max(self._resume_ns, now_ns + linger_ns)
                if self.calls_poller:
                    self._pending.call_reader = self._call_poller
        if last and not linger_ns and self.calls_poller and self._pending.futures:
            self._call_poller()  # requests nobody waits for: the poller reads them now

    def _read(
        self,
        done: Callable[[], bool],
        deadline_ns: int,
        bell: Doorbell,
        subscription: Subscription,
        observed: int | None = None,
    ) -> None:
        """Read answers until ``done()``, the deadline, or the session fails, asleep on ``bell``
        between empty polls. ``observed``: the bell's word read before the request went out,
        so the first wait comes before any poll (see :meth:`request`); without it, the word
        the last read kept, if any (below).

        The word kept: when the poll that made ``done()`` true read every answer (fewer
        fragments than its limit, none whose reading raised, ``SessionState.answer_failed``),
        the word read before it is kept for the next call, which then sleeps before its first
        poll rather than after one that finds nothing (a consumer's ``poll()`` that waits for
        its next message: three Python calls a pull). It keeps the doorbell's contract: an
        answer published before that word was read was read by that poll (on any queue of the
        session: the poll read to the end), one published since has rung, and the wait on the
        word returns at once."""
        state = self._state
        monotonic_ns = time.monotonic_ns
        if observed is None:
            observed = self._read_word
            self._read_word = None
        if observed is not None and not (done() or state.failure is not None or state.closed):
            remaining_ns = deadline_ns - monotonic_ns()
            if remaining_ns <= 0:
                return
            bell.await_ring(observed, remaining_ns)
        while not done():
            if state.failure is not None or state.closed:
                return
            observed = bell.prepare()
            work = self._poll_locked(subscription)
            if done():
                if work < FRAGMENT_LIMIT and not state.answer_failed:
                    self._read_word = observed  # the poll read every answer (see above)
                else:
                    state.answer_failed = False
                break
            remaining_ns = deadline_ns - monotonic_ns()
            if remaining_ns <= 0:
                return
            if not work:
                bell.await_ring(observed, remaining_ns)

    def _poll_until(
        self, done: Callable[[], bool], subscription: Subscription, until_ns: int
    ) -> None:
        """Poll for answers while not ``done()``, until ``until_ns`` (monotonic): read them when
        no other thread is reading, else yield to it."""
        lock = self.lock
        poll = subscription.poll
        handler = self._handler
        ident = threading.get_ident()
        while not done() and time.monotonic_ns() < until_ns:
            if lock.acquire(blocking=False):
                self._state.polling_thread = ident
                try:
                    poll(handler, FRAGMENT_LIMIT)
                finally:
                    self._state.polling_thread = 0
                    if self._state.ring_held:  # pulls its callbacks sent
                        self.release_ring()
                    lock.release()
            else:
                os.sched_yield()

    @abstractmethod
    def await_answer(self, future: Completion[_T], timeout_ms: int) -> None:
        """Called by a thread about to wait ``timeout_ms`` for ``future``: read answers on it as
        this reader does, and return when ``future`` is done or left to the poller thread (the
        caller then blocks on it). Raises :class:`~client.RequestTimeoutError` when the caller
        read until the timeout without its answer."""

    # -- the poller thread -------------------------------------------------------------------

    def _wake_poller(self) -> None:
        bell = self._bell
        if bell is not None:
            bell.ring()

    def _call_poller(self) -> None:
        """``PendingRequests.call_reader``: a request nobody would read the answer of was
        submitted (or left pending): the poller reads from now on."""
        self._resume_ns = 0
        self._pending.call_reader = None
        self._wake_poller()

    def _poll_locked(self, subscription: Subscription) -> int:
        """One poll of the answers, holding the lock (the poller thread, or a caller reading its
        own answer), with the reading thread marked and a held ring released after it."""
        with self.lock:
            self._state.polling_thread = threading.get_ident()
            try:
                return subscription.poll(self._handler, FRAGMENT_LIMIT)
            finally:
                self._state.polling_thread = 0
                if self._state.ring_held:  # pulls its callbacks sent
                    self.release_ring()

    def _run(self) -> None:
        """The poller thread's loop, until :meth:`stop`: a rung session's (:meth:`_rung_cycle`),
        else polling with the idle strategy, the housekeeping about every millisecond (see
        module for when it steps aside)."""
        tighten_timer_slack()  # parks of the poller end when asked, not 50 us later
        subscription, idle = self.subscription, self._idle
        assert subscription is not None and idle is not None
        housekeeping = self._housekeeping
        callers_read = self.callers_read
        next_check_ns = 0
        while self._running:
            if self.reads_when_rung:
                try:
                    self._rung_cycle(subscription)
                except Exception:  # keep the poller alive: one bad answer must not stop it
                    SESSION_LOG.exception(
                        "session poller error: session_id=%s", self._state.session_id
                    )
                continue
            try:
                if callers_read and (
                    self._callers_waiting
                    or time.monotonic_ns() - self._last_read_ns < CALLER_READ_GRACE_NS
                ):
                    work = 0  # the callers read the answers
                else:
                    work = self._poll_locked(subscription)
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

    def _rung_cycle(self, subscription: Subscription) -> None:
        """One step of a rung session's poller (see module): the housekeeping when due, then
        either out of the way (asleep on its own doorbell until the next due, the end of the
        readers' linger or a call), or reading pending answers (:meth:`_read_pending`)."""
        own = self._bell
        assert own is not None
        pending = self._pending
        now_ns = time.monotonic_ns()
        due_ns = self._next_due(now_ns)
        if due_ns <= now_ns:
            if self.lock.acquire(blocking=False):  # what came meanwhile (a keepalive's answer)
                self.lock.release()
                self._poll_locked(subscription)
            self._housekeeping(now_ns)
            due_ns = max(self._next_due(now_ns), now_ns + _HOUSEKEEPING_INTERVAL_NS)
        observed = own.prepare()
        with self._callers_lock:
            readers = self._readers
            resume_ns = self._resume_ns
            # nobody about to read: a new request calls the poller (set before the look at
            # the pending table below, so that a request is either seen there or calls)
            call = not readers and self.calls_poller
            pending.call_reader = self._call_poller if call else None
        if readers or now_ns < resume_ns or not pending.futures:
            until_ns = due_ns if readers or now_ns >= resume_ns else min(due_ns, resume_ns)
            own.await_ring(observed, max(0, until_ns - now_ns))
            return
        pending.call_reader = None
        self._read_pending(subscription, due_ns)

    def _read_pending(self, subscription: Subscription, due_ns: int) -> None:
        """The poller reads: a poll, and when it found nothing, polls through its spin window
        while answers have mostly come that fast (yielding the GIL and the core between polls),
        then sleeps on the session's doorbell until rung or ``due_ns``."""
        bell = self.doorbell
        assert bell is not None
        observed = bell.prepare()
        if self._poll_locked(subscription):
            return
        spin = self._poller_spin
        started_ns = time.monotonic_ns()
        if spin.should_poll():
            until_ns = started_ns + spin.window_ns
            while time.monotonic_ns() < until_ns:
                os.sched_yield()
                observed = bell.prepare()
                if self._poll_locked(subscription):
                    spin.observe(time.monotonic_ns() - started_ns)
                    return
        bell.await_ring(observed, max(0, due_ns - time.monotonic_ns()))
        if spin.window_ns:
            spin.observe(time.monotonic_ns() - started_ns)


def _no_ring() -> None:
    """No broker to ring (until the session's set-up gives the reader its sender's)."""
