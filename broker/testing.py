"""Real servers in child processes: ``aeromq broker`` and ``aeromq namesrv``, each started on
gRPC port 0 and handed back once it serves. The one launcher of the repository, for tests,
benchmarks (``bench/suites/broker.py``) and the quickstart.

:func:`start_broker_process` runs ``python -m aeromq broker ...`` with its store in a directory
of the caller's and reads its ``broker ready:`` line (``key=value`` pairs: name, grpc,
aeron_dir, ingress channels, ...); :func:`start_namesrv_process` runs ``python -m aeromq
namesrv`` and reads its ``aeromq namesrv listening on HOST:PORT`` line. The child's output is
drained on a thread for its whole life, so the pipe never fills, and kept in
:attr:`ServerProcess.log`. :meth:`ServerProcess.stop` sends SIGTERM (a graceful shutdown: stop
the ingress, flush, checkpoint) and kills only a server that does not stop in time;
:meth:`ServerProcess.kill` is the crash case. A server still running when the process that
started it exits (a test that failed before its clean-up stopped it) is killed then
(``atexit``), so no broker outlives its test run; a process killed with SIGKILL runs no
``atexit``, and its servers live on.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aeromq.broker._errors import BrokerStateError
from aeromq.broker.run_file import BROKER_STACKS_FILE

__all__ = ["ServerProcess", "start_broker_process", "start_namesrv_process"]

_BROKER_READY_PREFIX = "broker ready:"
_NAMESRV_READY_PREFIX = "aeromq namesrv listening on"


@dataclass
class ServerProcess:
    """A running server child; ``ready`` holds the fields of its ready line (``grpc`` always).

    ``data_dir`` is the broker's store directory (None for a name server)."""

    name: str
    process: subprocess.Popen[str]
    ready: dict[str, str]
    data_dir: Path | None = None
    log: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    @property
    def grpc_address(self) -> str:
        return self.ready["grpc"]

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout_s: float = 15.0) -> int:
        """SIGTERM, wait up to ``timeout_s``, then SIGKILL; returns the exit code. A process
        still running after the wait has its last output lines written to stderr, for the
        report of the test (a broker writes its threads' stacks there when its shutdown hangs),
        and a broker its threads' stacks at that moment too, asked for with SIGQUIT before the
        kill (:meth:`_stacks`): they show even a main thread that never ran again after the
        SIGTERM, so never armed the dump of a hung shutdown."""
        late = killed = False
        stacks = ""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                late = True
                stacks = self._stacks()
                if self.process.poll() is None:
                    self.process.kill()
                    killed = True
                self.process.wait(5)
        self._release()  # the output is whole once its reader has ended
        if late:
            ended = "killed" if killed else "it ended while its stacks were taken"
            print(
                f"{self.name} did not stop within {timeout_s} s of SIGTERM ({ended}); its last "
                "output:",
                *self.log[-_HUNG_OUTPUT_LINES:],
                sep="\n",
                file=sys.stderr,
            )
            if stacks:
                print(f"{self.name}'s threads after the wait:", stacks, file=sys.stderr)
        return self.process.returncode

    def _stacks(self) -> str:
        """A live broker's threads' stacks: SIGQUIT, on which it appends them to
        ``BROKER_STACKS_FILE`` in its data directory (from a C signal handler: written while its
        interpreter is stuck too), read once the file stops growing (at most 2 s); empty for a
        name server or a broker without that file."""
        if self.data_dir is None:
            return ""
        path = self.data_dir / BROKER_STACKS_FILE
        try:
            before = path.stat().st_size
        except FileNotFoundError:
            return ""  # not registered (a broker before its start finished): SIGQUIT would kill
        self.process.send_signal(signal.SIGQUIT)
        size, deadline = before, time.monotonic() + 2.0
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = path.stat().st_size
            if now > before and now == size:
                break
            size = now
        with path.open("rb") as file:
            file.seek(before)
            return file.read().decode("utf-8", "replace")

    def kill(self) -> None:
        """SIGKILL: the crash case (no flush, no checkpoint)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(5)
        self._release()

    def _release(self) -> None:
        _STARTED.discard(self.process)
        if self.reader is not None:
            self.reader.join(5)
        if self.process.stdout is not None:
            self.process.stdout.close()


_HUNG_OUTPUT_LINES = 200

_STARTED: set[subprocess.Popen[str]] = set()
"""The servers this process started and has not yet seen end (see module)."""


@atexit.register
def _kill_servers_left_running() -> None:
    for process in list(_STARTED):
        if process.poll() is None:
            process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)


def start_broker_process(
    data_dir: Path,
    name: str = "broker-a",
    extra_args: Sequence[str] = (),
    *,
    namesrv_address: str | None = None,
    timeout_s: float = 30.0,
) -> ServerProcess:
    """Start a broker named ``name`` with its store in ``data_dir``, gRPC and the RocketMQ 5
    endpoint (``ready["rocketmq"]``) on free ports;
    ``namesrv_address`` registers it with a name server. ``extra_args`` are more ``aeromq
    broker`` options (they win over the ones set here).

    Raises :class:`~broker.BrokerStateError` with the broker's output when it exits or does not
    print its ready line within ``timeout_s``.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    arguments = ["broker", "--broker-name", name, "--grpc-port", "0", "--rocketmq-port", "0",
                 "--data-dir", str(data_dir)]  # fmt: skip
    if namesrv_address is not None:
        arguments += ["--namesrv-address", namesrv_address]
    return _start(name, [*arguments, *extra_args], _BROKER_READY_PREFIX, timeout_s, data_dir)


def start_namesrv_process(timeout_s: float = 30.0) -> ServerProcess:
    """Start a name server on 127.0.0.1, gRPC on a free port."""
    return _start(
        "namesrv", ["namesrv", "--port", "0"], _NAMESRV_READY_PREFIX, timeout_s, data_dir=None
    )


def _ready_fields(prefix: str) -> Callable[[str], dict[str, str]]:
    def parse(line: str) -> dict[str, str]:
        words = line[len(prefix) :].split()
        fields = dict(word.split("=", 1) for word in words if "=" in word)
        if "grpc" not in fields and words:
            fields["grpc"] = words[-1]  # the name server's line ends with its address
        return fields

    return parse


def _start(
    name: str, arguments: list[str], ready: str, timeout_s: float, data_dir: Path | None
) -> ServerProcess:
    """Run ``python -m aeromq ARGUMENTS`` and wait for the line that starts with ``ready``."""
    process = subprocess.Popen(
        [sys.executable, "-m", "aeromq", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    _STARTED.add(process)
    log: list[str] = []
    lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()

    def drain() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            log.append(line.rstrip())
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=drain, name=f"{name}-output", daemon=True)
    reader.start()
    parse = _ready_fields(ready)
    deadline = time.monotonic() + timeout_s
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=remaining)
        except queue.Empty:
            break
        if line is None:
            break
        if line.startswith(ready):
            return ServerProcess(name, process, parse(line), data_dir, log, reader)
    process.kill()
    process.wait(5)
    _STARTED.discard(process)
    reader.join(5)
    if process.stdout is not None:
        process.stdout.close()
    raise BrokerStateError(
        f"{name} did not start", name=name, exit_code=process.returncode, output=log[-20:]
    )
