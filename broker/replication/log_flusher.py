"""``LogFlusher``: a member's fsync thread, so that its replication agent keeps sending and
receiving while the disk works.

An fsync of the commit log takes about a millisecond on the development VM (more under load).
Done on the replication agent's thread, it held everything else up for as long: the leader
sent the next bytes and took the followers' ACKs only after its own fsync, a follower read the
next APPENDs only after its fsync. The flusher takes the fsync off that thread, as a group
commit: :meth:`LogFlusher.request` (the agent, after its log grew) asks for one (a ring of the
thread's doorbell, a futex word); the thread fsyncs everything appended by the time it starts
(``log.flush()``), then calls ``on_flushed`` (the agent's: a follower ACKs from this thread, a
leader's agent is woken when its fsync may move the high watermark); requests made while it
works are served by one more fsync after it. A leader on its media driver's thread uses it only
with ``ReplicationSettings.leader_fsync_inline`` False (not the default): the driver's thread
goes on sending and receiving while the disk works.
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
from aeromq.transport.concurrent import Doorbell
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
        self._bell = Doorbell.allocate()
        """What the thread sleeps on: a futex word (no lock a request, the GIL released while
        it sleeps; a ``threading.Condition`` cost both threads a lock and a waiter's lock a
        round, on the leader's driver thread among them)."""
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
        already asked for: the thread clears the request before the fsync it serves it with,
        which covers what was appended before)."""
        if not self._wanted:
            self._wanted = True
            self._bell.ring()

    def close(self) -> None:
        """Stop the thread after the fsync it may be doing; idempotent."""
        self._running = False
        self._bell.ring()
        if self._thread is not threading.current_thread():
            self._thread.join(_JOIN_S)

    def _run(self) -> None:
        name_os_thread(self._thread.name)
        bell = self._bell
        while True:
            observed = bell.prepare()  # before the checks: a request after them rings
            if not self._running:
                return
            if not self._wanted:
                bell.await_ring(observed, -1)
                continue
            self._wanted = False
            try:
                self._log.flush()
                self.fsyncs += 1
            except Exception as exc:  # the store's I/O error: nothing acknowledged on it
                self.failures += 1
                _log.error("replication: fsync of the commit log failed: %s", exc)
                time.sleep(_RETRY_S)
                self._wanted = True
                continue
            self._on_flushed()
