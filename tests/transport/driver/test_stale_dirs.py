"""A driver removes, at start, the /dev/shm directories that dead embedded drivers left (a
SIGKILLed driver process, at once by its free lock); a live driver's directory, even a hung one's,
is never touched.

The drivers here make their directories in a root of their own (``root``), not in /dev/shm itself:
any driver started there (another test's, on the other pytest-xdist worker) would sweep a killed
one's directory before the test's own driver could."""

from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from aeromq.transport import ActiveDriverError
from aeromq.transport.driver import MediaDriver, driver_lock, media_driver
from aeromq.transport.driver.driver_lock import DriverLock, LockState, lock_pid, lock_state
from aeromq.transport.driver.stale_dirs import EMBEDDED_DIR_PREFIX, remove_stale_driver_dirs
from tests.transport.driver.support import small_context

_EMBEDDED_DRIVER = """
import sys, time
from aeromq.transport.driver import MediaDriver, media_driver
from tests.transport.driver.support import small_context
media_driver.embedded_dir_root = lambda: sys.argv[1]
driver = MediaDriver.launch_embedded(small_context("unused", timer_interval_ns=100_000_000))
print(driver.aeron_dir, flush=True)
time.sleep(120)
"""


@pytest.fixture(autouse=True)
def root(shm_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The embedded drivers' root of this test, its own and the children's."""
    monkeypatch.setattr(media_driver, "embedded_dir_root", lambda: str(shm_dir))
    return shm_dir


@contextmanager
def _driver_process() -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A child process running an embedded driver in ``root``; yields it and its directory."""
    process = subprocess.Popen(
        [sys.executable, "-c", _EMBEDDED_DRIVER, media_driver.embedded_dir_root()],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        aeron_dir = process.stdout.readline().strip()
        assert aeron_dir.startswith(media_driver.embedded_dir_root()), (
            f"no aeron dir in the test's root from the child: {aeron_dir!r}"
        )
        yield process, aeron_dir
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def test_should_remove_a_dead_embedded_drivers_directory_and_keep_a_live_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with _driver_process() as (dead, dead_dir), _driver_process() as (live, live_dir):
        dead.send_signal(signal.SIGKILL)  # no clean-up: its directory stays
        dead.wait(10)
        assert os.path.isdir(dead_dir)
        time.sleep(1.2)  # its last heartbeat is now older than the 1 s timeout below
        context = small_context("unused", driver_timeout_ms=1_000)
        with caplog.at_level(logging.WARNING), MediaDriver.launch_embedded(context) as driver:
            assert not os.path.exists(dead_dir)
            assert os.path.isdir(live_dir), "a live driver's directory was removed"
            assert live.poll() is None
            assert os.path.isdir(driver.aeron_dir)
        assert f"removed the directory of a dead media driver: aeron_dir={dead_dir}" in caplog.text
        assert live_dir not in caplog.text


def test_should_never_remove_a_directory_whose_driver_is_alive_even_if_its_heartbeat_is_old() -> (
    None
):
    with _driver_process() as (live, live_dir):
        far_future_ms = int(time.time() * 1000) + 3_600_000  # heartbeat looks an hour old
        removed = remove_stale_driver_dirs(
            os.path.dirname(live_dir), driver_timeout_ms=1_000, now_ms=far_future_ms
        )
        assert live_dir not in removed  # its pid is alive
        assert os.path.isdir(live_dir)
        assert live.poll() is None


def test_should_remove_a_driver_killed_a_moment_ago_at_once_by_its_free_lock() -> None:
    with _driver_process() as (dead, dead_dir):
        dead.send_signal(signal.SIGKILL)
        dead.wait(10)
        now_ms = int(time.time() * 1000)  # its heartbeat is fresh: only the lock tells
        removed = remove_stale_driver_dirs(
            os.path.dirname(dead_dir), driver_timeout_ms=10_000, now_ms=now_ms
        )
        assert dead_dir in removed
        assert not os.path.exists(dead_dir)


def test_should_keep_a_hung_drivers_directory_whose_lock_is_still_held() -> None:
    with _driver_process() as (hung, hung_dir):
        hung.send_signal(signal.SIGSTOP)  # alive, but its heartbeat stops
        try:
            far_future_ms = int(time.time() * 1000) + 3_600_000
            removed = remove_stale_driver_dirs(
                os.path.dirname(hung_dir), driver_timeout_ms=1_000, now_ms=far_future_ms
            )
            assert hung_dir not in removed and os.path.isdir(hung_dir)
            assert lock_state(hung_dir) is LockState.HELD
        finally:
            hung.send_signal(signal.SIGCONT)


def test_should_judge_a_directory_killed_before_its_lock_by_its_age(tmp_path: Path) -> None:
    young = tmp_path / f"{EMBEDDED_DIR_PREFIX}young"
    old = tmp_path / f"{EMBEDDED_DIR_PREFIX}old"
    freed = tmp_path / f"{EMBEDDED_DIR_PREFIX}freed"
    for directory in (young, old, freed):
        directory.mkdir()
    lock = DriverLock.acquire(str(freed))
    assert lock is not None
    lock.release()  # a driver that took its lock and died before its cnc.dat
    now_ms = int(time.time() * 1000)
    os.utime(old, (now_ms / 1000 - 60, now_ms / 1000 - 60))
    removed = remove_stale_driver_dirs(str(tmp_path), driver_timeout_ms=10_000, now_ms=now_ms)
    assert sorted(removed) == sorted([str(old), str(freed)])
    assert young.is_dir()  # a driver may be making it right now


def test_should_refuse_to_start_over_a_driver_that_holds_the_lock(tmp_path: Path) -> None:
    lock = DriverLock.acquire(str(tmp_path))
    assert lock is not None
    try:
        with pytest.raises(ActiveDriverError, match="holds the directory's lock"):
            MediaDriver.launch(small_context(tmp_path))
    finally:
        lock.release()
    with MediaDriver.launch(small_context(tmp_path)) as driver:
        assert lock_state(driver.aeron_dir) is LockState.HELD
    assert lock_state(str(tmp_path)) is LockState.FREE


def test_should_never_show_a_scan_a_lock_file_its_driver_has_not_locked_yet(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race a full CI run lost once: a client's embedded driver took its lock while another
    client of the same process launched its own and scanned; the scan found the new lock file
    still free and empty (``pid=None lock=free``) and removed the directory of a driver being
    made. Here the scan runs inside the first ``flock`` of ``DriverLock.acquire``."""
    starting = root / f"{EMBEDDED_DIR_PREFIX}starting"
    starting.mkdir()
    real_flock = driver_lock.fcntl.flock
    scans: list[list[str]] = []

    def flock_after_a_scan(fd: int, operation: int) -> None:
        if not scans:
            scans.append(
                remove_stale_driver_dirs(
                    str(root), driver_timeout_ms=10_000, now_ms=int(time.time() * 1000)
                )
            )
        real_flock(fd, operation)

    monkeypatch.setattr(driver_lock.fcntl, "flock", flock_after_a_scan)
    lock = DriverLock.acquire(str(starting))
    monkeypatch.setattr(driver_lock.fcntl, "flock", real_flock)
    assert lock is not None
    try:
        assert scans == [[]], "the scan removed the directory of a driver taking its lock"
        assert starting.is_dir()
        assert lock_state(str(starting)) is LockState.HELD
        assert lock_pid(str(starting)) == os.getpid()
        assert sorted(os.listdir(starting)) == ["driver.lock"]  # no private name left
    finally:
        lock.release()


def test_should_launch_embedded_drivers_side_by_side_without_removing_each_other() -> None:
    """Clients of one process launch their embedded drivers on their own threads (a consumer's
    pull tasks while the producer sends): each launch scans for dead directories while the
    others are being made."""
    drivers: list[MediaDriver] = []
    errors: list[BaseException] = []
    guard = threading.Lock()
    start = threading.Barrier(6)

    def launch() -> None:
        try:
            start.wait(10)
            driver = MediaDriver.launch_embedded(small_context("unused"))
        except BaseException as exc:  # reported below with the others
            with guard:
                errors.append(exc)
            return
        with guard:
            drivers.append(driver)

    try:
        for _ in range(3):
            threads = [threading.Thread(target=launch) for _ in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            assert errors == []
            for driver in drivers:
                assert os.path.isfile(os.path.join(driver.aeron_dir, "cnc.dat")), driver.aeron_dir
                assert lock_state(driver.aeron_dir) is LockState.HELD
            start.reset()
    finally:
        for driver in drivers:
            driver.close()


def test_should_take_the_lock_in_place_where_the_file_system_has_no_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(source: str, target: str) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted", target)

    monkeypatch.setattr(driver_lock.os, "link", no_links)
    lock = DriverLock.acquire(str(tmp_path))
    assert lock is not None
    try:
        assert lock_state(str(tmp_path)) is LockState.HELD
        assert lock_pid(str(tmp_path)) == os.getpid()
        assert sorted(os.listdir(tmp_path)) == ["driver.lock"]
    finally:
        lock.release()
