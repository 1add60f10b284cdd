"""The lite pull consumer end to end: msgs/s and send -> ``poll`` latency of 100 B messages
with one and with three consumers of one group, beside Redis Streams consumer groups.

aeromq: the broker process of ``bench.suites.broker`` (embedded media driver, ASYNC flush),
a topic of 4 queues per case, one producer process (``producer.Producer``, batches of 32
pipelined 8 deep) and 1 or 3 ``DefaultLitePullConsumer`` processes of one group (subscribe,
FIRST_OFFSET, ``pull_batch_size`` 32), started and rebalanced before the producer starts.

Redis: the ``redis-server`` of ``bench.suites.broker``, its pipelined ``XADD`` producer, and 1
or 3 consumers of one group reading with ``XREADGROUP COUNT 256 BLOCK`` and ``XACK``ing.

Each consumer streams (sequence, receipt ns, latency ns) triples to this process in chunks;
a case ends when the union of distinct sequences reaches the count. Rate: count over first
send (the smallest stamp) to the last first receipt; latency: stamp in the body to the first
receipt (one host, one monotonic clock). Target (issue 8): >= 2x Redis Streams end to end.
"""

from __future__ import annotations

import array
import multiprocessing
import queue
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench._harness import Result, Target, latency_summary
from bench.suites.broker import (
    _STAMP,
    BATCH,
    BODY_LENGTH,
    QUEUES,
    WINDOW,
    _produce,
    _Redis,
    _redis_missing,
    _redis_produce,
    _spawn,
    _start_broker,
)

CONSUMER_COUNTS = (1, 3)
_CHUNK_NS = 50_000_000  # a consumer reports what it got at most every 50 ms
_SETTLE_S = 2.0  # after every consumer is up: time for the group's rebalance
_CASE_TIMEOUT_S = 180.0


# -- consumer workers (spawned processes) -------------------------------------------------------


def _consume_loop(
    index: int, fetch: Callable[[], list[bytes]], stop: Any, out: Any, close: Callable[[], None]
) -> None:
    """Fetch bodies until ``stop`` is set, sending ("chunk", sequences, receipts, latencies)."""
    unpack = _STAMP.unpack_from
    sequences, receipts, latencies = array.array("q"), array.array("q"), array.array("q")
    flushed_ns = time.monotonic_ns()
    deadline = time.monotonic() + _CASE_TIMEOUT_S
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            bodies = fetch()
            now_ns = time.monotonic_ns()
            for body in bodies:
                stamp, sequence = unpack(body, 0)[0], unpack(body, 8)[0]
                if sequence >= 0:  # -1: the producer's warm-up message
                    sequences.append(sequence)
                    receipts.append(now_ns)
                    latencies.append(now_ns - stamp)
            if sequences and now_ns - flushed_ns >= _CHUNK_NS:
                out.put(("chunk", index, sequences.tobytes(), receipts.tobytes(), latencies))
                sequences, receipts, latencies = (
                    array.array("q"),
                    array.array("q"),
                    array.array("q"),
                )
                flushed_ns = now_ns
        if sequences:
            out.put(("chunk", index, sequences.tobytes(), receipts.tobytes(), latencies))
    finally:
        close()
        out.put(("done", index))


def _aeromq_consume(grpc: str, topic: str, group: str, index: int, stop: Any, out: Any) -> None:
    from aeromq import consumer

    config = consumer.LitePullConsumerConfig(
        consumer_group=group,
        endpoints=(grpc,),
        consume_from_where=consumer.ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=200,
        pull_batch_size=BATCH,
    )
    lite = consumer.DefaultLitePullConsumer(config=config)
    lite.subscribe(topic, "*")
    lite.start()
    out.put(("ready", index))
    poll = lite.poll

    def fetch() -> list[bytes]:
        return [message.body for message in poll()]

    _consume_loop(index, fetch, stop, out, lite.shutdown)


def _redis_consume(port: int, stream: str, index: int, stop: Any, out: Any) -> None:
    import redis

    client: Any = redis.Redis(port=port)
    name = f"c{index}"
    out.put(("ready", index))

    def fetch() -> list[bytes]:
        answer = client.xreadgroup("g", name, {stream: ">"}, count=BATCH * WINDOW, block=200)
        if not answer:
            return []
        entries = answer[0][1]
        client.xack(stream, "g", *[entry_id for entry_id, _ in entries])
        return [fields[b"b"] for _, fields in entries]

    _consume_loop(index, fetch, stop, out, client.close)


# -- one case -----------------------------------------------------------------------------------


