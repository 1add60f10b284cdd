"""The Spark connector: rows/s of a batch read through the ``aeromq`` PySpark data source, beside
the ceiling of Spark's Python data source path on this machine, and a streaming read against a
producer at 100,000 msgs/s.

aeromq: the broker process of ``bench.suites.broker`` (embedded media driver, ASYNC flush, 4
queues); one producer process (``bench.suites.broker._produce``: batches of 32, 8 in flight)
fills a topic with 1,000,000 messages of 100 B (50,000 with ``--quick``) before any read. One
SparkSession ``local[2]`` (``aeromq.pipeline.spark_session``). Each batch case reads the whole
topic (one Spark partition per queue, coalesced to 1, 2 or 4 tasks) and sums the body lengths,
so every row is materialised; the clock runs around that one action, after one untimed full
read of each source (the Python workers started, the sessions open, the JVM's code compiled
for both). The aeromq reads use local reads (the broker's files read in place,
``pipeline/_local_reads.py``): the reader shares the broker's host. Each aeromq case runs right
before the baseline case of the same partitions. The 4-partition pair (the target's) runs
:data:`ROUNDS` times (once with ``--quick``), alternating, with a third case after each
baseline, ``aeromq:batch-read:4-partition-transport``: the same read with ``localReads`` off
(every batch through the transport, as a reader on another host reads); each of the three
reports its median run (every run's rate in ``runs_rows_per_s``): single
runs of either source here varied by 10-20% within a session, and whichever ran later had the
warmer JVM (Spark's JVM compiles some 500 methods anew for each query, about 0.8 s of CPU, for
either source). Each case also reports ``cpu_us_per_row``: the CPU time of Spark's JVM (with its
Python workers) and of the broker during the action, per row. It depends less on what else runs
on the machine than rows/s does (idle polling threads still add CPU in proportion to the wall
time); on a quiet machine rows/s is about cores / CPU per row.

The same read on a Spark standalone cluster (two workers of one core, each on a test host of its
own, so every batch goes over the transport; ``bench/_spark_cluster_read.py``: launched first,
it registers while the topic fills and idles through the local cases), after the local cases:
``aeromq:batch-read:cluster`` (one run; skipped, with the reason, where network namespaces
cannot be made).

Baseline ``baseline:arrow-memory``: a Python data source with the same schema whose partitions
yield one pre-built ``pyarrow.RecordBatch`` of 8,192 rows over and over, the same row count in
the same partitions: what Spark's Python data source path can carry here at best. (A variant
that yielded distinct pre-built batches of every row, 40 MB a partition rather than one batch
held in the cache, measured the same here: a median of 1.96M rows/s against 1.95M, 4 runs.)

Streaming: a query (``processingTime`` 1 s, ``noop`` sink, the ``group`` option) reads a fresh
topic while two producer processes send at up to 50,000 msgs/s each (batches of 64, 8 in
flight) for 20 s (5 s with ``--quick``: the bound below is two seconds of production, so a run of
two seconds, as ``--quick`` was, met it whatever the query read);
the row reports the producer's achieved rate, the lag (messages not yet committed to the group
by the query; sampled every 0.25 s) at its largest and its median over the second half of
production (``max_lag``, ``median_lag``) and when production ends (``lag_at_end``), and how long
the query took to catch up.

What "keeps up" means here: Spark commits a micro-batch's offsets (``commit``, which sets the
group's, see ``pipeline/_readers.py``) only when it plans the next batch. So even a query whose
batches took no time shows a group lag of one to two trigger intervals of production: one
interval right after a plan (the batch just planned), two right before the next (that batch,
done but not yet committed, plus what arrived since). A query that keeps up (each batch done
within its interval) stays within two intervals of production; one that falls behind
(batches longer than the interval) stretches the intervals and its lag grows past that and on
through the run. The bound is therefore two trigger intervals of production, taken at the
largest lag seen over the second half of production: stricter than one sample at the end in
that it must hold throughout, and one a query falling behind cannot meet for 10 s. (The earlier
bound, one interval of production at the end of production, failed even a query with
zero-time batches at all but the instant after a plan.)

Writes (``bench/_spark_writes.py``, issue 36), after the stream: ``df.write`` through aeromq's
Arrow sink beside a Row writer and an Arrow writer that only count, 1,000,000 rows of 100 B
(200,000 with ``--quick``), 3 alternating rounds (1 with ``--quick``), medians; target aeromq
>= 0.5x the Arrow writer ceiling.

Targets (issue 13): batch read >= 300,000 rows/s; aeromq >= 0.7x the baseline (4 partitions);
stream lag at most two trigger intervals of production (200,000 messages) throughout the second
half of production.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bench._harness import Result, Target, attempt, case_rows, figure, ratio_of
from bench._spark_cluster_read import CLUSTER_CASE, bench_cluster, cluster_case, start_bench_broker
from bench._spark_measures import median_run, rate_row, tree_cpu_s
from bench._spark_writes import write_cases, write_targets
from bench.suites.broker import BODY_LENGTH, QUEUES, _body, _collect, _spawn, _start_broker

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from aeromq.producer import SendResult
    from bench.suites.broker import Outbox, Report

PARTITIONS = (1, 2, 4)
ROUNDS = 5
"""How many times the 4-partition cases run (module)."""
STREAM_RATE = 100_000
STREAM_TRIGGER_S = 1
STREAM_LAG_BOUND = int(2 * STREAM_TRIGGER_S * STREAM_RATE)
"""Two trigger intervals of production: the most group lag of a query that keeps up (module)."""
_LAG_SAMPLE_S = 0.25
STREAM_PRODUCERS = 2  # one producer process reached about 71,000 msgs/s here
STREAM_BATCH = 64
_BASELINE_BATCH_ROWS = 8192
_CATCH_UP_TIMEOUT_S = 120.0
_STREAM_CASE = "aeromq:stream-read:100k-msgs-per-s"


def _produce_paced(grpc: str, topic: str, rate: int, seconds: float, out: Outbox) -> None:
    """Send at up to ``rate`` msgs/s for ``seconds``: batches of ``STREAM_BATCH``, 8 in
    flight."""
    from aeromq.client import Message
    from aeromq.producer import Producer

    sent = 0
    with Producer("bench-spark-producer", grpc) as producer:
        producer.send(Message(topic, _body(-1)))
        window: list[Future[Sequence[SendResult]]] = []
        began = time.monotonic()
        while (elapsed := time.monotonic() - began) < seconds:
            if sent > rate * elapsed:
                time.sleep(0.001)
                continue
            window.append(
                producer.send_batch_async(
                    [Message(topic, _body(sent + i)) for i in range(STREAM_BATCH)]
                )
            )
            sent += STREAM_BATCH
            if len(window) >= 8:
                window.pop(0).result(30)
        for future in window:
            future.result(30)
        elapsed = time.monotonic() - began
    out.put(("produced", sent + 1, elapsed))


def _memory_source() -> type:
    """The baseline data source (defined here so Spark pickles it by reference)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from aeromq.pipeline import spark_ddl

    class _Reader(DataSourceReader):
        def __init__(self, options: dict[str, str]) -> None:
            self.rows = int(options["rows"])
            self.partitions_count = int(options["partitions"])

        def partitions(self) -> list[InputPartition]:
            share, extra = divmod(self.rows, self.partitions_count)
            return [
                InputPartition(share + (1 if i < extra else 0))
                for i in range(self.partitions_count)
            ]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            return _baseline_batches(int(partition.value))

    class ArrowMemorySource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "aeromq_bench_arrow_memory"

        def schema(self) -> str:
            return spark_ddl()

        def reader(self, schema: StructType) -> DataSourceReader:
            return _Reader(dict(self.options))

    return ArrowMemorySource


