"""An embedded driver removes, at start, the /dev/shm directories that dead embedded drivers
left (a SIGKILLed driver process); a live driver's directory is never touched."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from aeromq.transport.driver import MediaDriver
from aeromq.transport.driver.stale_dirs import remove_stale_driver_dirs
from tests.transport.driver.support import small_context

_EMBEDDED_DRIVER = """
import sys, time
from aeromq.transport.driver import MediaDriver
from tests.transport.driver.support import small_context
driver = MediaDriver.launch_embedded(small_context("unused", timer_interval_ns=100_000_000))
print(driver.aeron_dir, flush=True)
time.sleep(120)
"""


@contextmanager
def _driver_process() -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A child process running an embedded driver; yields it and its aeron directory."""
    process = subprocess.Popen(
        [sys.executable, "-c", _EMBEDDED_DRIVER], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        aeron_dir = process.stdout.readline().strip()
        assert aeron_dir.startswith("/"), f"no aeron dir from the child: {aeron_dir!r}"
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
