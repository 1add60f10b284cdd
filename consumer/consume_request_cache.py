"""``ConsumeRequestCache``: pulled batches waiting for ``poll``, oldest first.

A :class:`ConsumeRequest` is one FOUND pull's messages with their queue and the process queue
they were cached in (RocketMQ's ``ConsumeRequest``). Pull callbacks :meth:`put` them; ``poll``
:meth:`take` s them, waiting up to its timeout for the first one, and may :meth:`put_back` the
part of a batch it could not return (``max_poll_records``). A seek removes its queue's requests
(:meth:`remove_queue`). The size feeds the pull task's first flow-control check
(``size * pull_batch_size > pull_threshold_for_all``).

How ``take`` waits. With an answer pump (:meth:`ConsumeRequestCache.pump_with`: the consumer's
one session with its broker, when the broker rings it), the waiting thread reads the pull
answers itself (:meth:`AnswerPump.read_until`): the answer's callback caches its messages on
this very thread, and ``take`` returns them, with no thread woken to hand them over (one
wake-up per answer, the floor's count). Without one (several brokers, UDP, a consumer whose
broker API has no sessions) it waits on the cache's condition variable, and the sessions'
poller threads put what they read. Either way a :meth:`put` from another thread, and
:meth:`close`, wake it.

Deferred actions (:meth:`defer`): the thread reading answers in ``take`` may leave an action
for the start of the next ``take`` (by whichever thread calls it), rather than run it before it
returns what it cached: a caught-up queue's next pull (``consumer.pull_task``), which then goes
out while the application's next ``poll()`` is about to wait, not between the messages' arrival
and the ``poll()`` that returns them. The next ``take`` runs them first: as a reader of its
pump (``before``, :meth:`AnswerPump.read_until`) when it is going to wait there, so that their
answers are its to read; at once when it is not (requests cached: it returns without waiting;
a zero timeout; no pump). With a bound (:meth:`defer_at_most`: the consumer's scheduler and
``deferred_pull_max_delay_ms``), an action no ``take`` ran within the bound of its deferral runs
from the scheduler instead: an application that stops polling for a while still has its
queues' pulls out (and with them its sessions' liveness checks and failover). One sweep at a
time is armed, and only while actions wait: at most one scheduler wake-up per bound. An action
is popped once, by a ``take`` or by the sweep, and run by whoever popped it: never twice.

Listeners (:meth:`add_listener`): the asyncio consumer (:mod:`aeromq.aio`) waits for messages
on its event loop, not in a thread per call: a listener is called (on the thread that put)
after every :meth:`put` and :meth:`put_back`, and once at :meth:`close`. It must be quick and
must not block; the asyncio consumer's only hands a wake-up to its loop
(``loop.call_soon_threadsafe``).

Thread safety: one lock and a condition variable over it; the answer pump reads with no lock
of the cache held. The lock is taken as itself (``threading.Condition``'s own ``__enter__`` and
``notify`` are Python functions: four calls a message at a consumer keeping up), and a put
notifies only when a thread waits on the condition. What a waiting pump asks after each of its
polls (``done()``: a request cached, or the cache closed) is one call in C,
``any((requests, closed))``, not a method: four to five Python calls a message fewer.

Caller: the pull tasks (``put``, ``defer``), ``poll`` (``take``, ``put_back``), a seek
(``remove_queue``), shutdown (``close``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from aeromq.client import MessageExt, MessageQueue
from aeromq.consumer.process_queue import ProcessQueue

__all__ = ["AnswerPump", "CacheListener", "ConsumeRequest", "ConsumeRequestCache", "PumpSource"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConsumeRequest:
    """Messages of one pull, their queue, and the process queue holding them."""

    messages: Sequence[MessageExt]
    queue: MessageQueue
    process_queue: ProcessQueue


class AnswerPump(Protocol):
    """What reads the pull answers on a thread that waits for them (a
    :class:`~client.session.ClientSession`)."""

    def read_until(
        self,
        done: Callable[[], bool],
        deadline_ns: int,
        before: Callable[[], None] | None = None,
    ) -> bool:
        """Read answers on this thread until ``done()`` or ``deadline_ns`` (monotonic); False
        at once when it cannot (the caller then waits its own way). ``before`` is called first
        (not when False is returned), with this thread counted as the reader of the answers to
        what it submits."""
        ...

    def wake_readers(self) -> None:
        """Make a thread in :meth:`read_until` ask ``done()`` again."""
        ...


PumpSource = Callable[[], AnswerPump | None]
"""The answer pump to use now, or None (asked at each wait: sessions come and go)."""

CacheListener = Callable[[], None]
"""``listener()``: requests may be waiting in the cache, or it was closed."""


Deferred = tuple[int, Callable[[], None]]
"""A deferred action and when it was deferred (monotonic ns)."""

_NOTHING_DEFERRED: deque[Deferred] = deque(maxlen=0)
"""``take``'s deferred actions when it is not to run them: always empty."""

