"""``TaskScheduler``: one thread that runs delayed actions in due order, for producers and
consumers.

Every pull task of a consumer runs on this one thread (RocketMQ uses a pool of 20): a pull task
does only quick work (flow-control checks, issuing an asynchronous pull) and hands blocking work
(computing a start offset, persisting offsets) to an executor, so one thread keeps every queue
moving and no queue waits behind another's long poll. Periodic jobs (auto persistence,
heartbeats, topic metadata checks) are scheduled here too and run on the executor. A producer's
async sends that wait for a broker group to elect a leader wait here (``producer/_failover.py``),
no thread each.

:class:`Scheduler` is the Protocol the pull tasks see, so tests can drive them with a manual
scheduler (:class:`consumer.testing.ManualScheduler`); ``consumer.scheduler`` re-exports both.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Action", "Scheduler", "TaskScheduler"]

_log = logging.getLogger(__name__)

Action = Callable[[], None]
"""A scheduled action: run once, on the scheduler's thread."""


class Scheduler(Protocol):
    """What pull tasks schedule their runs on."""

    def schedule(self, delay_ms: int, action: Action) -> object:
        """Run ``action`` once, ``delay_ms`` from now (0: as soon as possible)."""
        ...


class TaskScheduler:
    """A delayed-action thread (see the module doc). Errors of an action are logged and
    counted in :attr:`errors`; the thread goes on."""

    __slots__ = ("_condition", "_heap", "_name", "_running", "_sequence", "_thread", "errors")

    def __init__(self, name: str = "aeromq-consumer-scheduler") -> None:
        self._name = name
        self._heap: list[tuple[int, int, Action]] = []
        self._sequence = itertools.count()
        self._condition = threading.Condition(threading.Lock())
        self._running = False
        self._thread: threading.Thread | None = None
        self.errors = 0

    def start(self) -> None:
        with self._condition:
            if self._thread is not None:
                return
            self._running = True
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def schedule(self, delay_ms: int, action: Action) -> bool:
        """Run ``action`` once, ``delay_ms`` from now; False (nothing scheduled) when stopped."""
        due_ns = time.monotonic_ns() + max(0, delay_ms) * 1_000_000
        with self._condition:
            if not self._running:
                return False
            heap = self._heap
            heapq.heappush(heap, (due_ns, next(self._sequence), action))
            if heap[0][2] is action:
                self._condition.notify()
        return True

    def pending(self) -> int:
        """How many actions wait to run."""
        return len(self._heap)

    def shutdown(self, timeout_s: float = 5.0) -> list[Action]:
        """Stop: pending actions are dropped (and returned, in due order, for a caller that
        must fail what they stood for); waits up to ``timeout_s`` for the running one."""
        with self._condition:
            self._running = False
            dropped = [entry[2] for entry in sorted(self._heap)]
            self._heap.clear()
            self._condition.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        return dropped

    def _run(self) -> None:
        condition = self._condition
        heap = self._heap
        monotonic_ns = time.monotonic_ns
        heappop = heapq.heappop
        while True:
            with condition:
                while True:
                    if not self._running:
                        return
                    if heap:
                        wait_ns = heap[0][0] - monotonic_ns()
                        if wait_ns <= 0:
                            action = heappop(heap)[2]
                            break
                        condition.wait(wait_ns / 1e9)
                    else:
                        condition.wait()
            try:
                action()
            except Exception:
                self.errors += 1
                _log.exception("scheduled action failed: %r", action)
