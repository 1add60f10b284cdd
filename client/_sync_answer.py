"""``SyncAnswer``: the answer of a request whose caller waits for it (``ClientSession.request``);
``CallbackAnswer``: the answer of one whose outcome goes to a callback
(``ClientSession.request_callback``: a consumer's pulls); and ``Completion``, what the pending
table completes (either, or a ``concurrent.futures.Future``).

A ``Future`` waits on a condition variable: making one, asking ``done()``, completing it and
taking its result each go through ``threading.Condition``'s Python-level methods, some 40
Python calls a request, a fifth of the calls of a ``Producer.send`` (``python -m bench
profile``, ``docs/history/latency-log.md``). A caller that waits for its own answer, reading
it itself most of the time, needs none of that: a ``SyncAnswer`` is the value or error, a lock
taken when it is completed (its ``done``), and a lock held from its making until it is
completed, which a caller that must block (the poller thread reads its answer) acquires with its
timeout. It has no callbacks and cannot be cancelled; asynchronous requests (``request_async``)
keep their ``Future``.

A pull's outcome goes to its callback: a ``Future`` made for it, a callback added and the
future completed cost eleven of those Python calls a pull, a tenth of a consumer's calls a
message (``docs/history/latency-log.md``, "A pulled message's way to ``poll()``, straight"). A
``CallbackAnswer`` calls the callback with the value or the error, on the thread that completes
it, as ``Future.set_result`` calls its done callbacks (an exception the callback raises is
logged, as a ``Future`` logs it).

Whoever pops a request from the pending table completes it, once (``_pending_requests.py``);
completing a ``SyncAnswer`` or a ``CallbackAnswer`` twice raises ``InvalidStateError`` as a
``Future`` does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import InvalidStateError
from typing import Generic, Protocol, TypeVar

__all__ = ["AnswerCallback", "CallbackAnswer", "Completion", "SyncAnswer"]

_T = TypeVar("_T")

_log = logging.getLogger(__name__)


class Completion(Protocol[_T]):
    """What the pending table completes and the readers wait for: a ``Future``'s part."""

    def done(self) -> bool:
        """Whether it was completed."""
        ...

    def result(self, timeout: float | None = None) -> _T:
        """The value, waiting up to ``timeout`` s; raises the error, or ``TimeoutError``."""
        ...

    def set_result(self, result: _T) -> None:
        """Complete it with ``result``."""
        ...

    def set_exception(self, exception: BaseException | None) -> None:
        """Complete it with ``exception``."""
        ...


class SyncAnswer(Generic[_T]):
    """The answer of one request a caller waits for (see module). Thread-safe.

    ``done`` is the bound ``locked`` of a lock taken once, when it is completed: a call in C,
    asked after each poll of a waiting reader (three times a send, each a Python call when it
    was a method); taking it without blocking is also what makes completing it twice fail."""

    __slots__ = ("_completed", "_error", "_lock", "_value", "done")

    _value: _T
    """Set when completed with a value (read only then: no ``cast`` of a default, a Python
    call a request)."""

    def __init__(self) -> None:
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._lock.acquire()  # released once completed, the value or error set
        self._completed = threading.Lock()  # taken once completed
        self.done: Callable[[], bool] = self._completed.locked
        """Whether it was completed."""

    def set_result(self, result: _T) -> None:
        """Complete it with ``result``; ``InvalidStateError`` if it was already."""
        if not self._completed.acquire(blocking=False):
            raise InvalidStateError("the answer is already complete")
        self._value = result
        self._lock.release()

    def set_exception(self, exception: BaseException | None) -> None:
        """Complete it with ``exception``; ``InvalidStateError`` if it was already."""
        if not self._completed.acquire(blocking=False):
            raise InvalidStateError("the answer is already complete")
        self._error = exception or InvalidStateError("completed with no exception")
        self._lock.release()

    def result(self, timeout: float | None = None) -> _T:
        """The value, once completed (waiting up to ``timeout`` s, None: no limit); raises
        its error, or ``TimeoutError`` when it is not completed in time."""
        lock = self._lock
        if not lock.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            raise TimeoutError("no answer in time")
        lock.release()  # completed: it stays released
        if self._error is not None:
            raise self._error
        return self._value


AnswerCallback = Callable[[_T | None, BaseException | None], None]
"""``callback(answer, None)`` or ``callback(None, error)``: a request's outcome."""


class CallbackAnswer(Generic[_T]):
    """The answer of one request whose outcome goes to ``callback`` (see module). Completed
    once, by the thread that popped it from the pending table; nobody waits on it."""

    __slots__ = ("_callback", "_done", "_error", "_value")

    _value: _T
    """Set when completed with a value (read only then)."""

    def __init__(self, callback: AnswerCallback[_T]) -> None:
        self._callback = callback
        self._done = False
        self._error: BaseException | None = None

    def done(self) -> bool:
        """Whether it was completed."""
        return self._done

    def set_result(self, result: _T) -> None:
        """Complete it with ``result``: the callback is called with it, here; raises
        ``InvalidStateError`` if it was completed already."""
        if self._done:
            raise InvalidStateError("the answer is already complete")
        self._done = True
        self._value = result
        try:
            self._callback(result, None)
        except Exception:
            _log.exception("the callback of a request's answer failed: %r", self._callback)

    def set_exception(self, exception: BaseException | None) -> None:
        """Complete it with ``exception``: the callback is called with it, here; raises
        ``InvalidStateError`` if it was completed already."""
        if self._done:
            raise InvalidStateError("the answer is already complete")
        self._done = True
        error = self._error = exception or InvalidStateError("completed with no exception")
        try:
            self._callback(None, error)
        except Exception:
            _log.exception("the callback of a request's answer failed: %r", self._callback)

    def result(self, timeout: float | None = None) -> _T:
        """The value once completed (nothing waits: ``timeout`` is not used); raises its
        error, or ``TimeoutError`` when it was not completed yet."""
        if not self._done:
            raise TimeoutError("no answer yet")
        if self._error is not None:
            raise self._error
        return self._value
