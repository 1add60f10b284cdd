"""The lite pull consumer end to end: msgs/s and send -> ``poll`` latency of 100 B messages
with one and with three consumers of one group, beside Redis Streams consumer groups.

aeromq: the broker process of ``bench.suites.broker`` (embedded media driver, ASYNC flush),
a topic of 4 queues per case, one producer process (``producer.Producer``, batches of 32
pipelined 8 deep) and 1 or 3 ``DefaultLitePullConsumer`` processes of one group (subscribe,
FIRST_OFFSET, ``pull_batch_size`` 256, as Redis's ``COUNT``), started and rebalanced before the
producer starts.

Redis: the ``redis-server`` of ``bench._redis``, its pipelined ``XADD`` producer
(``bench._redis_workers``), and 1 or 3 consumers of one group reading with ``XREADGROUP COUNT
256 BLOCK`` and ``XACK``ing.

NATS JetStream: the ``nats-server`` of ``bench._nats`` (file storage), its pipelined
``js.publish_async`` producer, and 1 or 3 processes of one durable pull consumer fetching what
is pending (up to 256; one message held when none is) and acking each (``bench._nats_workers``);
skipped with one line without ``nats-server`` or nats-py.

Each consumer streams (sequence, receipt ns, latency ns) triples to this process in chunks;
a case ends when the union of distinct sequences reaches the count. Rate: count over first
send (the smallest stamp) to the last first receipt; latency: stamp in the body to the first
receipt (one host, one monotonic clock). CPU per message: the consumer processes' from their
first receipt, and the server's from the producer's start (so it includes the produce path).
Targets (issues 8 and 12): >= 2x Redis Streams end to end; CPU per message on both sides no more
than Redis's.

Drain: a topic filled with the same messages first (batches of 32, and again of 256), then one
process reads them all: aeromq with ``poll_batch()`` into a ``pyarrow.RecordBatch`` (1,024
messages per pull), Redis with ``XREADGROUP COUNT 1024`` into lists of bodies. Target (issue
12): >= 1,000,000 msgs/s.
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
from typing import TYPE_CHECKING, Any

import numpy as np

from aeromq.transport.util import process_cpu_s
from bench import _nats_workers
from bench._baselines import baseline_rows
from bench._harness import Result, Target, case_rows, figure, latency_summary, ratio_of, started
from bench._nats import NatsServer, nats_missing
from bench._redis import RedisServer, redis_missing
from bench._redis_workers import produce as _redis_produce
from bench.suites.broker import (
    _STAMP,
    BATCH,
    BODY_LENGTH,
    QUEUES,
    WINDOW,
    _produce,
    _spawn,
    _start_broker,
)

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess
    from multiprocessing.synchronize import Event

    import numpy.typing as npt

    from bench.suites.broker import Outbox, Report

CONSUMER_COUNTS = (1, 3)
DRAIN_PULL_BATCH = 1024  # messages per pull (aeromq) and per XREADGROUP (Redis) when draining
DRAIN_POLL_RECORDS = 8192
_CHUNK_NS = 50_000_000  # a consumer reports what it got at most every 50 ms
_SETTLE_S = 2.0  # after every consumer is up: time for the group's rebalance
_CASE_TIMEOUT_S = 180.0
_DRAINS = {"aeromq:poll_batch:drain": BATCH, "aeromq:poll_batch:256:drain": 256}
"""The aeromq drain cases: the topic filled in batches of 32, and of 256."""


# -- consumer workers (spawned processes) -------------------------------------------------------


def _consume_loop(
    index: int,
    fetch: Callable[[], list[bytes]],
    stop: Event,
    out: Outbox,
    close: Callable[[], None],
) -> None:
    """Fetch bodies until ``stop`` is set, sending ("chunk", sequences, receipts, latencies),
    then ("done", index, CPU seconds this process spent from its first receipt)."""
    unpack = _STAMP.unpack_from
    sequences, receipts, latencies = array.array("q"), array.array("q"), array.array("q")
    flushed_ns = time.monotonic_ns()
    deadline = time.monotonic() + _CASE_TIMEOUT_S
    cpu_start = -1.0
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            bodies = fetch()
            now_ns = time.monotonic_ns()
            if cpu_start < 0 and bodies:
                cpu_start = time.process_time()
            for body in bodies:
                stamp, sequence = unpack(body, 0)[0], unpack(body, 8)[0]
                if sequence >= 0:  # -1: the producer's warm-up message
                    sequences.append(sequence)
                    receipts.append(now_ns)
                    latencies.append(now_ns - stamp)
            if sequences and now_ns - flushed_ns >= _CHUNK_NS:
                out.put(
                    ("chunk", index, sequences.tobytes(), receipts.tobytes(), latencies.tobytes())
                )
                sequences, receipts, latencies = (
                    array.array("q"),
                    array.array("q"),
                    array.array("q"),
                )
                flushed_ns = now_ns
        if sequences:
            out.put(("chunk", index, sequences.tobytes(), receipts.tobytes(), latencies.tobytes()))
    finally:
        cpu_s = time.process_time() - cpu_start if cpu_start >= 0 else 0.0
        close()
        out.put(("done", index, cpu_s))


def _aeromq_consume(
    grpc: str, topic: str, group: str, index: int, stop: Event, out: Outbox
) -> None:
    from aeromq import consumer

    config = consumer.LitePullConsumerConfig(
        consumer_group=group,
        endpoints=(grpc,),
        consume_from_where=consumer.ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=200,
        pull_batch_size=BATCH * WINDOW,  # as Redis's XREADGROUP COUNT
    )
    lite = consumer.DefaultLitePullConsumer(config=config)
    lite.subscribe(topic, "*")
    lite.start()
    out.put(("ready", index))
    poll = lite.poll

    def fetch() -> list[bytes]:
        return [message.body for message in poll()]

    _consume_loop(index, fetch, stop, out, lite.shutdown)


def _aeromq_drain(grpc: str, topic: str, group: str, count: int, out: Outbox) -> None:
    """Read ``count`` stored messages with ``poll_batch()`` into Arrow (numpy columns when
    pyarrow is missing): ("drained", elapsed ns, received, CPU seconds, columns kind)."""
    from aeromq import consumer

    try:
        import pyarrow  # noqa: F401

        kind = "arrow"
    except ImportError:
        kind = "numpy"
    config = consumer.LitePullConsumerConfig(
        consumer_group=group,
        endpoints=(grpc,),
        consume_from_where=consumer.ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=200,
        pull_batch_size=DRAIN_PULL_BATCH,
        pull_threshold_for_queue=8 * DRAIN_PULL_BATCH,
        pull_threshold_for_all=64 * DRAIN_PULL_BATCH,
        # the span bound scaled with the count bound (RocketMQ's 2,000 is two of these pulls:
        # left at that, the queues sat out 50 ms flow-control delays 17-21 times a drain)
        consume_max_span=8 * DRAIN_PULL_BATCH,
    )
    lite = consumer.DefaultLitePullConsumer(config=config)
    lite.subscribe(topic, "*")
    lite.start()
    out.put(("ready", 0))
    received = 0
    began = last = 0
    cpu = 0.0
    deadline = time.monotonic() + _CASE_TIMEOUT_S
    try:
        while received < count and time.monotonic() < deadline:
            batch = lite.poll_batch(max_records=DRAIN_POLL_RECORDS)
            if not len(batch):
                continue
            if not began:
                began = time.monotonic_ns()
                cpu = time.process_time()
            if kind == "arrow":
                received += batch.to_arrow().num_rows
            else:  # the columns a pipeline reads: offsets, bodies (Arrow layout), timestamps
                columns = (batch.queue_offsets, batch.store_timestamps_ms, *batch.bodies())
                received += len(columns[0])
            last = time.monotonic_ns()
        cpu = time.process_time() - cpu
    finally:
        lite.shutdown()
    out.put(("drained", last - began, received, cpu, kind))


def _redis_drain(port: int, stream: str, count: int, out: Outbox) -> None:
    """Read ``count`` stored entries with ``XREADGROUP COUNT`` into lists of bodies."""
    import redis

    client: Any = redis.Redis(port=port)  # redis-py types replies as unions of every shape
    out.put(("ready", 0))
    received = 0
    began = last = 0
    cpu = 0.0
    deadline = time.monotonic() + _CASE_TIMEOUT_S
    while received < count and time.monotonic() < deadline:
        answer = client.xreadgroup("g", "drain", {stream: ">"}, count=DRAIN_PULL_BATCH, block=200)
        if not answer:
            continue
        if not began:
            began = time.monotonic_ns()
            cpu = time.process_time()
        entries = answer[0][1]
        bodies = [fields[b"b"] for _, fields in entries]
        client.xack(stream, "g", *[entry_id for entry_id, _ in entries])
        received += len(bodies)
        last = time.monotonic_ns()
    out.put(("drained", last - began, received, time.process_time() - cpu, "lists"))


def _drain_case(
    name: str,
    count: int,
    produce: Callable[[Outbox], BaseProcess],
    drain: Callable[[Outbox], BaseProcess],
) -> Result:
    """Fill a topic with ``count`` messages, then one process reads them all."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    producer = produce(out)
    try:
        item = out.get(timeout=_CASE_TIMEOUT_S)
        if item[0] == "requests":  # aeromq's producer counts its requests first
            item = out.get(timeout=_CASE_TIMEOUT_S)
        assert item[0] == "produced", item
    finally:
        producer.join(30)
    reader = drain(out)
    try:
        got: dict[str, Report] = {}
        deadline = time.monotonic() + _CASE_TIMEOUT_S
        while "drained" not in got and time.monotonic() < deadline:
            item = out.get(timeout=max(0.1, deadline - time.monotonic()))
            got[item[0]] = item
    finally:
        reader.join(30)
        if reader.is_alive():
            reader.kill()
    _, elapsed_ns, received, cpu_s, kind = got["drained"]
    if received < count or elapsed_ns <= 0:
        raise RuntimeError(f"drained {received} of {count} messages")
    return Result(
        f"{name}:drain",
        msgs_per_s=received / (elapsed_ns / 1e9),
        MB_per_s=received * BODY_LENGTH / (elapsed_ns / 1e9) / 1e6,
        extra={
            "received": received,
            "into": kind,
            "client_cpu_us_per_msg": round(cpu_s * 1e6 / received, 3),
        },
    )


