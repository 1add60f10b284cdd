"""One benchmark case bounded in time, its workers watched and, if it fails, stopped.

:func:`bounded` runs a case's ``measure(*args)`` on a thread of its own while this thread
watches three things, every :data:`_WATCH_S`:

- the case returned or raised: its value, or its exception, is the outcome;
- a worker of the case (a process this process started while the case ran) ended with a
  non-zero status or a signal: the case failed (``worker pid 123 exited with status 3``);
- the case's time limit passed: the case failed (``timed out after 60 s``).

A case stopped so (a worker died, or its limit passed) first has ``on_stop`` called (a suite's
way to cancel what runs elsewhere, e.g. Spark's jobs), then its workers are killed, with every
process they started (SIGKILL to the whole tree).
Processes started before the case (a suite's broker, ``redis-server``, media drivers, Spark's
JVM) are not a case's workers: they serve the next case, and the suite stops them at its end.
The thread of a failed case is given :data:`_ABANDON_S` to end once its workers are gone; a
case hung in this process's own code cannot be stopped (Python has no way to stop a thread)
and is left behind, asleep or blocked, while the suite goes on. A case that must not leave
anything behind runs in a child process of its own (:func:`isolated`), which is then its
worker.

A failure can be injected, to test a suite's failure handling (``python -m bench --help``):
``AEROMQ_BENCH_FAIL_CASE=PATTERN[=HOW]`` makes every case whose name matches the shell
pattern fail, ``HOW`` being ``raise`` (the default: the case raises ``RuntimeError``), ``exit``
(a worker of the case exits with status 3 while the case waits for it) or ``hang[:SECONDS]``
(a worker of the case never ends; ``SECONDS`` replaces the case's time limit).
"""

from __future__ import annotations

import contextlib
import fnmatch
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import TypeVar, TypeVarTuple

__all__ = ["FAIL_CASE_ENV", "CaseFailed", "bounded", "isolated"]

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")

FAIL_CASE_ENV = "AEROMQ_BENCH_FAIL_CASE"
_WATCH_S = 0.25
"""How often the watcher looks at the case and its workers."""
_ABANDON_S = 5.0
"""How long a failed case's thread has to end once its workers are stopped."""
_NOT_WORKERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
"""Helpers multiprocessing starts on first use and keeps for the whole run: not a case's."""
_INJECTED_EXIT_STATUS = 3


class CaseFailed(Exception):
    """A case could not be measured; the message is the reason, as reported."""


