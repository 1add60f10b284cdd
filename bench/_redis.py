"""Redis Streams as a baseline: a ``redis-server`` started for a suite, and why it cannot run.

The server (Debian package ``redis-server``, in ``system-packages.txt``) listens on 127.0.0.1 on
a free port, its files in a directory of the suite's, with the AOF on and ``appendfsync
everysec`` (each write appended as it comes and fsynced once a second: the nearest to aeromq's
ASYNC flush and NATS's periodic fsync); no RDB snapshots. Clients are redis-py (the bench
extra).

Used by the broker, consumer and latency suites (their workers: :mod:`bench._redis_workers`,
the consumer suite's own, :mod:`bench._latency_systems`).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from bench._nats import free_port, stop_server

__all__ = ["RedisServer", "redis_missing"]

_START_TIMEOUT_S = 10.0


def redis_missing() -> str | None:
    """Why the Redis baseline cannot run here, or None."""
    if shutil.which("redis-server") is None:
        return "redis-server not installed (Debian package redis-server)"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "redis-py not installed (pip package redis)"
    return None


class RedisServer:
    """A ``redis-server`` with its files under ``root``, on a free port; answering ``PING`` once
    constructed (raises redis-py's ``ConnectionError`` when it does not within 10 s, stopped)."""

    def __init__(self, root: Path) -> None:
        import redis

        self.port = free_port()
        self.process = subprocess.Popen(
            [
                "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", str(root), "--save", "", "--appendonly", "yes",
                "--appendfsync", "everysec",
            ],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    self.close()
                    raise
                time.sleep(0.05)
        self.client = client

    def close(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL after 10 s."""
        stop_server(self.process)