def _baseline_batches(rows: int) -> Iterator[pa.RecordBatch]:
    import numpy as np
    import pyarrow as pa

    from aeromq.pipeline import arrow_schema

    n = _BASELINE_BATCH_ROWS
    now_us = np.full(n, int(time.time() * 1e6), np.int64)
    stamp = pa.timestamp("us", tz="UTC")
    template = pa.RecordBatch.from_arrays(
        [
            pa.array(["BenchSpark"] * n),
            pa.array(["broker-a"] * n),
            pa.array(np.zeros(n, np.int32)),
            pa.array(np.arange(n, dtype=np.int64)),
            pa.array([None] * n, pa.string()),
            pa.array([None] * n, pa.string()),
            pa.array([b"." * BODY_LENGTH] * n, pa.binary()),
            pa.array(now_us, stamp),
            pa.array(now_us, stamp),
        ],
        schema=arrow_schema(),
    )
    while rows > 0:
        yield template if rows >= n else template.slice(0, rows)
        rows -= n


def _timed_sum(df: DataFrame, pids: tuple[int, ...]) -> tuple[int, float, float]:
    """(rows, seconds, CPU seconds of ``pids``' process trees) of one action that
    materialises every body."""
    from pyspark.sql import functions as f

    cpu = sum(tree_cpu_s(pid) for pid in pids)
    began = time.monotonic()
    row = df.agg(f.count("*").alias("rows"), f.sum(f.length("body")).alias("bytes")).collect()[0]
    seconds = time.monotonic() - began
    return int(row["rows"]), seconds, sum(tree_cpu_s(pid) for pid in pids) - cpu


