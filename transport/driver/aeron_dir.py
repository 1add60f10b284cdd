"""The driver's directory: is another driver alive in it, and the fresh layout for a new one.

Aeron's ``aeron_driver_ensure_dir_is_recreated``. A driver owns ``aeron_dir`` while it is alive:
its heartbeat (epoch ms in the to-driver ring buffer's trailer in ``cnc.dat``) is fresher than
``driver_timeout_ms``, or it holds the directory's lock (:mod:`~transport.driver.driver_lock`,
which a hung driver still holds). Starting over a live driver is refused with
:class:`~transport.ActiveDriverError` naming the directory and the heartbeat's age. The files of
a stopped or crashed driver are replaced: a warning is logged, its error log (if it recorded
anything) is saved next to the directory as ``<aeron_dir>-<time>-error.log``, and the directory
is emptied (but for the lock, now the new driver's) and made again with ``publications/`` and
``images/``.
"""

from __future__ import annotations

import logging
import os
import shutil
import time

from aeromq.transport._errors import ActiveDriverError, CncFileError
from aeromq.transport.cnc import CNC_FILE, CncFile
from aeromq.transport.concurrent.error_log_reader import read as read_error_log
from aeromq.transport.concurrent.file_modes import DEFAULT_FILE_MODE, directory_mode, make_dirs
from aeromq.transport.driver.driver_lock import LOCK_FILE, DriverLock, lock_pid

__all__ = ["driver_heartbeat_age_ms", "has_cnc_file", "prepare_aeron_dir"]

_LOG = logging.getLogger(__name__)


def has_cnc_file(aeron_dir: str) -> bool:
    """Whether ``aeron_dir`` holds a ``cnc.dat``: a driver made its files there (alive or not)."""
    return os.path.exists(os.path.join(aeron_dir, CNC_FILE))


def driver_heartbeat_age_ms(aeron_dir: str, now_ms: int) -> int | None:
    """How old the heartbeat of the driver that wrote ``aeron_dir/cnc.dat`` is, in ms.

    None when there is no usable cnc.dat (none, unpublished, another major version) or its driver
    closed cleanly (heartbeat -1): nothing alive there. Never negative: ``now_ms`` is read by the
    caller before the heartbeat, which a live driver may stamp in between, so a heartbeat up to
    a tick ahead of ``now_ms`` counts as age 0 (as AeronStat shows it).
    """
    if not has_cnc_file(aeron_dir):
        return None
    try:
        cnc = CncFile.map(aeron_dir, timeout_ms=0)
    except (CncFileError, OSError):
        return None
    try:
        heartbeat_ms = cnc.driver_heartbeat_ms()
    finally:
        cnc.close()
    return None if heartbeat_ms <= 0 else max(0, now_ms - heartbeat_ms)


def prepare_aeron_dir(
    aeron_dir: str,
    *,
    delete_on_start: bool,
    driver_timeout_ms: int,
    now_ms: int,
    file_mode: int = DEFAULT_FILE_MODE,
) -> DriverLock:
    """Make ``aeron_dir`` ready for a new driver (see module) and take its lock, returned (the
    caller holds it for the driver's life); raise if a driver is alive in it. The directories
    are made with ``directory_mode(file_mode)`` (``0700`` by default)."""
    make_dirs(aeron_dir, file_mode)
    age_ms = driver_heartbeat_age_ms(aeron_dir, now_ms)
    if not delete_on_start and age_ms is not None and age_ms <= driver_timeout_ms:
        raise ActiveDriverError(
            "active media driver found",
            aeron_dir=aeron_dir,
            heartbeat_age_ms=age_ms,
            driver_timeout_ms=driver_timeout_ms,
        )
    lock = DriverLock.acquire(aeron_dir, file_mode)
    if lock is None and not delete_on_start:
        raise ActiveDriverError(
            "active media driver found (it holds the directory's lock)",
            aeron_dir=aeron_dir,
            heartbeat_age_ms=age_ms,
            pid=lock_pid(aeron_dir),
        )
    if lock is None:  # deleted on start whoever is there, as Aeron's: the lock file too
        os.unlink(os.path.join(aeron_dir, LOCK_FILE))
        lock = DriverLock.acquire(aeron_dir, file_mode)
        assert lock is not None  # a new file nobody holds
    try:
        if not delete_on_start and has_cnc_file(aeron_dir):
            _LOG.warning(
                "replacing the files of a stopped media driver: aeron_dir=%s heartbeat_age_ms=%s",
                aeron_dir,
                age_ms,
            )
            _save_existing_errors(aeron_dir)
        _empty_but_the_lock(aeron_dir)
        os.chmod(aeron_dir, directory_mode(file_mode))  # as if made anew
        make_dirs(os.path.join(aeron_dir, "publications"), file_mode)
        make_dirs(os.path.join(aeron_dir, "images"), file_mode)
    except BaseException:
        lock.release()
        raise
    return lock


def _empty_but_the_lock(aeron_dir: str) -> None:
    for entry in os.scandir(aeron_dir):
        if entry.name == LOCK_FILE:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def _save_existing_errors(aeron_dir: str) -> None:
    try:
        cnc = CncFile.map(aeron_dir, timeout_ms=0)
    except (CncFileError, OSError):
        return
    lines: list[str] = []

    def consume(count: int, first_ms: int, last_ms: int, text: str) -> None:
        lines.append(
            f"***\n{count} observations from {first_ms} to {last_ms} (epoch ms) for:\n {text}\n"
        )

    try:
        distinct = read_error_log(cnc.error_log_buffer, consume)
    finally:
        cnc.close()
    if not distinct:
        return
    stamp = time.strftime("%Y-%m-%d-%H-%M-%S")
    path = f"{aeron_dir.rstrip(os.sep)}-{stamp}-error.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, DEFAULT_FILE_MODE)
    with open(fd, "w", encoding="utf-8") as out:
        out.writelines(lines)
        out.write(f"\n{distinct} distinct errors observed.\n")
    _LOG.warning("existing errors of the stopped media driver saved to: %s", path)
