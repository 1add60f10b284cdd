"""The serve-until-signal loop of the commands that run a server (``broker``, ``namesrv``,
``driver``), written once.

:func:`stop_on_signals` installs handlers for SIGINT and SIGTERM that set an event (once:
:func:`setting`), and puts
back the previous handlers when its block ends (after the server has been shut down in it);
:func:`serve` waits for that event, or for the server to end by itself. Caller: the command's
``main``, which starts the server, prints its ready line, calls :func:`serve`, then shuts the
server down and prints its stopped line. Affects: the process's signal handlers, for the block.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["serve", "setting", "stop_on_signals"]

SignalHandler = Callable[[int, FrameType | None], None]


def setting(stop: threading.Event) -> SignalHandler:
    """A signal handler that sets ``stop``, once. Python runs a handler in the main thread
    between two of its bytecodes, so a second signal can land while the first one's handler is
    inside ``stop.set()``, holding the event's lock: a second ``set()`` there would wait for
    that lock forever (a broker sent SIGTERM three times at once hung so). The handlers after
    the first return at once; the flag is set before any call, where no handler can run."""
    fired = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        stop.set()

    return on_signal


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event that SIGINT or SIGTERM sets while the block runs; the previous handlers are
    restored when it ends."""
    stop = threading.Event()
    on_signal = setting(stop)
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(stop: threading.Event, slice_s: float, ended: Callable[[], bool] | None = None) -> None:
    """Return once ``stop`` is set or ``ended()`` (checked every ``slice_s``) says the server
    has stopped by itself."""
    while not stop.is_set() and not (ended is not None and ended()):
        stop.wait(slice_s)