def _timed_load(load: Callable[[], DataFrame], pids: tuple[int, ...]) -> tuple[int, float, float]:
    """:func:`_timed_sum` of ``load()`` (a warm-up read)."""
    return _timed_sum(load(), pids)


def _read_row(
    name: str, load: Callable[[], DataFrame], count: int, partitions: int, pids: tuple[int, ...]
) -> Result:
    """One batch read case: all ``count`` rows of ``load()``, timed."""
    rows, seconds, cpu_s = _timed_sum(load(), pids)
    if rows != count:
        raise RuntimeError(f"read {rows} of {count} rows")
    return rate_row(name, rows, seconds, cpu_s, partitions)


def _cancel(spark: SparkSession) -> Callable[[], None]:
    """What stops a case's work in Spark's JVM when it overruns: its jobs and queries."""

    def cancel() -> None:
        for query in spark.streams.active:
            query.stop()
        spark.sparkContext.cancelAllJobs()

    return cancel


def _batch_cases(
    spark: SparkSession,
    grpc: str,
    topic: str,
    count: int,
    broker_pid: int,
    limit_s: float,
    rounds: int,
) -> Iterator[Result]:
    """The batch reads, each beside the baseline of as many partitions (the 4-partition cases,
    with the read through the transport, ``rounds`` times, alternating), each run a case
    bounded in time; CPU per row: Spark's JVM
    with its Python workers, and the broker (what shares the machine's cores during a read: on
    a quiet machine, rows/s is about cores / CPU per row)."""
    gateway = spark.sparkContext._gateway  # py4j's, untyped: its proc is the JVM's process
    assert gateway is not None, "a running session has its gateway to the JVM"
    pids = (gateway.proc.pid, broker_pid)
    cancel = _cancel(spark)

    def aeromq(**options: str) -> DataFrame:  # a reader of its own: options() changes a reader
        return (
            spark.read.format("aeromq")
            .option("endpoints", grpc)
            .option("topic", topic)
            .options(**options)
            .load()
        )

    spark.dataSource.register(_memory_source())

    def baseline(partitions: int) -> DataFrame:
        return (
            spark.read.format("aeromq_bench_arrow_memory")
            .option("rows", str(count))
            .option("partitions", str(partitions))
            .load()
        )

    for what, load in (  # Python workers, imports, sessions, and the JVM's compiled code
        ("spark warm-up read", lambda: aeromq()),
        ("spark warm-up baseline read", lambda: baseline(PARTITIONS[-1])),
    ):
        attempt(
            [],
            what,
            _timed_load,
            load,
            pids,
            timeout_s=limit_s,
            on_stop=cancel,
        )

    for p in PARTITIONS:
        pair = {
            f"aeromq:batch-read:{p}-partition": lambda p=p: aeromq().coalesce(p),
            f"baseline:arrow-memory:{p}-partition": lambda p=p: baseline(p),
        }
        if p == PARTITIONS[-1]:  # the same read through the transport (no local reads)
            pair[f"aeromq:batch-read:{p}-partition-transport"] = lambda p=p: aeromq(
                localReads="false"
            ).coalesce(p)
        runs: dict[str, list[Result]] = {name: [] for name in pair}
        for _ in range(rounds if p == PARTITIONS[-1] else 1):
            for name, load in pair.items():
                runs[name] += case_rows(
                    name,
                    _read_row,
                    name,
                    load,
                    count,
                    p,
                    pids,
                    timeout_s=limit_s,
                    on_stop=cancel,
                )
        for name in pair:
            yield median_run(runs[name])


