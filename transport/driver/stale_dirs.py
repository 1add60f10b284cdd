"""Directories of embedded media drivers that died without cleaning up, removed at start.

An embedded driver (:meth:`~transport.driver.MediaDriver.launch_embedded`) works in a fresh
``aeron-embedded-*`` directory under ``/dev/shm`` and deletes it on close; a crash (SIGKILL,
power cut of the process) leaves it behind, log buffers and all. Before making its own, an
embedded driver removes each such directory of the same user whose driver is dead: its
``cnc.dat`` heartbeat is older than ``driver_timeout_ms`` (or the driver closed) and the pid
recorded in ``cnc.dat`` is not alive. One warning line per directory removed. A directory with
a fresh heartbeat, a live pid, no readable ``cnc.dat`` (a driver still starting), or another
owner is never touched. Embedded directories are never reused, so nothing of value is lost
(a standalone driver's directory is replaced, its error log saved, by ``prepare_aeron_dir``).
"""

from __future__ import annotations

import logging
import os
import shutil

from aeromq.transport._errors import CncFileError
from aeromq.transport.cnc import CNC_FILE, CncFile

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
        pid, heartbeat_age_ms = dead
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.exists(entry.path):
            removed.append(entry.path)
            _LOG.warning(
                "removed the directory of a dead media driver: aeron_dir=%s pid=%d "
                "heartbeat_age_ms=%s",
                entry.path,
                pid,
                heartbeat_age_ms,
            )
    return removed


def _dead_driver(aeron_dir: str, driver_timeout_ms: int, now_ms: int) -> tuple[int, int] | None:
    """(pid, heartbeat age ms; -1 when it closed) of the dead driver of ``aeron_dir``, or None
    when it may be alive or cannot be judged."""
    if not os.path.exists(os.path.join(aeron_dir, CNC_FILE)):
        return None
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
    return pid, age_ms


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