def bounded(
    what: str,
    measure: Callable[[*_Ts], _T],
    *args: *_Ts,
    timeout_s: float,
    on_stop: Callable[[], None] | None = None,
) -> _T:
    """``measure(*args)`` bounded in time, its workers watched (see the module docstring).

    Raises :class:`CaseFailed` when a worker fails or the time limit passes, and whatever
    ``measure`` raises."""
    injected = _injected(what)
    if injected is not None:
        timeout_s = injected[1] or timeout_s
    cancel = threading.Event()
    values: list[_T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            if injected is not None:
                injected[0](cancel)
            else:
                values.append(measure(*args))
        except BaseException as exc:  # handed to the watcher, which re-raises it
            errors.append(exc)

    before = _children()
    thread = threading.Thread(target=run, name=f"bench case {what}", daemon=True)
    deadline = time.monotonic() + timeout_s
    thread.start()
    reason = None
    while reason is None:
        thread.join(_WATCH_S)
        if not thread.is_alive():
            break
        reason = _failed_worker(before)
        if reason is not None:
            thread.join(2.0)  # the case may have seen it (or stopped it) and be ending: its
            if not thread.is_alive():  # own outcome, then, says best what happened
                reason = None
                break
        elif time.monotonic() > deadline:
            reason = f"timed out after {timeout_s:.0f} s"
    if reason is None:
        if errors:
            raise errors[0]
        return values[0]
    try:
        if on_stop is not None:
            on_stop()
    finally:
        _kill_trees(_children() - before)
        cancel.set()
        thread.join(_ABANDON_S)
        if thread.is_alive():
            print(f"{what}: its thread is still running, left behind", file=sys.stderr)
    raise CaseFailed(reason)


def isolated(function: Callable[[*_Ts], _T], *args: *_Ts) -> _T:
    """``function(*args)`` (a generator's items as a list) in a child process of its own
    (``spawn``; ``function`` and its arguments are pickled, so top level), which
    :func:`bounded` then watches as the case's worker. Raises :class:`CaseFailed` with the child's exception (``Type: message``) or
    exit status."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_isolated_main, args=(send, function, args))
    process.start()
    send.close()
    try:
        kind, payload = receive.recv()
    except EOFError:
        process.join(10)
        raise CaseFailed(f"worker pid {process.pid} {_status(process.exitcode)}") from None
    finally:
        receive.close()
    process.join(30)
    if kind == "error":
        raise CaseFailed(payload)
    value: _T = payload  # what function returned, pickled back by the child
    return value


def _isolated_main(send: Connection, function: Callable[[*_Ts], object], args: tuple[*_Ts]) -> None:
    try:
        value = function(*args)
        if isinstance(value, Iterator):  # a generator's rows: listed here, pickled back
            value = list(value)
    except Exception as exc:
        send.send(("error", f"{type(exc).__name__}: {exc}"))
    else:
        send.send(("value", value))
    send.close()


def _status(exitcode: int | None) -> str:
    if exitcode is None:
        return "did not end"
    if exitcode < 0:
        return f"killed by {signal.Signals(-exitcode).name}"
    return f"exited with status {exitcode}"


# -- workers ------------------------------------------------------------------------------------


def _children() -> set[int]:
    """This process's child processes (from every thread), multiprocessing's helpers aside."""
    pids: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/children") as children:
            pids.update(int(pid) for pid in children.read().split())
    return {pid for pid in pids if not any(name in _cmdline(pid) for name in _NOT_WORKERS)}


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _failed_worker(before: set[int]) -> str | None:
    """Why a worker started since ``before`` ended, if one ended with a non-zero status or a
    signal (looked at without reaping it: its owner still waits for it)."""
    for pid in sorted(_children() - before):
        try:
            ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped meanwhile by its owner
            continue
        if ended is None or ended.si_pid == 0:
            continue
        if ended.si_code == os.CLD_EXITED:
            if ended.si_status != 0:
                return f"worker pid {pid} exited with status {ended.si_status}"
        else:
            return f"worker pid {pid} {_status(-ended.si_status)}"
    return None


def _kill_trees(roots: set[int]) -> None:
    """SIGKILL ``roots`` and every process below them (the whole tree read first, so none
    escapes to init on the way)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/stat") as stat:
                parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
    tree, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    for pid in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# -- injected failures --------------------------------------------------------------------------


def _injected(what: str) -> tuple[Callable[[threading.Event], None], float | None] | None:
    """The failure :data:`FAIL_CASE_ENV` asks of case ``what``, and its time limit, if any."""
    spec = os.environ.get(FAIL_CASE_ENV, "")
    pattern, _, how = spec.partition("=")
    if not pattern or not fnmatch.fnmatchcase(what, pattern):
        return None
    mode, _, seconds = (how or "raise").partition(":")
    if mode == "raise":
        return _raise, None
    if mode == "exit":
        return _exit, None
    if mode == "hang":
        return _hang, float(seconds) if seconds else None
    raise ValueError(f"{FAIL_CASE_ENV}={spec!r}: HOW is raise, exit or hang[:SECONDS]")


def _raise(cancel: threading.Event) -> None:
    raise RuntimeError(f"injected by {FAIL_CASE_ENV}")


def _exit(cancel: threading.Event) -> None:
    """A worker that fails at once, and a case that waits for it (until stopped)."""
    _wait_for(f"raise SystemExit({_INJECTED_EXIT_STATUS})", cancel)


def _hang(cancel: threading.Event) -> None:
    """A worker that never ends, and a case that waits for it (until stopped)."""
    _wait_for("import time; time.sleep(3600)", cancel)


def _wait_for(code: str, cancel: threading.Event) -> None:
    worker = subprocess.Popen([sys.executable, "-c", code])
    cancel.wait()  # not worker.wait(): the watcher must find the status unreaped
    worker.wait()
    raise RuntimeError(f"injected by {FAIL_CASE_ENV}")
