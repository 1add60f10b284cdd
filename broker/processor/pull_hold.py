"""Long polling: pulls that found nothing new, held until a message arrives or time runs out.

RocketMQ's ``PullRequestHoldService`` with ``NotifyMessageArrivingListener``. A pull that found
no new message (NO_NEW_MSG) and asked to be suspended is held here, keyed by (topic, queue id),
with the offset it waits beyond and a deadline. Two things wake it, each exactly once:

- an arrival: the store calls :meth:`PullHoldService.on_arrival` after every put (on the
  writer's thread); every hold of that queue whose offset is below the queue's new end is
  released with ``on_wake(True)``, called right there on the writer's thread;
- its deadline: ``on_wake(False)``, on the service's own thread; and at
  :meth:`~PullHoldService.shutdown`, every hold left.

``on_wake`` never runs under the service's lock. An arrival's wakes run on the writer's thread
(for sends over the transport, the broker's session agent, which then writes the answers in the
same duty cycle): handing them to the service's thread cost two thread wake-ups per held pull,
about 0.3 us a message of broker CPU end to end with a caught-up consumer (``python -m bench
consumer``). The service's thread wakes only for a hold due sooner than any it waits for, and
at deadlines. A hold whose queue moved between the pull's read and
:meth:`~PullHoldService.hold` is released at once (the end is re-read after the hold is
registered), so no arrival is missed.

An arrival on a thread that asked for it (:meth:`PullHoldService.defer_wakes`: the broker's
session agent, around a send whose answer goes before those of the pulls its store releases)
releases its holds but leaves their callbacks in a list for the caller, which wakes them
(:meth:`PullHoldService.wake_deferred`) once it has answered the send.

Caller: the pull processor (``hold``), the store (``on_arrival``), the broker (lifecycle), the
session agent (``defer_wakes``, ``wake_deferred``).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ["DEFAULT_MAX_SUSPEND_MS", "PullHoldService", "WakeCallback"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_SUSPEND_MS: Final = 20_000
"""The longest a pull is held (RocketMQ's ``brokerSuspendMaxTimeMillis`` on the client side)."""

WakeCallback = Callable[[bool], None]
"""``on_wake(arrived)``: True when a message arrived beyond the held offset, False at timeout."""

_NS_PER_MS: Final = 1_000_000
_HOLD: Final = 2  # of a deadline heap's (deadline_ns, sequence, hold) items
_COMPACT_MIN_ENTRIES: Final = 256
"""The fewest deadline entries at which those of released holds are dropped (see ``_compact``)."""


def _called(arrived: bool) -> None:
    """The callback of a hold whose own was called (it is never called twice)."""


class _Hold:
    """A held pull. Made by :meth:`PullHoldService.hold` alone, which sets every field: no
    ``__init__`` (a Python call fewer a hold, about one a message with a caught-up consumer)."""

    __slots__ = ("deadline_ns", "done", "key", "offset", "on_wake")
    key: tuple[str, int]
    offset: int
    deadline_ns: int
    on_wake: WakeCallback
    done: bool


_new_hold: Final = _Hold.__new__


class PullHoldService:
    """Holds pulls (see module). ``max_offset(topic, queue_id)`` reads a queue's current end;
    ``max_suspend_ms`` caps every hold."""

    def __init__(
        self,
        max_offset: Callable[[str, int], int],
        max_suspend_ms: int = DEFAULT_MAX_SUSPEND_MS,
        clock_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self._max_offset = max_offset
        self.max_suspend_ms = max_suspend_ms
        self._clock_ns = clock_ns
        self._lock = threading.Lock()  # taken as itself on the hot path: a Condition's
        self._cond = threading.Condition(self._lock)  # __enter__ is a Python call
        self._held: dict[tuple[str, int], list[_Hold]] = {}
        self._deadlines: list[tuple[int, int, _Hold]] = []  # a heap: compared in C, no __lt__
        self._compact_at = _COMPACT_MIN_ENTRIES
        """The heap length at which :meth:`hold` drops the entries of released holds."""
        self._sequence = itertools.count()  # orders holds of one deadline
        self._ready: list[tuple[_Hold, bool]] = []
        self._running = False
        self._thread: threading.Thread | None = None
        self.woken_by_arrival = 0
        self.woken_by_timeout = 0
        self._deferred: list[WakeCallback] | None = None  # see defer_wakes
        self._deferring = 0  # the thread whose arrivals defer their wakes

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        with self._cond:
            if self._running:
                return
            self._running = True
        self._thread = threading.Thread(target=self._run, name="pull-hold", daemon=True)
        self._thread.start()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Release every hold with ``on_wake(False)`` and stop the thread (bounded join)."""
        with self._cond:
            if not self._running:
                return
            self._running = False
            self._cond.notify_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout_s)

    @property
    def held_count(self) -> int:
        """How many pulls are held now."""
        with self._cond:
            return sum(len(holds) for holds in self._held.values())

    # -- holds and arrivals ---------------------------------------------------------------

    def hold(
        self, topic: str, queue_id: int, offset: int, timeout_ms: int, on_wake: WakeCallback
    ) -> None:
        """Hold a pull of (topic, queue id) waiting beyond ``offset`` for up to ``timeout_ms``
        (capped by ``max_suspend_ms``); ``on_wake`` is called once (see the module doc).
        Once the service is stopped, a hold is answered at once with ``on_wake(False)``."""
        timeout_ms = max(0, min(timeout_ms, self.max_suspend_ms))
        key = (topic, queue_id)
        entry = _new_hold(_Hold)  # every field set here (see _Hold)
        entry.key = key
        entry.offset = offset
        entry.deadline_ns = self._clock_ns() + timeout_ms * _NS_PER_MS
        entry.on_wake = on_wake
        entry.done = False
        with self._lock:
            if not self._running:
                entry.done = True
                self._ready.append((entry, False))
                expired = self._take_ready()
            else:
                expired = None
                self._held.setdefault(key, []).append(entry)
                if len(self._deadlines) >= self._compact_at:
                    self._compact()
                heapq.heappush(self._deadlines, (entry.deadline_ns, next(self._sequence), entry))
                if self._deadlines[0][_HOLD] is entry:  # sooner than the thread waits for
                    self._cond.notify()
        if expired is not None:
            self._call(expired)
            return
        end = self._max_offset(topic, queue_id)
        if end > offset:  # it moved before we registered
            self.on_arrival(topic, queue_id, end)

    def on_arrival(self, topic: str, queue_id: int, max_offset: int) -> None:
        """The store's arrival listener: release the holds of the queue below ``max_offset``
        and call their ``on_wake(True)`` here, on the writer's thread (outside the lock)."""
        key = (topic, queue_id)
        with self._lock:
            holds = self._held.get(key)
            if not holds:
                return
            keep: list[_Hold] = []
            released: list[_Hold] = []
            for entry in holds:
                if entry.offset < max_offset:
                    entry.done = True
                    released.append(entry)
                else:
                    keep.append(entry)
            if keep:
                self._held[key] = keep
            else:
                del self._held[key]
        deferred = self._deferred
        if deferred is not None and self._deferring == threading.get_ident():
            for entry in released:  # the caller wakes them (wake_deferred)
                deferred.append(entry.on_wake)
                entry.on_wake = _called
            return
        # called here, not through _call: a caught-up consumer's pull is released in the duty
        # cycle that stored its message, with no call but its own
        for entry in released:
            self.woken_by_arrival += 1
            on_wake, entry.on_wake = entry.on_wake, _called
            try:
                on_wake(True)
            except Exception:
                _log.exception("a held pull's wake callback raised: key=%s", entry.key)

    def defer_wakes(self, into: list[WakeCallback] | None) -> None:
        """``into``: until called again with None, the holds an arrival releases on the calling
        thread are not woken there but their callbacks appended to ``into``, for
        :meth:`wake_deferred`; arrivals on other threads wake theirs as ever. None: stop."""
        self._deferred = into
        self._deferring = threading.get_ident() if into is not None else 0

    def wake_deferred(self, wakes: list[WakeCallback]) -> None:
        """Wake the holds :meth:`defer_wakes` collected in ``wakes`` (``on_wake(True)``, in the
        order they were released), and empty it."""
        for on_wake in wakes:
            self.woken_by_arrival += 1
            try:
                on_wake(True)
            except Exception:
                _log.exception("a held pull's wake callback raised (deferred)")
        wakes.clear()

    # -- the service's thread ---------------------------------------------------------------

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while self._running and not self._ready:
                    wait_s = self._expire_due()
                    if self._ready:
                        break
                    cond.wait(wait_s)
                running = self._running
                if not running:
                    self._release_all()
                ready = self._take_ready()
            self._call(ready)
            if not running:
                return

    def _expire_due(self) -> float | None:
        """Move holds past their deadline to the ready list; return the wait until the next
        deadline (None: no hold)."""
        deadlines = self._deadlines
        now_ns = self._clock_ns()
        while deadlines:
            entry = deadlines[0][_HOLD]
            if entry.done:
                heapq.heappop(deadlines)
                continue
            if entry.deadline_ns > now_ns:
                return (entry.deadline_ns - now_ns) / 1e9
            heapq.heappop(deadlines)
            self._unlink(entry)
            entry.done = True
            self._ready.append((entry, False))
        return None

    def _compact(self) -> None:
        """Drop the deadline entries of holds an arrival released. With a caught-up consumer that
        is one a message, each kept (entry, hold, key: about 3.6 containers) until its deadline,
        20 s later, unless dropped: at 1,000 msgs/s 20,000 live objects that every young
        collection promoted and every full one walked (``bench/results/2026-11-29g/gc.md``).
        The next compaction waits until the heap has doubled: O(1) a hold, amortized."""
        deadlines = self._deadlines
        deadlines[:] = [item for item in deadlines if not item[_HOLD].done]
        heapq.heapify(deadlines)
        self._compact_at = max(_COMPACT_MIN_ENTRIES, 2 * len(deadlines))

    def _release_all(self) -> None:
        for holds in self._held.values():
            for entry in holds:
                entry.done = True
                self._ready.append((entry, False))
        self._held.clear()
        self._deadlines.clear()

    def _unlink(self, entry: _Hold) -> None:
        holds = self._held.get(entry.key)
        if holds is None:
            return
        holds.remove(entry)
        if not holds:
            del self._held[entry.key]

    def _take_ready(self) -> list[tuple[_Hold, bool]]:
        ready, self._ready = self._ready, []
        return ready

    def _call(self, ready: list[tuple[_Hold, bool]]) -> None:
        for entry, arrived in ready:
            if arrived:
                self.woken_by_arrival += 1
            else:
                self.woken_by_timeout += 1
            # the entry may stay in the deadline heap until its deadline: it lets go of the
            # callback (and the request, session and answer it holds) once called
            on_wake, entry.on_wake = entry.on_wake, _called
            try:
                on_wake(arrived)
            except Exception:
                _log.exception("a held pull's wake callback raised: key=%s", entry.key)
