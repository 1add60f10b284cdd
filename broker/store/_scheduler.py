"""One background thread that runs the store's periodic duties (ASYNC flush, consume-queue
flush and checkpoint, retention, offset persistence), each on its own interval.

A duty that raises is logged and counted; the others keep running. ``stop`` runs nothing
more; the store does its final flushes itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Duty", "Scheduler"]

_log = logging.getLogger(__name__)


@dataclass
class Duty:
    """``action`` every ``interval_ms``; ``runs`` and ``errors`` count what happened."""

    name: str
    interval_ms: int
    action: Callable[[], object]
    next_due: float = 0.0
    runs: int = 0
    errors: int = 0


class Scheduler:
    """Runs ``duties`` on a daemon thread named ``name``."""

    def __init__(self, name: str, duties: list[Duty]) -> None:
        self.name = name
        self.duties = duties
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        now = time.monotonic()
        for duty in self.duties:
            duty.next_due = now + duty.interval_ms / 1000.0
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def run_due(self, now: float) -> int:
        """Run every duty due at ``now`` (monotonic seconds); returns how many ran."""
        ran = 0
        for duty in self.duties:
            if now >= duty.next_due and not self._stop.is_set():
                duty.next_due = now + duty.interval_ms / 1000.0
                ran += 1
                duty.runs += 1
                try:
                    duty.action()
                except Exception:
                    duty.errors += 1
                    _log.exception("store duty failed: duty=%s", duty.name)
        return ran

    def _run(self) -> None:
        while not self._stop.is_set():
            self.run_due(time.monotonic())
            if not self.duties:
                self._stop.wait()
                return
            wait_s = min(d.next_due for d in self.duties) - time.monotonic()
            if wait_s > 0:
                self._stop.wait(wait_s)
