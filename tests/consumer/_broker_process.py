"""A real broker for consumer tests: ``aeromq broker`` in a subprocess on gRPC port 0, with its
data and media driver in a temporary directory; stopped with SIGTERM (or SIGKILL if stuck)."""

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

from client.grpc_client import GrpcClient


@dataclass
class BrokerProcess:
    name: str
    process: subprocess.Popen[str]
    grpc_address: str
    data_dir: Path
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


def start_broker(
    directory: Path, name: str = "broker-a", *extra: str, timeout_s: float = 30.0
) -> BrokerProcess:
    """Start ``aeromq broker`` and wait for its ``broker ready:`` line."""
    data_dir = directory / name
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
        str(data_dir / "store"),
        "--flush-interval-ms",
        "50",
        "--commit-log-segment-bytes",
        str(64 << 20),
        "--ingress-udp-endpoint",
        "none",
        "--log-level",
        "WARNING",
        *extra,
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

    def drain() -> None:  # keeps the pipe empty for the broker's whole life
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
        if line.startswith("broker ready:"):
            fields = dict(part.split("=", 1) for part in line.split()[2:] if "=" in part)
            return BrokerProcess(name, process, fields["grpc"], data_dir, log, reader)
    process.kill()
    process.wait(5)
    reader.join(5)
    if process.stdout is not None:
        process.stdout.close()
    raise RuntimeError(f"broker {name} did not start: {log}")
