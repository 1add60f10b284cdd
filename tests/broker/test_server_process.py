"""``aeromq.broker.testing.ServerProcess.stop()`` on a server that will not stop: a real child
that ignores SIGTERM and, as ``aeromq broker`` does, appends its stacks to ``stacks.txt`` in its
data directory at SIGQUIT. (A real broker made too slow by ``stop(timeout_s=0)`` cannot stand
in: its SIGQUIT then lands while its threads end, and the broker ended by SIGSEGV in the second
of a series of such stops beside two CPU hogs, likely ``faulthandler``'s dump of threads that
were going away.)"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aeromq.broker import BROKER_STACKS_FILE
from aeromq.broker.testing import ServerProcess

_HUNG = """
import faulthandler, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a shutdown that never comes
stacks = open(sys.argv[1], "a")
faulthandler.register(signal.SIGQUIT, file=stacks, all_threads=True)
print("hung ready", flush=True)
while True:
    time.sleep(0.05)
"""


def test_should_print_a_server_that_would_not_stop_with_its_stacks_and_kill_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / BROKER_STACKS_FILE).touch()  # made by the broker once started
    process = subprocess.Popen(
        [sys.executable, "-c", _HUNG, str(tmp_path / BROKER_STACKS_FILE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line == "hung ready\n"
    server = ServerProcess("hung", process, {"grpc": "-"}, tmp_path, [line.rstrip()])
    assert server.stop(timeout_s=0.5) == -signal.SIGKILL
    err = capsys.readouterr().err
    assert "hung did not stop within 0.5 s of SIGTERM (killed); its last output:\nhung ready" in err
    threads = err.split("hung's threads after the wait:", 1)[1]
    assert re.search(r"Current thread 0x[0-9a-f]+ \(most recent call first\):", threads), err
    assert 'File "<string>"' in threads, err


def test_should_kill_a_name_server_that_would_not_stop_without_asking_for_stacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # no data directory: no stacks file to read, and SIGQUIT would only end it
    process = subprocess.Popen(
        [sys.executable, "-c", _HUNG, "/dev/null"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline() == "hung ready\n"
    server = ServerProcess("namesrv", process, {"grpc": "-"}, None, [])
    assert server.stop(timeout_s=0.2) == -signal.SIGKILL
    err = capsys.readouterr().err
    assert "namesrv did not stop within 0.2 s of SIGTERM (killed)" in err
    assert "threads after the wait" not in err
