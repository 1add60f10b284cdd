"""Compressed batches end to end: the same JSON-like messages sent plain and with each codec
(``ProducerConfig.compression``), in one run, through one broker process.

Each case is the broker suite's end-to-end phase (``bench/suites/broker.py``: one producer
process sending batches of 32 pipelined 8 deep over IPC, one puller process reading the 4
queues with long polling and reading each answer into columns, so inflating what is
compressed) on a topic of its own, with bodies of about 300 bytes: a 16-byte send stamp and
sequence, then an order as JSON (ids, a customer, a status, two order lines), as an
application's events look. Rows: end-to-end ``msgs_per_s`` and latency, ``MB_per_s`` of
bodies, and in ``extra`` the bytes the broker's commit log grew by per message
(``log_bytes_per_msg``, from its ``commit_log_max_offset``) and the client and server CPU per
message. No targets: issue 32 asks for the figures, compressed against plain.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import struct
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent import futures
from pathlib import Path
from typing import TYPE_CHECKING

from aeromq.transport.util import process_cpu_s
from bench._harness import Result, Target, case_rows, latency_summary, started
from bench.suites.broker import (
    BATCH,
    WINDOW,
    Outbox,
    _collect,
    _consume,
    _cpu_extra,
    _spawn,
    _start_broker,
)

if TYPE_CHECKING:
    from aeromq.broker.testing import ServerProcess
    from aeromq.producer import SendResult

CODECS = ("none", "lz4", "zstd", "zlib")
_HEAD = struct.Struct("<qq")


def _body(sequence: int) -> bytes:
    """A send stamp (monotonic ns) and the sequence, then an order as JSON (~280 bytes)."""
    order = {
        "order_id": f"ord-{sequence:012d}",
        "customer": {"id": f"cus-{sequence % 9973:06d}", "tier": "gold" if sequence % 7 else "std"},
        "status": "PAID",
        "currency": "EUR",
        "lines": [
            {"sku": f"SKU-{sequence % 113:05d}", "qty": 1 + sequence % 3, "price": "19.90"},
            {"sku": f"SKU-{sequence % 71:05d}", "qty": 1, "price": "4.50"},
        ],
        "created_at": "2026-11-28T19:00:00Z",
    }
    return _HEAD.pack(time.monotonic_ns(), sequence) + json.dumps(order).encode()


BODY_LENGTH = len(_body(0))


def _produce(grpc: str, topic: str, count: int, codec: str, out: Outbox) -> None:
    from aeromq.client import Message
    from aeromq.producer import Producer, ProducerConfig

    config = ProducerConfig(compression=None if codec == "none" else codec)
    with Producer("bench-compression", grpc, config=config) as producer:
        producer.send(Message(topic, _body(-1)))  # connect and warm up
        window: list[futures.Future[Sequence[SendResult]]] = []
        cpu = time.process_time()
        began = time.monotonic_ns()
        for start in range(0, count, BATCH):
            batch = [Message(topic, _body(i)) for i in range(start, min(count, start + BATCH))]
            window.append(producer.send_batch_async(batch))
            if len(window) >= WINDOW:
                window.pop(0).result(30)
        for future in window:
            future.result(30)
        elapsed_ns = time.monotonic_ns() - began
        cpu = time.process_time() - cpu
    out.put(("produced", elapsed_ns, [], cpu))


def _log_end(broker: ServerProcess) -> int:
    from aeromq.client.grpc_client import GrpcClient

    with GrpcClient(broker.grpc_address, timeout_s=30) as admin:
        return admin.broker_stats().commit_log_max_offset


def _case(broker: ServerProcess, codec: str, count: int) -> Result:
    """One codec end to end on a topic of its own (auto-created, 4 queues)."""
    topic = f"BenchZip{codec.title()}"
    out: Outbox = multiprocessing.get_context("spawn").Queue()
    consumer = _spawn(_consume, broker.ready["aeron_dir"], topic, count, True, out)
    _collect(out, {"ready"})
    log_before = _log_end(broker)
    cpu = process_cpu_s(broker.pid)
    producer = _spawn(_produce, broker.grpc_address, topic, count, codec, out)
    got = _collect(out, {"produced", "consumed"})
    server_cpu_s = process_cpu_s(broker.pid) - cpu
    log_bytes = _log_end(broker) - log_before
    for worker in (producer, consumer):
        worker.join(30)
    _, elapsed_ns, received, _pulls, e2e, cpu_s = got["consumed"]
    seconds = elapsed_ns / 1e9
    return Result(
        f"aeromq:end-to-end:{codec}",
        msgs_per_s=received / seconds,
        MB_per_s=received * BODY_LENGTH / seconds / 1e6,
        extra={
            "received": received,
            "body_bytes": BODY_LENGTH,
            "log_bytes_per_msg": round(log_bytes / (count + 1), 1),  # the warm-up send too
            **_cpu_extra(received, cpu_s + got["produced"][3], server_cpu_s),
        },
        **latency_summary(e2e),
    )


def run(quick: bool) -> Iterator[Result | Target]:
    count = 30_000 if quick else 200_000
    limit_s = 60.0 if quick else 300.0
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-compression-"))
    cases = [f"aeromq:end-to-end:{codec}" for codec in CODECS]
    try:
        broker, failed = started("broker start", _start_broker, root, cases=cases, timeout_s=60)
        if broker is None:
            yield from failed
            return
        try:
            for codec, case in zip(CODECS, cases, strict=True):
                yield from case_rows(case, _case, broker, codec, count, timeout_s=limit_s)
        finally:
            broker.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