Schedule = Callable[[int, Callable[[], None]], object]
"""``schedule(delay_ms, action)``: a scheduler's (``client.scheduler.TaskScheduler``)."""


class ConsumeRequestCache:
    """A blocking FIFO of :class:`ConsumeRequest` (see the module doc)."""

    __slots__ = (
        "_closed",
        "_condition",
        "_deferred",
        "_fallback",
        "_fallback_ms",
        "_listeners",
        "_lock",
        "_pump",
        "_pump_source",
        "_pumper",
        "_ready",
        "_requests",
        "_sweep_armed",
        "_waiting",
        "size",
    )

    def __init__(self) -> None:
        self._requests: deque[ConsumeRequest] = deque()
        self.size: Callable[[], int] = self._requests.__len__
        """How many requests are cached: ``len(cache)`` as a call in C (the pull task's flow
        control asks it each pull; ``__len__`` is a Python call)."""
        self._lock = threading.Lock()
        self._condition = threading.Condition(self._lock)
        self._waiting = 0  # threads in the condition's wait (under the lock)
        self._closed: list[bool] = []  # [True] once closed
        self._ready: Callable[[], bool] = functools.partial(any, (self._requests, self._closed))
        """A request cached, or the cache closed: a call in C (see the module doc)."""
        self._pump_source: PumpSource | None = None
        self._pump: AnswerPump | None = None  # the pump a thread in take() reads with now
        self._pumper = 0  # that thread's ident
        self._listeners: tuple[CacheListener, ...] = ()
        self._deferred: deque[Deferred] = deque()  # see defer
        self._fallback: Schedule | None = None  # see defer_at_most
        self._fallback_ms = 0
        self._sweep_armed = False  # a sweep of the deferred actions is scheduled

    def __len__(self) -> int:
        return len(self._requests)

    def pump_with(self, source: PumpSource | None) -> None:
        """Let waits read the answers through ``source``'s pump (see the module doc); None:
        wait on the condition variable."""
        self._pump_source = source

    def add_listener(self, listener: CacheListener) -> None:
        """Call ``listener()`` after every put and at close (see the module doc)."""
        self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: CacheListener) -> None:
        """Stop calling ``listener`` (one not added is ignored; a bound method given again, a new
        object equal to the one added, is removed: ``==``, not ``is``)."""
        self._listeners = tuple(known for known in self._listeners if known != listener)

    def put(self, request: ConsumeRequest) -> None:
        """Cache ``request`` last; wake a thread waiting in :meth:`take` (on the condition, or
        reading answers on another thread than this one) and call the listeners."""
        with self._lock:
            self._requests.append(request)
            if self._waiting:
                self._condition.notify()
        pump = self._pump  # (_wake_pumper, inline: the put of every pulled answer)
        if pump is not None and self._pumper != threading.get_ident():
            pump.wake_readers()
        if self._listeners:
            self._notify()

    def put_back(self, request: ConsumeRequest) -> None:
        """Return a request to the head of the cache (the rest of a split batch)."""
        with self._lock:
            self._requests.appendleft(request)
            if self._waiting:
                self._condition.notify()
        self._wake_pumper()
        if self._listeners:
            self._notify()

    def _wake_pumper(self) -> None:
        """A put from another thread than the one reading answers in :meth:`take` wakes it."""
        pump = self._pump
        if pump is not None and self._pumper != threading.get_ident():
            pump.wake_readers()

    def _notify(self) -> None:
        for listener in self._listeners:
            try:
                listener()
            except Exception:
                _log.exception("consume request listener failed: %r", listener)

    def defer_at_most(self, bound_ms: int, schedule: Schedule) -> None:
        """Run a deferred action from ``schedule`` when no :meth:`take` ran it within
        ``bound_ms`` (>= 1) of its deferral (see the module doc). Without this call an action
        waits for the next ``take``, however long."""
        if bound_ms < 1:
            raise ValueError(f"deferral bound must be at least 1 ms, not {bound_ms}")
        self._fallback_ms = bound_ms
        self._fallback = schedule

    def defer(self, action: Callable[[], None]) -> bool:
        """Leave ``action`` to the start of the next :meth:`take` (see the module doc) when this
        thread is the one reading answers in a ``take``, which returns what it cached next;
        True then. False otherwise (and once closed): the caller runs it itself."""
        if self._pumper != threading.get_ident() or self._closed:
            return False
        self._deferred.append((time.monotonic_ns(), action))
        if not self._sweep_armed and self._fallback is not None:
            self._arm(self._fallback_ms)
        return True

    def _arm(self, delay_ms: int) -> None:
        """Schedule a :meth:`_sweep` in ``delay_ms``."""
        fallback = self._fallback
        if fallback is not None:
            self._sweep_armed = True
            fallback(delay_ms, self._sweep)

    def _sweep(self) -> None:
        """From the scheduler: run the actions deferred at least the bound ago that no take ran
        meanwhile, oldest first; arm the next sweep for the first one not due yet."""
        self._sweep_armed = False  # (first: a defer from now on arms its own)
        deferred = self._deferred
        bound_ns = self._fallback_ms * 1_000_000
        while deferred:
            try:
                deferred_ns = deferred[0][0]
            except IndexError:  # (a take ran them meanwhile)
                return
            not_due_ns = deferred_ns + bound_ns - time.monotonic_ns()
            if not_due_ns > 0:
                if not self._sweep_armed:
                    self._arm(-(-not_due_ns // 1_000_000))
                return
            try:
                entry = deferred.popleft()
            except IndexError:
                return
            # (a take may have popped the one looked at: this one, popped here, runs here)
            self._run(entry[1])

    def _run_deferred(self) -> None:
        """Run the deferred actions, oldest first (an action that raises is logged)."""
        deferred = self._deferred
        while deferred:
            try:
                entry = deferred.popleft()
            except IndexError:  # (close or a sweep took them meanwhile)
                return
            self._run(entry[1])

    @staticmethod
    def _run(action: Callable[[], None]) -> None:
        try:
            action()
        except Exception:
            _log.exception("deferred consume action failed: %r", action)

    def take(self, timeout_s: float, *, first: bool = True) -> ConsumeRequest | None:
        """The oldest request, waiting up to ``timeout_s`` (0: do not wait); None on timeout.
        The deferred actions run first (see the module doc), but for a take with ``first``
        False (a ``poll``'s later takes, which gather what is cached: its first ran them)."""
        deferred = self._deferred if first else _NOTHING_DEFERRED
        if deferred and (self._requests or timeout_s <= 0):
            self._run_deferred()  # no wait follows: they go now
        with self._lock:
            requests = self._requests
            if requests:
                return requests.popleft()
            if timeout_s <= 0:
                return None
        deadline_ns = time.monotonic_ns() + int(timeout_s * 1e9)
        closed = self._closed
        while True:
            # Read answers on this thread until a request is cached, the cache is closed or
            # the deadline (see the module doc); no pump to read with now: the condition
            source = self._pump_source
            pump = None if source is None else source()
            pending = bool(deferred)  # deferred actions to run before this wait
            if pump is not None:
                self._pumper = threading.get_ident()
                self._pump = pump
                try:
                    ready = self._ready
                    # (a put between the look under the lock and the pump's start: ready)
                    if ready():
                        pumped = True
                    else:
                        before = self._run_deferred if pending else None
                        pumped = pump.read_until(ready, deadline_ns, before)
                        pending = pending and not pumped  # (the pump ran them)
                finally:
                    self._pump = None
                    self._pumper = 0
            else:
                pumped = False
            if pending:  # not run as the pump's reader: now (what this read deferred waits)
                self._run_deferred()
            with self._lock:
                if requests:
                    return requests.popleft()
                if closed:
                    return None
                remaining_ns = deadline_ns - time.monotonic_ns()
                if remaining_ns <= 0:
                    return None
                if not pumped:
                    self._waiting += 1
                    try:
                        self._condition.wait(remaining_ns / 1e9)
                    finally:
                        self._waiting -= 1

    def remove_queue(self, queue: MessageQueue) -> int:
        """Remove every request of ``queue``; how many were removed."""
        with self._lock:
            before = len(self._requests)
            kept = [request for request in self._requests if request.queue != queue]
            self._requests.clear()
            self._requests.extend(kept)
            return before - len(kept)

    def close(self) -> None:
        """Shutdown: every waiting and later ``take`` returns at once (None when empty)."""
        with self._lock:
            if not self._closed:
                self._closed.append(True)
            self._condition.notify_all()
        self._deferred.clear()
        self._wake_pumper()
        if self._listeners:
            self._notify()
