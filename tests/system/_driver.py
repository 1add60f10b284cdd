"""A standalone media driver (``python -m aeromq driver``) in its own process, for system tests.

:func:`start_driver` launches it over a small context (64 KiB IPC terms, 64 KiB cnc buffers, a
10 ms timer) with short liveness timeouts, waits for its ready line and returns a handle;
:meth:`DriverProcess.stop` stops it (idempotent), :meth:`DriverProcess.kill` kills it. Its
stderr goes to ``<aeron_dir>-driver.stderr`` beside the directory. Every wait is bounded.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

__all__ = [
    "CLIENT_LIVENESS_TIMEOUT_MS",
    "TERM_LENGTH",
    "UNBLOCK_TIMEOUT_MS",
    "DriverProcess",
    "start_driver",
]

TERM_LENGTH = 64 * 1024
CLIENT_LIVENESS_TIMEOUT_MS = 1_500
UNBLOCK_TIMEOUT_MS = 2_000
_READY_TIMEOUT_S = 30.0
_SMALL_CNC_ENV = {
    "AERON_CONDUCTOR_BUFFER_LENGTH": str(64 * 1024 + 768),
    "AERON_CLIENTS_BUFFER_LENGTH": str(64 * 1024 + 128),
    "AERON_COUNTERS_BUFFER_LENGTH": str(64 * 1024),
    "AERON_ERROR_BUFFER_LENGTH": str(64 * 1024),
    "AERON_COUNTERS_FREE_TO_REUSE_TIMEOUT": "0",
    "PYTHONUNBUFFERED": "1",
}


class DriverProcess:
    """A running driver process: its directory, pid and how to stop it."""

    def __init__(self, process: subprocess.Popen[str], aeron_dir: Path) -> None:
        self.process = process
        self.aeron_dir = str(aeron_dir)
        self.pid = process.pid

    def kill(self) -> None:
        """SIGKILL: the driver stops without any cleanup (its cnc.dat stays, heartbeat frozen)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not go within 10 s; close the pipes."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_driver(aeron_dir: Path, *, idle_strategy: str = "backoff") -> DriverProcess:
    """Start a driver in ``aeron_dir`` and wait for its ready line (see module)."""
    args = [
        sys.executable,
        "-m",
        "aeromq",
        "driver",
        "--dir",
        str(aeron_dir),
        "--ipc-term-length",
        str(TERM_LENGTH),
        "--timer-interval",
        "10ms",
        "--client-liveness-timeout",
        f"{CLIENT_LIVENESS_TIMEOUT_MS}ms",
        "--publication-unblock-timeout",
        f"{UNBLOCK_TIMEOUT_MS}ms",
        "--publication-linger-timeout",
        "100ms",
        "--idle-strategy",
        idle_strategy,
        "--dir-delete-on-shutdown",
    ]
    with open(aeron_dir.parent / f"{aeron_dir.name}-driver.stderr", "w") as stderr:
        process = subprocess.Popen(  # stderr to a file: a pipe nobody reads could fill up
            args,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, **_SMALL_CNC_ENV},
        )
    driver = DriverProcess(process, aeron_dir)
    assert process.stdout is not None
    try:
        line = _read_line(process, _READY_TIMEOUT_S)
    except TimeoutError:
        driver.stop()
        raise
    if not line.startswith(f"media driver ready: aeron_dir={aeron_dir} pid={process.pid}"):
        driver.stop()
        raise RuntimeError(f"the driver did not start: {line!r}")
    return driver


def _read_line(process: subprocess.Popen[str], timeout_s: float) -> str:
    """The first stdout line, waiting at most ``timeout_s`` (select on the pipe)."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    if not ready:
        raise TimeoutError(f"no ready line from the driver within {timeout_s}s")
    return process.stdout.readline()
