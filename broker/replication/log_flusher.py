"""``LogFlusher``: a member's fsync thread, so that its replication agent keeps sending and
receiving while the disk works.

An fsync of the commit log takes about a millisecond on the development VM (more under load).
Done on the replication agent's thread, it held everything else up for as long: the leader
sent the next bytes and took the followers' ACKs only after its own fsync, a follower read the
next APPENDs only after its fsync. The flusher takes the fsync off that thread, as a group
commit: :meth:`LogFlusher.request` (the agent, after its log grew) asks for one; the thread
fsyncs everything appended by the time it starts (``log.flush()``), then calls ``on_flushed``
(the agent's: a follower ACKs from this thread, a leader's agent is woken); requests made while
it works are served by one more fsync after it.
The ack rule does not change: the leader counts its own ``flushed_physical_offset``, a follower
acknowledges its own, and both are set only after the fsync returned.

An fsync that fails (the store raises its I/O error) is logged and tried again at the next
request, at most every :data:`_RETRY_S`; the offsets it would have moved stay where they were,
so nothing is acknowledged on it.

Caller: the replication agent (one flusher per member, for whichever role it has); the roles
call :meth:`LogFlusher.request`. Affects: the store's flushed offset.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from aeromq.broker.replication.replicated_log import ReplicatedLog
from aeromq.transport.util import name_os_thread

__all__ = ["LogFlusher"]

_log = logging.getLogger(__name__)

_RETRY_S: Final = 0.1
"""After a failed fsync, the next one waits at least this long."""
_JOIN_S: Final = 5.0


class LogFlusher:
    """The fsync thread of member ``name``'s ``log`` (see module)."""

    def __init__(self, log: ReplicatedLog, on_flushed: Callable[[], object], name: str) -> None:
        self._log = log
        self._on_flushed = on_flushed
        self._cond = threading.Condition(threading.Lock())
        self._wanted = False
        self._running = True
        self.fsyncs = 0
        """fsyncs done (for tests and stats)."""
        self.failures = 0
        """fsyncs that raised."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def request(self) -> None:
        """Ask for an fsync of everything appended so far (any thread; cheap when one is
        already asked for)."""
        with self._cond:
            if not self._wanted:
                self._wanted = True
                self._cond.notify()

    def close(self) -> None:
        """Stop the thread after the fsync it may be doing; idempotent."""
        with self._cond:
            self._running = False
            self._cond.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(_JOIN_S)

    def _run(self) -> None:
        name_os_thread(self._thread.name)
        cond = self._cond
        while True:
            with cond:
                while not self._wanted and self._running:
                    cond.wait()
                if not self._running:
                    return
                self._wanted = False
            try:
                self._log.flush()
                self.fsyncs += 1
            except Exception as exc:  # the store's I/O error: nothing acknowledged on it
                self.failures += 1
                _log.error("replication: fsync of the commit log failed: %s", exc)
                time.sleep(_RETRY_S)
                with cond:
                    self._wanted = True
                continue
            self._on_flushed()