def _case(
    name: str, count: int, consumers: int, start_consumer: Callable[..., Any], start_producer: Any
) -> Result:
    """Start ``consumers`` consumers, then the producer; gather until ``count`` distinct."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    stop = context.Event()
    workers = [start_consumer(index, stop, out) for index in range(consumers)]
    first_receipt: dict[int, tuple[int, int]] = {}  # sequence -> (receipt ns, latency ns)
    received = 0
    done = 0
    producer = None
    deadline = time.monotonic() + _CASE_TIMEOUT_S
    try:
        ready = 0
        while ready < consumers:
            item = out.get(timeout=max(0.1, deadline - time.monotonic()))
            ready += item[0] == "ready"
        time.sleep(_SETTLE_S)
        producer = start_producer(out)
        while len(first_receipt) < count and time.monotonic() < deadline:
            try:
                item = out.get(timeout=1.0)
            except queue.Empty:
                continue
            if item[0] != "chunk":
                done += item[0] == "done"
                continue
            sequences, receipts = array.array("q"), array.array("q")
            sequences.frombytes(item[2])
            receipts.frombytes(item[3])
            received += len(sequences)
            for sequence, receipt_ns, latency_ns in zip(sequences, receipts, item[4], strict=True):
                seen = first_receipt.get(sequence)
                if seen is None or receipt_ns < seen[0]:
                    first_receipt[sequence] = (receipt_ns, latency_ns)
    finally:
        stop.set()
        while done < consumers and time.monotonic() < deadline + 15:
            try:
                done += out.get(timeout=1.0)[0] == "done"
            except queue.Empty:
                if not any(worker.is_alive() for worker in workers):
                    break
        for process in [*workers, producer]:
            if process is not None:
                process.join(15)
                if process.is_alive():
                    process.kill()
    if len(first_receipt) < count:
        return Result(f"{name}:{consumers}-consumer", extra={"distinct": len(first_receipt)})
    latencies = [latency for _, latency in first_receipt.values()]
    first_send_ns = min(receipt - latency for receipt, latency in first_receipt.values())
    last_ns = max(receipt for receipt, _ in first_receipt.values())
    elapsed_s = (last_ns - first_send_ns) / 1e9
    return Result(
        f"{name}:{consumers}-consumer",
        msgs_per_s=count / elapsed_s,
        MB_per_s=count * BODY_LENGTH / elapsed_s / 1e6,
        extra={"received": received, "duplicates": received - count},
        **latency_summary(latencies),
    )


def _run_aeromq(root: Path, count: int) -> Iterator[Result]:
    from aeromq.client.grpc_client import GrpcClient

    broker = _start_broker(root)
    try:
        admin = GrpcClient(broker.grpc_address)
        for consumers in CONSUMER_COUNTS:
            topic, group = f"BenchConsumer{consumers}", f"bench-consumer-{consumers}"
            admin.create_topic(topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
            yield _case(
                "aeromq",
                count,
                consumers,
                lambda i, stop, out, t=topic, g=group: _spawn(
                    _aeromq_consume, broker.grpc_address, t, g, i, stop, out
                ),
                lambda out, t=topic: _spawn(_produce, broker.grpc_address, t, count, out),
            )
        admin.close()
    finally:
        broker.stop()


def _run_redis(root: Path, count: int) -> Iterator[Result]:
    server = _Redis(root)
    try:
        for consumers in CONSUMER_COUNTS:
            stream = f"consumer{consumers}"
            server.client.xgroup_create(stream, "g", id="0", mkstream=True)
            yield _case(
                "baseline:redis-streams",
                count,
                consumers,
                lambda i, stop, out, s=stream: _spawn(_redis_consume, server.port, s, i, stop, out),
                lambda out, s=stream: _spawn(_redis_produce, server.port, s, count, out),
            )
    finally:
        server.close()


def run(quick: bool) -> Iterator[Result | Target]:
    count = 20_000 if quick else 200_000
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-consumer-"))
    rows: dict[str, Result] = {}
    try:
        for row in _run_aeromq(root, count):
            rows[row.name] = row
            yield row
        missing = _redis_missing()
        if missing is not None:
            yield Result(f"baseline:redis-streams skipped: {missing}")
            return
        for row in _run_redis(root, count):
            rows[row.name] = row
            yield row
        for consumers in CONSUMER_COUNTS:
            mine = rows.get(f"aeromq:{consumers}-consumer")
            base = rows.get(f"baseline:redis-streams:{consumers}-consumer")
            if mine and base and mine.msgs_per_s and base.msgs_per_s:
                plural = "consumer" if consumers == 1 else "consumers"
                yield Target(
                    f"consumer end to end / redis streams ({consumers} {plural})",
                    mine.msgs_per_s / base.msgs_per_s,
                    2.0,
                    "x",
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
