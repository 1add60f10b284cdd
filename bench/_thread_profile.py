"""Where a message's CPU goes, function by function: ``cProfile`` on every thread of a process
(``python -m bench profile``).

Off unless ``AEROMQ_PROFILE_DIR`` names a directory. With ``bench/_profile_site`` on
``PYTHONPATH`` (its ``sitecustomize`` calls :func:`install`), every Python process started with
that environment, the broker's too, profiles each of its threads from its first call (a
profiler per thread, through ``threading.setprofile``). :func:`mark` (``SIGUSR1``) takes each
profiler's counts as the window's start; :func:`dump` (``SIGUSR2``, or at exit) writes what
each thread did since, one ``<role>-<pid>-<n>.prof`` file per thread (``marshal``ed
``pstats`` entries), ``role`` from ``AEROMQ_PROFILE_ROLE``. :func:`load` reads a directory
back, every thread of a role summed.

``cProfile`` makes Python calls two to three times slower; the calls a message takes do not
depend on it, and hardly on what else runs on the machine: only the polls of a thread waiting
for an answer (through a spin window) are more when answers come late.
"""

from __future__ import annotations

import atexit
import contextlib
import cProfile
import marshal
import os
import signal
import threading
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Final, TypeAlias, cast

__all__ = [
    "PROFILE_DIR_ENV",
    "PROFILE_ROLE_ENV",
    "WAITS",
    "Entry",
    "Stats",
    "calls",
    "doing",
    "dump",
    "install",
    "label",
    "load",
    "mark",
    "top",
]

PROFILE_DIR_ENV: Final = "AEROMQ_PROFILE_DIR"
PROFILE_ROLE_ENV: Final = "AEROMQ_PROFILE_ROLE"

Func: TypeAlias = tuple[str, int, str]
"""``pstats``' key of a function: (file, first line, name)."""
Entry: TypeAlias = tuple[int, int, float, float, dict[Func, tuple[float, ...]]]
"""``pstats``' entry: primitive calls, calls, own time s, cumulative time s, and its callers'
(the same four, per caller)."""
Stats: TypeAlias = dict[Func, Entry]

WAITS: Final = (
    "futex_wait",
    "futex_wake",
    "'acquire' of",
    "'poll' of 'select",
    "time.sleep",
    "'get' of '_queue",
    "sched_yield",
    "cProfile.py",
)
"""Entries that wait (or wake another thread) rather than compute, and the profiler's own
(:func:`dump` runs in the window): left out of :func:`top` and :func:`doing`."""
_profiles: list[cProfile.Profile] = []
_marks: dict[int, Stats] = {}
_dumped: list[bool] = [False]


def _start_thread(frame: FrameType, event: str, arg: object) -> None:
    """``threading.setprofile``'s hook: the thread's first call starts its profiler (which
    replaces the hook on that thread)."""
    profile = cProfile.Profile()
    _profiles.append(profile)
    profile.enable()


def install() -> None:
    """Profile every thread of this process from now on (see module)."""
    threading.setprofile(_start_thread)
    profile = cProfile.Profile()
    _profiles.append(profile)
    profile.enable()
    signal.signal(signal.SIGUSR1, lambda signum, frame: mark())
    signal.signal(signal.SIGUSR2, lambda signum, frame: dump())
    atexit.register(dump)


def _snapshot(profile: cProfile.Profile) -> Stats:
    profile.snapshot_stats()  # a new dict each time: the last one stays as it was
    return cast(Stats, profile.stats)  # typeshed has its times as ints: they are floats


def mark() -> None:
    """The window starts now: each thread's counts so far are taken off at :func:`dump`."""
    for profile in list(_profiles):
        _marks[id(profile)] = _snapshot(profile)


def _since(now: Stats, then: Stats) -> Stats:
    out: Stats = {}
    for func, (primitive, count, own_s, total_s, callers) in now.items():
        before = then.get(func)
        if before is not None:
            primitive -= before[0]
            count -= before[1]
            own_s -= before[2]
            total_s -= before[3]
            callers = {
                caller: tuple(
                    a - b
                    for a, b in zip(value, before[4].get(caller, (0,) * len(value)), strict=True)
                )
                for caller, value in callers.items()
            }
        if count > 0:
            out[func] = (primitive, count, own_s, total_s, callers)
    return out


def dump() -> None:
    """Write each thread's counts since :func:`mark` (see module); once."""
    directory = os.environ.get(PROFILE_DIR_ENV)
    if not directory or _dumped[0]:
        return
    _dumped[0] = True
    role = os.environ.get(PROFILE_ROLE_ENV, "process")
    for index, profile in enumerate(list(_profiles)):
        stats = _since(_snapshot(profile), _marks.get(id(profile), {}))
        if stats:
            with (
                contextlib.suppress(OSError),  # the run is over and its directory gone
                open(Path(directory, f"{role}-{os.getpid()}-{index}.prof"), "wb") as out,
            ):
                marshal.dump(stats, out)


def load(directory: Path) -> dict[str, Stats]:
    """Each role's entries, its threads' summed (callers dropped)."""
    roles: dict[str, Stats] = {}
    for path in sorted(directory.glob("*.prof")):
        role = path.name.split("-", 1)[0]
        merged = roles.setdefault(role, {})
        with open(path, "rb") as source:
            stats: Stats = marshal.load(source)
        for func, (primitive, count, own_s, total_s, _) in stats.items():
            old = merged.get(func)
            if old is not None:
                primitive, count = primitive + old[0], count + old[1]
                own_s, total_s = own_s + old[2], total_s + old[3]
            merged[func] = (primitive, count, own_s, total_s, {})
    return roles


def label(func: Func) -> str:
    """``package/module.py:line(name)``, or ``~(builtin)`` for a built-in."""
    file, line, name = func
    if file == "~":
        return name
    parts = Path(file).parts
    tail = "/".join(parts[-2:])
    return f"{tail}:{line}({name})"


def _matches(func: Func, needles: Iterable[str]) -> bool:
    text = f"{func[0]}:{func[1]}({func[2]})"
    return any(needle in text for needle in needles)


def doing(stats: Stats) -> float:
    """The own time, in seconds, of every entry but the waits (:data:`WAITS`)."""
    return sum(entry[2] for func, entry in stats.items() if not _matches(func, WAITS))


def calls(stats: Stats) -> tuple[int, int]:
    """All the calls, and those of Python functions (built-ins left out: a call of a Python
    function costs ten times one of a built-in)."""
    total = sum(entry[1] for entry in stats.values())
    python = sum(entry[1] for func, entry in stats.items() if func[0] != "~")
    return total, python


def top(stats: Stats, count: int) -> list[tuple[Func, Entry]]:
    """The ``count`` entries of most own time, waits left out (:data:`WAITS`)."""
    working = [(func, entry) for func, entry in stats.items() if not _matches(func, WAITS)]
    return sorted(working, key=lambda item: -item[1][2])[:count]
