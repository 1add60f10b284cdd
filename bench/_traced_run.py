"""A broker for a traced run: the environment that turns tracing on in every process started
meanwhile (a ``sitecustomize`` folder on ``PYTHONPATH``, the tracer's variables), a broker
started in it with a topic of one queue, and both undone afterwards.

Used by the suites whose every process records itself: ``hops`` (``bench/_hop_trace.py``) and
``profile`` (``bench/_thread_profile.py``); ``threads`` takes the broker, the paced sends and the
consumer (nothing traced).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from aeromq.broker.testing import ServerProcess, start_broker_process

if TYPE_CHECKING:
    from aeromq.consumer import DefaultLitePullConsumer

__all__ = [
    "send_paced",
    "started_consumer",
    "traced_broker",
    "traced_environment",
    "transport_from_env",
]


@contextlib.contextmanager
def traced_environment(site: Path, variables: Mapping[str, str]) -> Iterator[None]:
    """``site`` first on ``PYTHONPATH``, then the folder holding the ``bench`` package (the
    ``sitecustomize`` in ``site`` imports it, and a child started outside that folder would
    not find it), and ``variables`` set in this process's environment (inherited by what it
    starts) for the block; as they were after it."""
    saved = {key: os.environ.get(key) for key in ("PYTHONPATH", *variables)}
    os.environ.update(variables)
    root = str(Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), root, saved["PYTHONPATH"]]))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def traced_broker(data_dir: Path, topic: str) -> Iterator[ServerProcess]:
    """A broker on its defaults with its store in ``data_dir`` and ``topic`` of one queue,
    stopped after the block (run it inside :func:`traced_environment`). Its UDP ingress takes
    any free port, not the default one, so that two runs side by side do not clash (the
    clients send over IPC, or to it over UDP when a suite asks: ``profile``, ``threads``)."""
    broker = start_broker_process(data_dir, extra_args=["--ingress-udp-endpoint", "127.0.0.1:0"])
    try:
        from aeromq.client.grpc_client import GrpcClient

        admin = GrpcClient(broker.grpc_address)
        admin.create_topic(topic, read_queue_nums=1, write_queue_nums=1)
        admin.close()
        yield broker
    finally:
        broker.stop()


def transport_from_env(name: str) -> str:
    """The clients' transport a suite's environment variable ``name`` asks for: ``udp`` for
    UDP on loopback, else ``auto`` (IPC on one host)."""
    return "udp" if os.environ.get(name, "").strip().lower() == "udp" else "auto"


def send_paced(send: Callable[[], object], rate: int, count: int) -> None:
    """``send()`` ``count`` times, call ``i`` due at ``t0 + i / rate`` (0: back to back)."""
    started_ns = time.monotonic_ns()
    for i in range(count):
        if rate:
            wait_ns = started_ns + i * 1_000_000_000 // rate - time.monotonic_ns()
            if wait_ns > 0:
                time.sleep(wait_ns / 1e9)
        send()


def started_consumer(
    grpc: str, group: str, topic: str, transport: str = "auto"
) -> DefaultLitePullConsumer:
    """A ``DefaultLitePullConsumer`` on its defaults (but ``transport``) in ``group``, subscribed
    to every message of ``topic``, started (the caller shuts it down)."""
    from aeromq.consumer import DefaultLitePullConsumer, LitePullConsumerConfig

    consumer = DefaultLitePullConsumer(
        config=LitePullConsumerConfig(consumer_group=group, endpoints=(grpc,), transport=transport)
    )
    consumer.subscribe(topic, "*")
    consumer.start()
    return consumer
