"""Directories of embedded media drivers that died without cleaning up, removed at start.

An embedded driver (:meth:`~transport.driver.MediaDriver.launch_embedded`) works in a fresh
``aeron-embedded-*`` directory under ``/dev/shm`` and deletes it on close; a crash (SIGKILL,
power cut of the process) leaves it behind, log buffers and all. Before any driver starts
(embedded or not), it removes each such directory of the same user whose driver is dead:

- its lock (:mod:`~transport.driver.driver_lock`) is free: the process that held it ended,
  however it ended, a moment ago or long ago;
- it has no lock file (a driver of an older version, or one killed before it took its lock):
  its ``cnc.dat`` heartbeat is older than ``driver_timeout_ms`` (or the driver closed) and the
  pid recorded in ``cnc.dat`` is not alive; without a ``cnc.dat`` either, the directory is older
  than ``driver_timeout_ms`` (a driver takes its lock within milliseconds of making it).

One warning line per directory removed. A directory whose lock is held, with a fresh heartbeat
or a live pid, still being made, or of another owner is never touched. Embedded directories are
never reused, so nothing of value is lost (a standalone driver's directory is replaced, its
error log saved, by ``prepare_aeron_dir``).
"""

from __future__ import annotations

import logging
import os
import shutil

from aeromq.transport._errors import CncFileError
from aeromq.transport.cnc import CncFile
from aeromq.transport.driver.aeron_dir import has_cnc_file
from aeromq.transport.driver.driver_lock import LockState, lock_pid, lock_state

__all__ = ["EMBEDDED_DIR_PREFIX", "remove_stale_driver_dirs"]

EMBEDDED_DIR_PREFIX = "aeron-embedded-"

_LOG = logging.getLogger(__name__)
_MAX_ENTRIES = 10_000  # a bound on the scan of a crowded /dev/shm


def remove_stale_driver_dirs(root: str, *, driver_timeout_ms: int, now_ms: int) -> list[str]:
    """Remove the dead embedded drivers' directories in ``root`` (see module); returns them."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(root))[:_MAX_ENTRIES]
    except OSError:
        return removed
    uid = os.geteuid()
    for entry in entries:
        if not entry.name.startswith(EMBEDDED_DIR_PREFIX):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != uid:
                continue
        except OSError:
            continue
        dead = _dead_driver(entry.path, driver_timeout_ms, now_ms)
        if dead is None:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.exists(entry.path):
            removed.append(entry.path)
            _LOG.warning(
                "removed the directory of a dead media driver: aeron_dir=%s %s", entry.path, dead
            )
    return removed


def _dead_driver(aeron_dir: str, driver_timeout_ms: int, now_ms: int) -> str | None:
    """Why the driver of ``aeron_dir`` is dead (``key=value`` words for the log line), or None
    when it may be alive or cannot be judged."""
    state = lock_state(aeron_dir)
    if state is LockState.HELD:
        return None
    if state is LockState.FREE:
        return f"pid={lock_pid(aeron_dir)} lock=free"
    if not has_cnc_file(aeron_dir):
        try:
            age_ms = now_ms - int(os.stat(aeron_dir).st_mtime * 1000)
        except OSError:
            return None
        return f"pid=unknown age_ms={age_ms} lock=none" if age_ms > driver_timeout_ms else None
    try:
        cnc = CncFile.map(aeron_dir, timeout_ms=0)
    except (CncFileError, OSError, ValueError):
        return None
    try:
        heartbeat_ms = cnc.driver_heartbeat_ms()
        pid = cnc.pid
    finally:
        cnc.close()
    age_ms = now_ms - heartbeat_ms if heartbeat_ms > 0 else -1
    if 0 <= age_ms <= driver_timeout_ms or _alive(pid):
        return None
    return f"pid={pid} heartbeat_age_ms={age_ms}"


def _alive(pid: int) -> bool:
    if pid <= 0:
        return True  # no pid recorded: cannot tell, so alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True
