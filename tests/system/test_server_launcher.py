"""The launcher of real servers (``broker/testing.py``) leaves none running after the process
that started them: a test that fails before its clean-up stops its broker must not leave the
broker serving (and holding its gigabyte of commit log) for the rest of the machine's life."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests._pids import pid_alive

_STARTS_AND_EXITS = """
import sys
from pathlib import Path
from aeromq.broker.testing import start_broker_process
broker = start_broker_process(Path(sys.argv[1]))
print(broker.pid, flush=True)
raise SystemExit(3)  # as a failed test would end: no stop()
"""


def test_should_kill_a_broker_still_running_when_the_process_that_started_it_exits(
    tmp_path: Path,
) -> None:
    starter = subprocess.run(
        [sys.executable, "-c", _STARTS_AND_EXITS, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert starter.returncode == 3, starter.stderr
    pid = int(starter.stdout.split()[0])
    try:
        deadline = time.monotonic() + 10
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(pid), f"the broker (pid {pid}) outlived the process that started it"
    finally:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