def _redis_consume(port: int, stream: str, index: int, stop: Event, out: Outbox) -> None:
    import redis

    client: Any = redis.Redis(port=port)  # redis-py types replies as unions of every shape
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
    name: str,
    count: int,
    consumers: int,
    start_consumer: Callable[[int, Event, Outbox], BaseProcess],
    start_producer: Callable[[Outbox], BaseProcess],
    server_pid: int,
) -> Result:
    """Start ``consumers`` consumers, then the producer; gather until ``count`` distinct.
    CPU per message: the consumer processes' (from each one's first receipt) and the
    server's (from the producer's start; it includes the produce path)."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    stop = context.Event()
    workers = [start_consumer(index, stop, out) for index in range(consumers)]
    # what the consumers reported, kept as it came: this process, which shares the machine's
    # cores with the processes measured, does one numpy step per chunk while they run (not a
    # Python step per message, which took CPU from them in proportion to their rate)
    # (sequences, receipt ns, latency ns)
    chunks: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], bytes]] = []
    seen = np.zeros(count, dtype=bool)
    distinct = 0
    received = 0
    done = 0
    client_cpu_s = 0.0
    server_cpu_s = 0.0
    producer = None
    deadline = time.monotonic() + _CASE_TIMEOUT_S
    try:
        ready = 0
        while ready < consumers:
            item = out.get(timeout=max(0.1, deadline - time.monotonic()))
            ready += item[0] == "ready"
        time.sleep(_SETTLE_S)
        server_cpu_s = process_cpu_s(server_pid)
        producer = start_producer(out)
        while distinct < count and time.monotonic() < deadline:
            try:
                item = out.get(timeout=1.0)
            except queue.Empty:
                continue
            if item[0] != "chunk":
                if item[0] == "done":
                    done += 1
                    client_cpu_s += item[2]
                continue
            sequences = np.frombuffer(item[2], dtype=np.int64)
            chunks.append((sequences, np.frombuffer(item[3], dtype=np.int64), item[4]))
            received += len(sequences)
            seen[sequences[sequences < count]] = True
            distinct = int(np.count_nonzero(seen))
        server_cpu_s = process_cpu_s(server_pid) - server_cpu_s
    finally:
        stop.set()
        while done < consumers and time.monotonic() < deadline + 15:
            try:
                item = out.get(timeout=1.0)
            except queue.Empty:
                if not any(worker.is_alive() for worker in workers):
                    break
                continue
            if item[0] == "done":
                done += 1
                client_cpu_s += item[2]
        for process in [*workers, producer]:
            if process is not None:
                process.join(15)
                if process.is_alive():
                    process.kill()
    if distinct < count:
        raise RuntimeError(f"{distinct} of {count} distinct messages arrived")
    sequences = np.concatenate([c[0] for c in chunks])
    receipts = np.concatenate([c[1] for c in chunks])
    latencies = np.concatenate([np.frombuffer(c[2], dtype=np.int64) for c in chunks])
    # each message's first receipt: by sequence, then by receipt time, the first of each run
    order = np.lexsort((receipts, sequences))
    sequences, receipts, latencies = sequences[order], receipts[order], latencies[order]
    first = np.flatnonzero(np.diff(sequences, prepend=-1) != 0)
    receipts, latencies = receipts[first], latencies[first]
    first_send_ns = int((receipts - latencies).min())
    last_ns = int(receipts.max())
    elapsed_s = (last_ns - first_send_ns) / 1e9
    return Result(
        f"{name}:{consumers}-consumer",
        msgs_per_s=count / elapsed_s,
        MB_per_s=count * BODY_LENGTH / elapsed_s / 1e6,
        extra={
            "received": received,
            "duplicates": received - count,
            "client_cpu_us_per_msg": round(client_cpu_s * 1e6 / count, 2),
            "server_cpu_us_per_msg": round(server_cpu_s * 1e6 / count, 2),
        },
        **latency_summary(latencies.tolist()),
    )


def _run_aeromq(root: Path, count: int, limit_s: float) -> Iterator[Result]:
    """The aeromq cases, each bounded in time: one that fails is reported and the next runs."""
    from aeromq.client.grpc_client import GrpcClient

    cases = [f"aeromq:{n}-consumer" for n in CONSUMER_COUNTS] + list(_DRAINS)
    broker, failed = started("broker start", _start_broker, root, cases=cases, timeout_s=limit_s)
    if broker is None:
        yield from failed
        return
    admin = GrpcClient(broker.grpc_address)

    def topic_then(topic: str, case: Callable[..., Result], *args: object) -> Result:
        admin.create_topic(topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        return case(*args)

    try:
        for consumers in CONSUMER_COUNTS:
            topic, group = f"BenchConsumer{consumers}", f"bench-consumer-{consumers}"
            yield from case_rows(
                f"aeromq:{consumers}-consumer",
                topic_then,
                topic,
                _case,
                "aeromq",
                count,
                consumers,
                lambda i, stop, out, t=topic, g=group: _spawn(
                    _aeromq_consume, broker.grpc_address, t, g, i, stop, out
                ),
                lambda out, t=topic: _spawn(_produce, broker.grpc_address, t, count, out),
                broker.pid,
                timeout_s=limit_s,
            )
        for name, batch_size in _DRAINS.items():
            topic = f"BenchDrain{batch_size}"
            yield from case_rows(
                name,
                topic_then,
                topic,
                _drain_case,
                name.removesuffix(":drain"),
                count,
                lambda out, t=topic, b=batch_size: _spawn(
                    _produce, broker.grpc_address, t, count, out, b
                ),
                lambda out, t=topic: _spawn(
                    _aeromq_drain, broker.grpc_address, t, f"drain-{t}", count, out
                ),
                timeout_s=limit_s,
            )
    finally:
        admin.close()
        broker.stop()


def _run_redis(root: Path, count: int, limit_s: float) -> Iterator[Result]:
    """The Redis cases, each bounded in time, as :func:`_run_aeromq`'s."""
    names = [f"baseline:redis-streams:{n}-consumer" for n in CONSUMER_COUNTS]
    cases = [*names, "baseline:redis-streams:drain"]
    server, failed = started(
        "redis-server start", RedisServer, root, cases=cases, timeout_s=limit_s
    )
    if server is None:
        yield from failed
        return

    def group_then(stream: str, case: Callable[..., Result], *args: object) -> Result:
        server.client.xgroup_create(stream, "g", id="0", mkstream=True)
        return case(*args)

    try:
        for consumers, name in zip(CONSUMER_COUNTS, names, strict=True):
            stream = f"consumer{consumers}"
            yield from case_rows(
                name,
                group_then,
                stream,
                _case,
                "baseline:redis-streams",
                count,
                consumers,
                lambda i, stop, out, s=stream: _spawn(_redis_consume, server.port, s, i, stop, out),
                lambda out, s=stream: _spawn(_redis_produce, server.port, s, count, out),
                server.process.pid,
                timeout_s=limit_s,
            )
        yield from case_rows(
            "baseline:redis-streams:drain",
            group_then,
            "drain",
            _drain_case,
            "baseline:redis-streams",
            count,
            lambda out: _spawn(_redis_produce, server.port, "drain", count, out),
            lambda out: _spawn(_redis_drain, server.port, "drain", count, out),
            timeout_s=limit_s,
        )
    finally:
        server.close()


