"""``name_os_thread``: give the calling thread its role's name in the operating system, as
Agrona's ``AgentRunner`` names its threads after their agents' roles.

CPython 3.11 names only the ``threading.Thread`` object; the kernel's name of every thread stays
the process's (``python``), so ``top -H``, ``ps -L``, ``perf`` and ``/proc/PID/task/TID/comm``
cannot tell a media driver's sender from a session agent. On Linux this sets that name
(``prctl(PR_SET_NAME)``, at most 15 bytes: longer names are cut); elsewhere it does nothing.

Caller: :class:`~transport.concurrent.AgentRunner` and the few threads that are not agents (a
replication member's fsync thread), once, as their thread starts. :func:`name_os_threads` names
the other threads of the process from outside (``/proc/self/task/TID/comm``), after their
``threading`` names: a broker calls it once its services have started.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Callable
from typing import Final

__all__ = ["name_os_thread", "name_os_threads"]

_PR_SET_NAME: Final = 15
_MAX_NAME_BYTES: Final = 15


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    prctl: Callable[..., int] = libc.prctl
    return prctl


_prctl = _load_prctl()


def _kernel_name(name: str) -> bytes:
    """``name`` as the kernel keeps a thread's: UTF-8, cut to 15 bytes (and to a whole
    character)."""
    cut = name.encode("utf-8", "replace")[:_MAX_NAME_BYTES]
    return cut.decode("utf-8", "ignore").encode("utf-8")


def name_os_thread(name: str) -> None:
    """Name the calling thread ``name`` in the kernel (cut to 15 bytes); never raises."""
    if _prctl is None:
        return
    _prctl(_PR_SET_NAME, ctypes.c_char_p(_kernel_name(name)), 0, 0, 0)


def name_os_threads() -> int:
    """Name in the kernel every live thread of this process that still bears the process's name
    (``python``), after its ``threading`` name (cut to 15 bytes), the main thread left as it is
    (its name is the process's in ``ps``); how many were named. Linux only; never raises."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        with open("/proc/self/comm", encoding="utf-8") as comm:
            unnamed = comm.read().strip()
    except OSError:
        return 0
    named = 0
    main = threading.main_thread()
    for thread in threading.enumerate():
        tid = thread.native_id
        if thread is main or tid is None:
            continue
        path = f"/proc/self/task/{tid}/comm"
        try:
            with open(path, encoding="utf-8") as comm:
                if comm.read().strip() != unnamed:
                    continue
            with open(path, "wb") as comm:
                comm.write(_kernel_name(thread.name))
        except OSError:  # the thread ended meanwhile
            continue
        named += 1
    return named