def _stream_case(spark: SparkSession, grpc: str, root: Path, seconds: float) -> Result:
    import multiprocessing

    from aeromq.client import GrpcClient

    topic, group = "BenchSparkStream", "bench-spark-stream"
    admin = GrpcClient(grpc, timeout_s=30)
    admin.create_topic(topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    query = (
        spark.readStream.format("aeromq")
        .option("endpoints", grpc)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("group", group)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(root / "stream-checkpoint"))
        .trigger(processingTime=f"{STREAM_TRIGGER_S} seconds")
        .start()
    )

    def lag() -> int:
        ends = [admin.max_offset(topic, q) for q in range(QUEUES)]
        done = [max(0, admin.query_offset(group, topic, q)) for q in range(QUEUES)]
        return sum(ends) - sum(done)

    try:
        out = multiprocessing.get_context("spawn").Queue()
        share = STREAM_RATE // STREAM_PRODUCERS
        producers = [
            _spawn(_produce_paced, grpc, topic, share, seconds, out)
            for _ in range(STREAM_PRODUCERS)
        ]
        began = time.monotonic()
        lags: list[int] = []  # over the second half of production
        produced: list[Report] = []
        while len(produced) < len(producers) and time.monotonic() - began < seconds + 120:
            with contextlib.suppress(queue.Empty):
                produced.append(out.get(timeout=_LAG_SAMPLE_S))
            if not produced and time.monotonic() - began >= seconds / 2:
                lags.append(lag())
        for producer in producers:
            producer.join(30)
        if len(produced) < len(producers):
            raise TimeoutError(f"the producers did not finish: finished={len(produced)}")
        lag_at_end = lag()
        lags.append(lag_at_end)
        ended = time.monotonic()
        while (remaining := lag()) > 0 and time.monotonic() - ended < _CATCH_UP_TIMEOUT_S:
            time.sleep(0.2)
        catch_up_s = time.monotonic() - ended
    finally:
        query.stop()
        admin.close()
    sent = sum(item[1] for item in produced)
    elapsed = max(item[2] for item in produced)
    return Result(
        _STREAM_CASE,
        msgs_per_s=sent / elapsed,
        extra={"produced": sent, "max_lag": max(lags), "median_lag": statistics.median(lags),
               "lag_samples": len(lags),
               "lag_at_end": lag_at_end, "catch_up_s": round(catch_up_s, 2),
               "lag_after_catch_up": remaining},
    )  # fmt: skip


def run(quick: bool) -> Iterator[Result | Target]:
    from aeromq.pipeline import spark_session

    count = 50_000 if quick else 1_000_000
    limit_s = 60.0 if quick else 300.0
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-spark-"))
    cluster_scope = contextlib.ExitStack()
    try:  # the cluster launched first: it registers while the topic fills
        cluster = cluster_scope.enter_context(bench_cluster(root))
        broker = start_bench_broker(root, cluster, _start_broker)
    except BaseException:
        cluster_scope.close()
        raise
    spark = None
    try:
        import multiprocessing

        from aeromq.client import GrpcClient
        from bench.suites.broker import _produce

        topic = "BenchSpark"
        with GrpcClient(broker.grpc_address, timeout_s=30) as admin:
            admin.create_topic(topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        out = multiprocessing.get_context("spawn").Queue()
        producer = _spawn(_produce, broker.grpc_address, topic, count, out)
        _collect(out, {"produced"}, timeout_s=600)
        producer.join(30)
        count += 1  # the producer's warm-up message
        spark = spark_session(
            "local[2]",
            "aeromq-bench-spark",
            {"spark.sql.shuffle.partitions": "2", "spark.ui.showConsoleProgress": "false"},
        )
        spark.sparkContext.setLogLevel("ERROR")
        rows: dict[str, Result] = {}
        rounds = 1 if quick else ROUNDS
        for row in _batch_cases(
            spark, broker.grpc_address, topic, count, broker.pid, limit_s, rounds
        ):
            rows[row.name] = row
            yield row
        yield from case_rows(
            CLUSTER_CASE,
            cluster_case,
            cluster,
            broker,
            topic,
            count,
            root,
            timeout_s=2 * limit_s + 300,
        )
        seconds = 5.0 if quick else 20.0
        for row in case_rows(
            _STREAM_CASE,
            _stream_case,
            spark,
            broker.grpc_address,
            root,
            seconds,
            timeout_s=limit_s + seconds + _CATCH_UP_TIMEOUT_S,
            on_stop=_cancel(spark),
        ):
            rows[row.name] = row
            yield row
        gateway = spark.sparkContext._gateway  # py4j's, untyped: its proc is the JVM's process
        assert gateway is not None, "a running session has its gateway to the JVM"
        pids = (gateway.proc.pid, broker.pid)
        for row in write_cases(
            spark,
            broker.grpc_address,
            quick,
            lambda: sum(tree_cpu_s(pid) for pid in pids),
            limit_s,
            _cancel(spark),
        ):
            rows[row.name] = row
            yield row
        mine = figure(rows, "aeromq:batch-read:4-partition")
        base = figure(rows, "baseline:arrow-memory:4-partition")
        yield Target("aeromq batch read (4 partitions)", mine, 300_000, "rows/s")
        yield Target("aeromq / arrow-memory (4 partitions)", ratio_of(mine, base), 0.7, "x")
        yield Target(
            "stream lag, largest over the 2nd half of production",
            figure(rows, _STREAM_CASE, "max_lag"), STREAM_LAG_BOUND, "msgs", lower_is_better=True,
        )  # fmt: skip
        yield from write_targets(rows)
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()
        cluster_scope.close()
        shutil.rmtree(root, ignore_errors=True)
