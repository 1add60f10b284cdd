"""Crashed drivers leave nothing in /dev/shm: SIGKILLs (6 in the suite, 2 of each kind; set
``AEROMQ_DRIVER_KILLS`` for more) of processes running embedded drivers
(brokers with their drivers in SHARED and DEDICATED threading modes, and a client's embedded
driver as a UDP client starts it), each at a random moment of its start or of its run, then one
clean start: no directory of a killed driver is left. Each directory is known by the pid its
driver wrote in its lock file (``transport/driver/driver_lock.py``) or in its cnc.dat."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aeromq.broker.testing import start_broker_process
from aeromq.transport.cnc import CncFile
from aeromq.transport.driver.driver_lock import lock_pid
from aeromq.transport.driver.media_driver import embedded_dir_root
from aeromq.transport.driver.stale_dirs import EMBEDDED_DIR_PREFIX

KILLS = int(os.environ.get("AEROMQ_DRIVER_KILLS", "6"))

_CLIENT_DRIVER = """
import time
from aeromq.transport.driver import MediaDriver, MediaDriverContext
driver = MediaDriver.launch_embedded(MediaDriverContext.from_env(term_buffer_sparse_file=True))
print("ready", driver.aeron_dir, flush=True)
time.sleep(120)
"""


def _broker(data_dir: Path, threading_mode: str) -> list[str]:
    return [
        sys.executable, "-m", "aeromq", "broker", "--broker-name", "killed",
        "--grpc-port", "0", "--rocketmq-port", "0", "--metrics-port", "none",
        "--ingress-udp-endpoint", "none", "--data-dir", str(data_dir),
        "--driver-threading-mode", threading_mode,
    ]  # fmt: skip


def _pid_of(aeron_dir: str) -> int | None:
    pid = lock_pid(aeron_dir)
    if pid is not None:
        return pid
    try:
        with CncFile.map(aeron_dir, timeout_ms=0) as cnc:
            return cnc.pid
    except Exception:  # no cnc.dat (yet): nothing to attribute it by
        return None


def _dirs_of(pids: set[int]) -> list[str]:
    root = embedded_dir_root()
    found = []
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name.startswith(EMBEDDED_DIR_PREFIX) and _pid_of(path) in pids:
            found.append(path)
    return found


@pytest.mark.slow
def test_should_leave_no_directory_of_sigkilled_drivers(tmp_path: Path) -> None:
    rng = random.Random(35)
    killed: set[int] = set()
    seen: set[str] = set()
    commands = [
        _broker(tmp_path / "store", "SHARED"),
        _broker(tmp_path / "store", "DEDICATED"),
        [sys.executable, "-c", _CLIENT_DRIVER],
    ]
    for index in range(KILLS):
        process = subprocess.Popen(
            commands[index % len(commands)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        # from the interpreter's start (no driver yet) to well past the driver's start
        time.sleep(rng.uniform(0.2, 3.0))
        process.kill()
        process.wait(10)
        killed.add(process.pid)
        seen.update(_dirs_of({process.pid}))
    assert seen, "no killed process got as far as its driver: the kills were all too early"

    clean = start_broker_process(tmp_path / "clean", "clean", ["--ingress-udp-endpoint", "none"])
    assert clean.stop() == 0

    left = [path for path in seen if os.path.exists(path)] + _dirs_of(killed)
    print(f"{len(seen)} directories of {KILLS} killed drivers seen, {len(left)} left")
    assert not left, f"directories of killed drivers left in {embedded_dir_root()}: {left}"
