"""A real broker process for the command-line tests (``aeromq.broker.testing``), shared by a
module: its data and embedded media driver in a temporary directory, IPC ingress only, gRPC on
a free port; and ``run_aeromq``, the real CLI in a subprocess."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process

BROKER_ARGS = (
    "--flush-interval", "50ms",
    "--commit-log-segment-bytes", "64MiB",
    "--ingress-udp-endpoint", "none",
    "--log-level", "WARNING",
)  # fmt: skip
CLI_TIMEOUT_S = 90.0
"""Generous: a consumer's start on a loaded 2-core machine takes seconds, never this long."""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker_process(
        tmp_path_factory.mktemp("broker") / "data", "broker-a", BROKER_ARGS
    )
    yield process
    process.stop()


def run_aeromq(
    *args: str, endpoints: str | None = None, timeout_s: float = CLI_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """``python -m aeromq ARGS`` with ``AEROMQ_ENDPOINTS`` set to ``endpoints`` (if given)."""
    env = {k: v for k, v in os.environ.items() if k != "AEROMQ_ENDPOINTS"}
    if endpoints is not None:
        env["AEROMQ_ENDPOINTS"] = endpoints
    return subprocess.run(
        [sys.executable, "-m", "aeromq", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        check=False,
    )


def data_dir(broker: ServerProcess) -> Path:
    assert broker.data_dir is not None
    return broker.data_dir


def run_on_terminal(*args: str, endpoints: str | None = None) -> tuple[int, str]:
    """``python -m aeromq ARGS`` with standard output and error on a pseudo-terminal; its exit
    status and everything it wrote there."""
    leader, follower = os.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    if endpoints is not None:
        env["AEROMQ_ENDPOINTS"] = endpoints
    process = subprocess.Popen(
        [sys.executable, "-m", "aeromq", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + CLI_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's last writer has gone
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        os.close(leader)
    return code, b"".join(chunks).decode("utf-8", "replace")
