"""The timer checkpoint's writer: a thread of its own that saves the latest checkpoint the
service hands it, so the delivering thread never waits for the disk.

A checkpoint is replaced atomically and durably (``TimerCheckpoint.save``: two ``fsync``\\ s and
a rename). On a shared disk, and behind the commit log's own flushes, one took 5 ms at the
median and up to 280 ms under ``python -m bench timer``; on the delivering thread every message
due meanwhile waited with it (the bench's p99 lateness of 100-300 ms). Here the service only
hands over a snapshot (:meth:`CheckpointWriter.offer`: a few microseconds); the writer saves the
newest one it holds, and a snapshot that comes while it writes replaces one not written yet (each
is the whole state: the older one is not needed).

Every snapshot is true when taken (its marks are stored put-backs; its ``log_offset`` is the
log's end then, after all of them), so it stays true when written late: the service loads at
most an older one after a restart, and finds the later put-backs in the log (``_dedupe``).

A save that fails is logged and the snapshot kept: the next offer or :meth:`drain` tries again.
:meth:`drain` writes what is pending on the caller's thread and returns when the file holds it
(the service drains when it stops leading and at stop, before its last checkpoint).

Caller: the timer service (``_service``): ``offer`` from its thread, ``start``/``close`` and
``drain`` from its thread or the broker's.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from aeromq.broker._errors import StoreError
from aeromq.broker.timer._checkpoint import TimerCheckpoint
from aeromq.transport.util import name_os_thread

__all__ = ["CheckpointWriter"]

_log = logging.getLogger(__name__)

_THREAD_NAME = "aeromq-timer-cp"  # the kernel keeps 15 bytes


class CheckpointWriter:
    """Saves the newest offered checkpoint to ``path`` on its own thread (see module)."""

    def __init__(self, path: Path, file_mode: int) -> None:
        self._path = path
        self._file_mode = file_mode
        self._cond = threading.Condition()
        self._pending: TimerCheckpoint | None = None  # the newest one not saved yet
        self._offered = False  # an offer since the thread last looked
        self._write_lock = threading.Lock()  # one save at a time: the thread's or a drain's
        self._closing = False
        self._thread: threading.Thread | None = None
        self.saved = 0
        self.failed = 0

    def start(self) -> None:
        """Start the writing thread (idempotent)."""
        if self._thread is not None:
            return
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=_THREAD_NAME, daemon=True)
        self._thread.start()

    def offer(self, checkpoint: TimerCheckpoint) -> None:
        """Have ``checkpoint`` saved soon, in place of any pending one; returns at once."""
        with self._cond:
            self._pending = checkpoint
            self._offered = True
            self._cond.notify()

    def drain(self) -> bool:
        """Save the pending checkpoint now, on this thread (after a save in progress ends);
        whether the file holds the newest offered one."""
        with self._write_lock:
            return self._save_pending()

    def close(self) -> bool:
        """Stop the thread, then :meth:`drain` (idempotent)."""
        thread = self._thread
        if thread is not None:
            with self._cond:
                self._closing = True
                self._cond.notify()
            thread.join()
            self._thread = None
        return self.drain()

    def _run(self) -> None:
        name_os_thread(_THREAD_NAME)
        while True:
            with self._cond:
                while not self._offered and not self._closing:
                    self._cond.wait()
                if self._closing:
                    return
                self._offered = False
            with self._write_lock:
                self._save_pending()

    def _save_pending(self) -> bool:
        with self._cond:
            checkpoint, self._pending = self._pending, None
        if checkpoint is None:
            return True
        try:
            checkpoint.save(self._path, self._file_mode)
        except StoreError as exc:
            with self._cond:
                if self._pending is None:
                    self._pending = checkpoint  # tried again with the next offer or drain
            self.failed += 1
            _log.error("timer: cannot save the checkpoint, will try again: %s", exc)
            return False
        self.saved += 1
        return True
