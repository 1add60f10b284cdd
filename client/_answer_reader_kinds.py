"""The two ways a client session's answers are read, behind :class:`~client._answer_readers.AnswerReader`
(``_answer_readers.py`` says who may poll when): :class:`PollerReads`, the default, and
:class:`CallerReads` (``SessionConfig.caller_reads``), and :func:`reader_for`, which picks one.

Caller: ``ClientSession`` (``session.py``), which makes its reader with :func:`reader_for`.
Affects: what the base class does (the pending futures, the poller's wake-ups).
"""

from __future__ import annotations

import threading
import time
from typing import TypeVar

from aeromq.client._answer_readers import (
    CALLER_POLL_NS,
    CALLER_READ_GRACE_NS,
    CALLER_WAIT_NS,
    FRAGMENT_LIMIT,
    AnswerReader,
    Housekeeping,
    NextDue,
)
from aeromq.client._pending_requests import PendingRequests
from aeromq.client._session_config import SessionConfig
from aeromq.client._session_state import SessionState
from aeromq.client._sync_answer import Completion
from aeromq.common import RequestTimeoutError
from aeromq.transport.client import Subscription
from aeromq.transport.concurrent.doorbell import Doorbell
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy
from aeromq.transport.logbuffer import FragmentHandler

__all__ = ["CallerReads", "PollerReads", "reader_for"]

_T = TypeVar("_T")


class PollerReads(AnswerReader):
    """The default reader (see module): threads that wait read the answers of a rung session
    themselves and the poller keeps out of their way; otherwise the poller thread reads, and a
    waiting caller reads too while the poller is not reading, briefly, so that a quick answer
    is not handed between threads."""

    callers_read = False
    calls_poller = True
    linger_ns = 0

    def await_answer(self, future: Completion[_T], timeout_ms: int) -> None:
        """Read answers on this thread until ``future`` is done (a rung session:
        :meth:`read_until`, up to ``timeout_ms``; then left to the poller, which fails it at its
        deadline), or, polled, for a short while when the poller thread is not reading, then
        leave it to the poller. With a doorbell the broker rings but a polling poller, sleep on
        the doorbell between polls (:meth:`_wait_on_doorbell`)."""
        subscription = self.subscription
        if subscription is None:
            return
        if self.read_until(future.done, time.monotonic_ns() + timeout_ms * 1_000_000, 0):
            return  # done, or left to the poller, which fails it at its deadline
        bell = self.doorbell
        if self.rung and bell is not None and self._state.polling_thread != threading.get_ident():
            self._wait_on_doorbell(future, bell, subscription)
            return
        self._poll_until(future.done, subscription, time.monotonic_ns() + CALLER_POLL_NS)

    def _wait_on_doorbell(
        self, future: Completion[_T], bell: Doorbell, subscription: Subscription
    ) -> None:
        """The caller's wait with a doorbell and a polling poller: poll when the poller is not
        reading, else leave the answer to it; between polls sleep until the broker rings (an
        answer came) or someone fails the future (they ring too), for up to 20 ms; first poll
        through the spin window while answers have mostly come that fast. Meanwhile the poller
        thread does not sleep on the doorbell (one thread woken per answer, not two): it
        checks deadlines every millisecond, and an answer the caller does not wait for is read
        by the caller's polls."""
        lock = self.lock
        poll = subscription.poll
        handler = self._handler
        monotonic_ns = time.monotonic_ns
        started_ns = monotonic_ns()
        spin = self._spin
        deadline_ns = started_ns + CALLER_WAIT_NS
        with self._callers_lock:
            self._callers_waiting += 1
        try:
            if spin.should_poll():
                self._poll_until(future.done, subscription, started_ns + spin.window_ns)
            while not future.done():
                observed = bell.prepare()
                if not lock.acquire(blocking=False):
                    return  # the poller is reading: it completes the future
                try:
                    poll(handler, FRAGMENT_LIMIT)
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
            if future.done():
                spin.observe(monotonic_ns() - started_ns)


class CallerReads(AnswerReader):
    """The waiting callers read the answers (``SessionConfig.caller_reads``), even without a
    doorbell; the poller thread keeps the session and reads only answers nobody waits for (see
    module)."""

    callers_read = True
    calls_poller = False
    linger_ns = CALLER_READ_GRACE_NS

    def await_answer(self, future: Completion[_T], timeout_ms: int) -> None:
        """Read answers on this thread until ``future`` is done or ``timeout_ms`` has passed
        (then :class:`~client.RequestTimeoutError`); between empty polls sleep until the broker
        rings (it does after each answer; failures and timeouts ring too), or without a
        doorbell park briefly."""
        subscription = self.subscription
        deadline_ns = time.monotonic_ns() + timeout_ms * 1_000_000
        if subscription is not None and not self.read_until(
            future.done, deadline_ns, self.linger_ns
        ):
            self._poll_for(future, subscription, deadline_ns)
        if not future.done():
            raise RequestTimeoutError(
                "no answer in time", session_id=self._state.session_id, timeout_ms=timeout_ms
            )

    def _poll_for(
        self, future: Completion[_T], subscription: Subscription, deadline_ns: int
    ) -> None:
        """The wait without a rung session's readers: poll (waiting for the lock), and between
        empty polls sleep on the doorbell if the broker rings it (up to 20 ms a sleep), else
        park briefly."""
        if self._state.polling_thread == threading.get_ident():
            return  # a callback on the reading thread: its answer cannot be read here
        monotonic_ns = time.monotonic_ns
        bell = self.doorbell if self.rung else None
        idle = BackoffIdleStrategy(max_park_period_ns=100_000)
        with self._callers_lock:
            self._callers_waiting += 1
        try:
            while not future.done():
                observed = bell.prepare() if bell is not None else 0
                work = self._poll_locked(subscription)
                remaining_ns = deadline_ns - monotonic_ns()
                if future.done() or remaining_ns <= 0:
                    break
                if work:
                    idle.reset()
                elif bell is not None:
                    bell.await_ring(observed, min(remaining_ns, CALLER_WAIT_NS))
                else:
                    idle.idle(0)
        finally:
            self._last_read_ns = monotonic_ns()
            with self._callers_lock:
                self._callers_waiting -= 1


def reader_for(
    config: SessionConfig,
    handler: FragmentHandler,
    state: SessionState,
    pending: PendingRequests,
    housekeeping: Housekeeping,
    next_due: NextDue,
) -> AnswerReader:
    """The reader ``config`` asks for: :class:`CallerReads` with ``caller_reads``, else
    :class:`PollerReads`."""
    reader = CallerReads if config.caller_reads else PollerReads
    return reader(
        handler,
        state,
        pending,
        housekeeping,
        next_due,
        back_to_back_spin_ns=config.back_to_back_spin_us * 1_000,
    )