def _run_nats(root: Path, count: int, limit_s: float) -> Iterator[Result]:
    """The NATS JetStream cases, each bounded in time, as :func:`_run_aeromq`'s."""
    names = [f"baseline:nats-jetstream:{n}-consumer" for n in CONSUMER_COUNTS]
    server, failed = started("nats-server start", NatsServer, root, cases=names, timeout_s=limit_s)
    if server is None:
        yield from failed
        return
    url = server.url

    def stream_then(stream: str, case: Callable[..., Result], *args: object) -> Result:
        server.add_streams(stream, durable=_nats_workers.DURABLE)
        return case(*args)

    try:
        for consumers, name in zip(CONSUMER_COUNTS, names, strict=True):
            stream = f"consumer{consumers}"
            yield from case_rows(
                name,
                stream_then,
                stream,
                _case,
                "baseline:nats-jetstream",
                count,
                consumers,
                lambda i, stop, out, s=stream: _spawn(
                    _nats_workers.group_consume, url, s, i, stop, out
                ),
                lambda out, s=stream: _spawn(_nats_workers.produce, url, s, count, out),
                server.pid,
                timeout_s=limit_s,
            )
    finally:
        server.close()


def _targets(rows: dict[str, Result]) -> Iterator[Target]:
    """The end-to-end ratios and CPU per message, from rows of this run (not measured when
    one failed)."""
    for consumers in CONSUMER_COUNTS:
        mine, base = f"aeromq:{consumers}-consumer", f"baseline:redis-streams:{consumers}-consumer"
        plural = "consumer" if consumers == 1 else "consumers"
        yield Target(
            f"consumer end to end / redis streams ({consumers} {plural})",
            ratio_of(figure(rows, mine), figure(rows, base)),
            2.0,
            "x",
        )
        for side, their in (("server", "redis-server"), ("client", "redis-py")):
            key = f"{side}_cpu_us_per_msg"
            yield Target(
                f"{their} / aeromq {side} CPU per message ({consumers} {plural})",
                ratio_of(figure(rows, base, key), figure(rows, mine, key)),
                1.0,
                "x",
            )


def run(quick: bool) -> Iterator[Result | Target]:
    count = 20_000 if quick else 200_000
    limit_s = 60.0 if quick else 300.0
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-consumer-"))
    rows: dict[str, Result] = {}
    try:
        for row in _run_aeromq(root, count, limit_s):
            rows[row.name] = row
            yield row
        for name, label in (
            ("aeromq:poll_batch:drain", "batches of 32"),
            ("aeromq:poll_batch:256:drain", "batches of 256"),
        ):
            yield Target(
                f"poll_batch() into Arrow, one consumer process, {label}",
                figure(rows, name),
                1e6,
                "msgs/s",
            )
        missing = redis_missing()
        for row in baseline_rows(
            ("redis-streams", missing, lambda: _run_redis(root, count, limit_s)),
            ("nats-jetstream", nats_missing(), lambda: _run_nats(root, count, limit_s)),
        ):
            rows[row.name] = row
            yield row
        if missing is None:
            yield from _targets(rows)
    finally:
        shutil.rmtree(root, ignore_errors=True)
