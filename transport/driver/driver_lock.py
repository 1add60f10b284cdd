"""``DriverLock``: the advisory lock a live driver holds on ``<aeron_dir>/driver.lock``.

A driver's heartbeat (in ``cnc.dat``) says it was alive a moment ago; a SIGKILLed driver's
heartbeat stays fresh for the whole driver timeout (10 s), and a driver killed while starting
has none at all. The kernel knows better: a ``flock`` is let go of when its process ends,
however it ends. So a driver takes an exclusive ``flock`` on ``driver.lock`` in its directory
before anything else there and holds it for its life (the file also names its pid, for people):

- a lock that can be taken belongs to no live process: its directory is a dead driver's, and
  can go at once (:mod:`~transport.driver.stale_dirs`);
- a lock that cannot be taken belongs to a live driver (hung or not): its directory is never
  taken over (:mod:`~transport.driver.aeron_dir`).

A lock file appears only already locked and naming its pid: it is made under a name of its own
(``.driver.lock.<pid>.<thread>``), locked and written there, then linked in place. A driver
starting beside another's scan for dead directories (two clients of one process launching their
embedded drivers at once, or two processes) is never seen with a lock file nobody holds yet,
which the scan would take for a dead driver's and remove with its directory. Over an existing
lock file (a standalone driver's directory used again), a probe's momentary hold is waited out
for a few milliseconds before the lock counts as another live driver's.

The descriptor is not inherited by programs the driver's process runs (``O_CLOEXEC``); a child
forked without exec shares it and keeps the lock until it ends too (then the directory looks
alive: nothing is removed that might be in use). Drivers that take no lock (a real Aeron
driver, an older aeromq) are judged by their heartbeat and pid as before.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import fcntl
import os
import threading
import time

from aeromq.transport.concurrent.file_modes import DEFAULT_FILE_MODE

__all__ = ["LOCK_FILE", "DriverLock", "LockState", "lock_pid", "lock_state"]

LOCK_FILE = "driver.lock"

_PROBE_RETRIES = 5
_PROBE_WAIT_S = 0.002  # a probe's hold is waited out for up to 5 x 2 ms
_NO_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK})
"""What ``link`` fails with where a file system has no hard links (or no more of them)."""


class LockState(enum.Enum):
    """What a directory's lock file says of its driver."""

    HELD = "held"  # a live process holds it
    FREE = "free"  # there is one and nobody holds it: its driver is dead
    NONE = "none"  # no lock file (a driver that takes none, or one killed before it took it)


def lock_state(aeron_dir: str) -> LockState:
    """The state of ``aeron_dir``'s lock (see :class:`LockState`); takes it for an instant."""
    try:
        fd = os.open(os.path.join(aeron_dir, LOCK_FILE), os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return LockState.NONE
    except OSError:
        return LockState.HELD  # cannot tell: treat it as alive
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held (EWOULDBLOCK), or cannot tell: alive either way
        return LockState.HELD
    finally:
        os.close(fd)  # lets go of the lock if it was taken
    return LockState.FREE


class DriverLock:
    """The lock a driver holds for its life (see module). :meth:`acquire` it, :meth:`release`
    it when the driver has closed."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, aeron_dir: str, file_mode: int = DEFAULT_FILE_MODE) -> DriverLock | None:
        """Take ``aeron_dir``'s lock (the file made if missing, with ``file_mode``, already
        locked: see module) and write this process's pid in it; None when another process
        holds it."""
        path = os.path.join(aeron_dir, LOCK_FILE)
        fd = _new_locked_file(path, file_mode)
        if fd is not None:
            return cls(path, fd)
        for attempt in range(_PROBE_RETRIES + 1):
            if attempt:
                time.sleep(_PROBE_WAIT_S)  # a probe (lock_state) holds it for an instant
            fd = _locked_in_place(path, file_mode)
            if fd is not None:
                return cls(path, fd)
        return None

    @property
    def is_held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._fd is not None

    def release(self) -> None:
        """Let go of the lock (the file stays, unless its directory was deleted); idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __repr__(self) -> str:
        return f"DriverLock(path={self.path!r}, held={self.is_held})"


def _new_locked_file(path: str, file_mode: int) -> int | None:
    """A descriptor of a new lock file at ``path``, locked and naming this process, linked in
    place only once both are done; None when a lock file is there already, or when the file
    system has no hard links (the caller then makes the file in place, as before)."""
    private = f"{os.path.dirname(path)}/.{LOCK_FILE}.{os.getpid()}.{threading.get_ident()}"
    fd = os.open(private, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, file_mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else knows its name
        _stamp(fd, file_mode)
        try:
            os.link(private, path)  # fails if a lock file is there (unlike a rename)
        except OSError as exc:
            if not isinstance(exc, FileExistsError) and exc.errno not in _NO_LINKS:
                raise
            os.close(fd)
            return None
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(private)
    return fd


def _locked_in_place(path: str, file_mode: int) -> int | None:
    """A descriptor of the lock file at ``path`` (made if missing), locked and naming this
    process; None when another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, file_mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    try:
        _stamp(fd, file_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _stamp(fd: int, file_mode: int) -> None:
    """Give the locked file ``file_mode`` and this process's pid, alone."""
    os.fchmod(fd, file_mode)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def lock_pid(aeron_dir: str) -> int | None:
    """The pid written in ``aeron_dir``'s lock file, or None."""
    try:
        with open(os.path.join(aeron_dir, LOCK_FILE), encoding="ascii") as lock:
            return int(lock.read().strip() or "0") or None
    except (OSError, ValueError):
        return None
