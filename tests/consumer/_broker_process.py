"""Real servers for consumer tests, each in a subprocess: ``aeromq broker`` on gRPC port 0 with
its data and embedded media driver in a temporary directory (IPC ingress only), and ``aeromq
namesrv`` on port 0. Each waits for its ready line; ``stop`` sends SIGTERM (SIGKILL if stuck)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from aeromq.client.grpc_client import GrpcClient


@dataclass
class ServerProcess:
    name: str
    process: subprocess.Popen[str]
    grpc_address: str
    log: list[str]
    reader: threading.Thread

    def client(self) -> GrpcClient:
        return GrpcClient(self.grpc_address, timeout_s=5.0)

    def create_topic(self, topic: str, queue_nums: int) -> None:
        with self.client() as client:
            client.create_topic(topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums)

    def stop(self, timeout_s: float = 15.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.reader.join(5)
        if self.process.stdout is not None:
            self.process.stdout.close()


BrokerProcess = ServerProcess


def _start(name: str, arguments: list[str], ready: str, timeout_s: float) -> ServerProcess:
    """Run ``python -m aeromq ARGUMENTS``; the gRPC address is the ready line's last
    ``grpc=`` value, or its last word."""
    process = subprocess.Popen(
        [sys.executable, "-m", "aeromq", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    log: list[str] = []
    lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()

    def drain() -> None:  # keeps the pipe empty for the server's whole life
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
        if line.startswith(ready):
            words = line.split()
            fields = dict(word.split("=", 1) for word in words if "=" in word)
            address = fields.get("grpc", words[-1])
            return ServerProcess(name, process, address, log, reader)
    process.kill()
    process.wait(5)
    reader.join(5)
    if process.stdout is not None:
        process.stdout.close()
    raise RuntimeError(f"{name} did not start: {log}")


def start_broker(
    directory: Path,
    name: str = "broker-a",
    *extra: str,
    namesrv: str | None = None,
    timeout_s: float = 30.0,
) -> ServerProcess:
    """An ``aeromq broker`` named ``name`` with its data in ``directory/name``."""
    data_dir = directory / name
    data_dir.mkdir(parents=True, exist_ok=True)
    arguments = [
        "broker",
        "--broker-name",
        name,
        "--grpc-port",
        "0",
        "--data-dir",
        str(data_dir / "store"),
        "--flush-interval-ms",
        "50",
        "--commit-log-segment-bytes",
        str(64 << 20),
        "--ingress-udp-endpoint",
        "none",
        "--log-level",
        "WARNING",
    ]
    if namesrv is not None:
        arguments += ["--namesrv-address", namesrv, "--namesrv-heartbeat-interval-ms", "200"]
    return _start(name, [*arguments, *extra], "broker ready:", timeout_s)


def start_namesrv(timeout_s: float = 30.0) -> ServerProcess:
    """An ``aeromq namesrv`` on 127.0.0.1, port 0."""
    return _start("namesrv", ["namesrv", "--port", "0"], "aeromq namesrv listening on", timeout_s)
