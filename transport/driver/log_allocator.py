"""``LogAllocator``: log files made on a thread of their own, off the conductor's duty cycle.

A log allocated up front (``sparse=false``) has every block reserved before it is mapped
(``posix_fallocate``: the kernel finds and zeroes each page), about 50 ms per 192 MiB log on
tmpfs and seconds for a 3 GiB one. Made on the conductor, that time is a stall of its duty
cycle: no client command is handled and the driver's heartbeat is not stamped, so clients that
judge the driver by it (the broker's own sessions allow 1 s) take it for dead. The conductor
hands such logs to this allocator instead and finishes the image when the log is there, on a
later duty cycle (:meth:`LogAllocator.poll`). The worker thread is started on the first request
and runs one allocation at a time (``posix_fallocate`` lets go of the GIL while it works).

:meth:`LogAllocator.close` stops the worker after the allocation in progress and unmaps and
deletes every log nobody claimed.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from typing import Generic, TypeVar

from aeromq.transport.driver.log_factory import create_log, delete_log
from aeromq.transport.logbuffer.log_buffers import LogBuffers

__all__ = ["LogAllocator", "LogRequest"]

T = TypeVar("T")


class LogRequest(Generic[T]):
    """One log to make: where, how, and the caller's ``token`` to know it by when it is done
    (``log`` set, or ``error`` the command error it failed with)."""

    __slots__ = ("error", "file_mode", "log", "page_size", "path", "sparse", "term_length", "token")

    def __init__(
        self, token: T, path: str, term_length: int, page_size: int, sparse: bool, file_mode: int
    ) -> None:
        self.token = token
        self.path = path
        self.term_length = term_length
        self.page_size = page_size
        self.sparse = sparse
        self.file_mode = file_mode
        self.log: LogBuffers | None = None
        self.error: BaseException | None = None


class LogAllocator(Generic[T]):
    """Makes log files on a worker thread (see module); submitted and polled on one thread."""

    def __init__(self, name: str = "aeron-log-allocator") -> None:
        self._name = name
        self._requests: queue.SimpleQueue[LogRequest[T] | None] = queue.SimpleQueue()
        self._done: deque[LogRequest[T]] = deque()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.in_flight = 0
        """Requests submitted and not yet polled."""

    def submit(self, request: LogRequest[T]) -> None:
        """Make ``request``'s log on the worker; :meth:`poll` hands it back once done."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        self.in_flight += 1
        self._requests.put(request)

    def poll(self) -> list[LogRequest[T]]:
        """The requests done since the last poll, in the order they finished."""
        done: list[LogRequest[T]] = []
        while self._done:
            done.append(self._done.popleft())
        self.in_flight -= len(done)
        return done

    def _run(self) -> None:
        while True:
            request = self._requests.get()
            if request is None:
                return
            try:
                request.log = create_log(
                    request.path,
                    request.term_length,
                    request.page_size,
                    request.sparse,
                    request.file_mode,
                )
            except BaseException as error:  # the command's error, handed back to the caller
                request.error = error
            if self._closed:
                _discard(request)
            else:
                self._done.append(request)

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the worker (after the allocation in progress) and delete unclaimed logs."""
        self._closed = True
        thread = self._thread
        if thread is not None:
            self._requests.put(None)
            thread.join(timeout_s)
        while True:
            try:
                request = self._requests.get_nowait()
            except queue.Empty:
                break
            if request is not None:
                _discard(request)
        for request in self.poll():
            _discard(request)


def _discard(request: LogRequest[T]) -> None:
    log = request.log
    if log is not None:
        request.log = None
        log.close()
        delete_log(request.path)
