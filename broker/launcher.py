"""Start ``aeromq broker`` as a child process and wait until it serves.

For tools, demos and tests that need a real broker process: :func:`start_broker_process` runs
``python -m aeromq broker ...`` and reads its ``broker ready:`` line (``key=value`` pairs: name,
grpc, aeron_dir, ingress channels, ...); :meth:`BrokerProcess.stop` sends SIGTERM (a graceful
shutdown: stop the ingress, flush, checkpoint) and kills it only if it does not stop in time.
The child's output is drained on a thread for its whole life so the pipe never fills.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aeromq.broker._errors import IllegalStateError

__all__ = ["BrokerProcess", "start_broker_process"]

_READY_PREFIX = "broker ready:"


@dataclass
class BrokerProcess:
    """A running ``aeromq broker`` child; ``ready`` holds the fields of its ready line."""

    name: str
    process: subprocess.Popen[str]
    ready: dict[str, str]
    data_dir: Path
    log: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    @property
    def grpc_address(self) -> str:
        return self.ready["grpc"]

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, timeout_s: float = 15.0) -> int:
        """SIGTERM, wait up to ``timeout_s``, then SIGKILL; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.reader is not None:
            self.reader.join(5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL: the crash case (no flush, no checkpoint)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(5)


def start_broker_process(
    data_dir: Path,
    name: str = "broker-a",
    extra_args: Sequence[str] = (),
    timeout_s: float = 30.0,
) -> BrokerProcess:
    """Start a broker named ``name`` with its store in ``data_dir`` and gRPC on a free port.

    Raises :class:`~broker.IllegalStateError` with the broker's output when it exits or does not
    print its ready line within ``timeout_s``.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "aeromq",
        "broker",
        "--broker-name",
        name,
        "--grpc-port",
        "0",
        "--data-dir",
        str(data_dir),
        *extra_args,
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
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
    deadline = time.monotonic() + timeout_s
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=remaining)
        except queue.Empty:
            break
        if line is None:
            break
        if line.startswith(_READY_PREFIX):
            fields = dict(
                part.split("=", 1) for part in line[len(_READY_PREFIX) :].split() if "=" in part
            )
            return BrokerProcess(name, process, fields, data_dir, log, reader)
    process.kill()
    process.wait(5)
    reader.join(5)
    if process.stdout is not None:
        process.stdout.close()
    raise IllegalStateError(
        "broker did not start", name=name, exit_code=process.returncode, output=log[-20:]
    )
