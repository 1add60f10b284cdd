"""The write cases of ``bench spark``: rows/s of ``df.write`` through aeromq's Arrow sink into a
topic of 4 queues on the suite's broker, beside the two ceilings of Spark's Python data source
sinks on this machine, in the same session (issue 36).

Every case writes the same DataFrame: :data:`WRITE_ROWS` rows (200,000 with ``--quick``) of one
``body`` column of 100 bytes made in Spark's JVM (``spark.range`` in :data:`WRITE_PARTITIONS`
partitions, each id padded to 100 bytes), so what differs is the sink:

- ``aeromq:batch-write:arrow-sink``: ``df.write.format("aeromq")`` (``pipeline/_arrow_writers.py``:
  each task's Arrow batches through ``Producer.send_columns_async``) into the topic
  ``BenchSparkWrite``; the rows stored are checked on the broker after each write.
- ``baseline:row-writer-count``: a Python data source whose ``DataSourceWriter`` only counts the
  ``Row`` objects it is handed (the ceiling of a sink that makes a Python object per row, as the
  Row writers do).
- ``baseline:arrow-writer-count``: a ``DataSourceArrowWriter`` that only counts the rows of its
  Arrow batches (the ceiling of the Arrow sink path). Each counting sink's commit checks the
  count.

Each sink writes once untimed first (20,000 rows: the Python workers and imports, the JVM's
compiled code), then the three run :data:`WRITE_ROUNDS` times alternating (once with
``--quick``), each reporting its median run (every run in ``runs_rows_per_s``) and
``cpu_us_per_row``: the CPU of Spark's JVM with its Python workers and of the broker during the
write, per row. Target: aeromq >= 0.5x the Arrow writer ceiling.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

from bench._harness import Result, Target, attempt, case_rows, figure, ratio_of
from bench._spark_measures import BODY_LENGTH, median_run, rate_row

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "ARROW_CEILING",
    "ROW_CEILING",
    "SINK_CASE",
    "WRITE_PARTITIONS",
    "WRITE_ROUNDS",
    "WRITE_ROWS",
    "write_cases",
    "write_targets",
]

WRITE_ROWS: Final = 1_000_000
WRITE_ROWS_QUICK: Final = 200_000
WRITE_PARTITIONS: Final = 4
WRITE_ROUNDS: Final = 3
_WARM_UP_ROWS: Final = 20_000
_TOPIC: Final = "BenchSparkWrite"
SINK_CASE: Final = "aeromq:batch-write:arrow-sink"
ROW_CEILING: Final = "baseline:row-writer-count"
ARROW_CEILING: Final = "baseline:arrow-writer-count"
_ROW_FORMAT: Final = "aeromq_bench_count_rows"
_ARROW_FORMAT: Final = "aeromq_bench_count_arrow"
_TARGET_RATIO: Final = 0.5


def _counting_sources() -> tuple[type, type]:
    """The two counting sinks (defined here so Spark pickles them by value): a Row writer and an
    Arrow writer that count what they are handed; each commit raises unless the tasks counted
    the ``rows`` option's rows."""
    from collections.abc import Iterator as Rows
    from dataclasses import dataclass

    import pyarrow as pa
    from pyspark.sql import Row
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceWriter,
        WriterCommitMessage,
    )
    from pyspark.sql.types import StructType

    @dataclass
    class Counted(WriterCommitMessage):
        rows: int

    class _Expect(DataSourceWriter):
        def __init__(self, expected: int) -> None:
            self.expected = expected

        def commit(self, messages: list[WriterCommitMessage | None]) -> None:
            counted = sum(m.rows for m in messages if isinstance(m, Counted))
            if counted != self.expected:
                raise RuntimeError(f"counted {counted} of {self.expected} rows")

    class _RowCount(_Expect):
        def write(self, iterator: Rows[Row]) -> Counted:
            return Counted(sum(1 for _ in iterator))

    class _ArrowCount(DataSourceArrowWriter, _Expect):
        def write(self, iterator: Rows[pa.RecordBatch]) -> Counted:
            return Counted(sum(batch.num_rows for batch in iterator))

    class RowCountSink(DataSource):
        @classmethod
        def name(cls) -> str:
            return _ROW_FORMAT

        def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
            return _RowCount(int(self.options["rows"]))

    class ArrowCountSink(DataSource):
        @classmethod
        def name(cls) -> str:
            return _ARROW_FORMAT

        def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
            return _ArrowCount(int(self.options["rows"]))

    return RowCountSink, ArrowCountSink


def _rows(spark: SparkSession, count: int) -> DataFrame:
    """``count`` rows of one 100-byte ``body``, made in the JVM."""
    return spark.range(0, count, 1, WRITE_PARTITIONS).selectExpr(
        f"cast(lpad(cast(id as string), {BODY_LENGTH}, '.') as binary) as body"
    )


def _activate(spark: SparkSession) -> None:
    """Make ``spark`` the active session of this thread's JVM thread: Spark looks a write's
    Python data source up in the active session, which a case's own thread has none of."""
    jvm = spark._jvm  # py4j's view of the JVM, untyped
    assert jvm is not None, "a running session has its JVM"
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def _stored(grpc: str) -> int:
    """Messages stored in the sink's topic so far."""
    from aeromq.client import GrpcClient

    with GrpcClient(grpc, timeout_s=30) as admin:
        return sum(admin.max_offset(_TOPIC, q) for q in range(WRITE_PARTITIONS))


def _timed_write(
    name: str,
    spark: SparkSession,
    grpc: str,
    count: int,
    cpu_s: Callable[[], float],
) -> Result:
    """One write of ``count`` rows to the sink of case ``name``, timed."""
    _activate(spark)
    writer = _rows(spark, count).write.mode("append")
    if name == SINK_CASE:
        writer = writer.format("aeromq").option("endpoints", grpc).option("topic", _TOPIC)
        before = _stored(grpc)
    else:
        writer = writer.format(_ROW_FORMAT if name == ROW_CEILING else _ARROW_FORMAT)
        writer = writer.option("rows", str(count))
    cpu = cpu_s()
    began = time.monotonic()
    writer.save()
    seconds = time.monotonic() - began
    used = cpu_s() - cpu
    if name == SINK_CASE and (stored := _stored(grpc) - before) != count:
        raise RuntimeError(f"the broker stored {stored} of {count} rows")
    return rate_row(name, count, seconds, used, WRITE_PARTITIONS)


def write_cases(
    spark: SparkSession,
    grpc: str,
    quick: bool,
    cpu_s: Callable[[], float],
    limit_s: float,
    on_stop: Callable[[], None],
) -> Iterator[Result]:
    """The three write cases in ``spark`` (the sink's topic made on ``grpc``'s broker first),
    alternating, each bounded in time; each its median run. ``cpu_s``: the CPU
    seconds so far of what shares the cores (Spark's JVM with its workers, the broker)."""
    from aeromq.client import GrpcClient

    with GrpcClient(grpc, timeout_s=30) as admin:
        admin.create_topic(
            _TOPIC, read_queue_nums=WRITE_PARTITIONS, write_queue_nums=WRITE_PARTITIONS
        )
    for source in _counting_sources():
        spark.dataSource.register(source)
    names = (SINK_CASE, ROW_CEILING, ARROW_CEILING)
    for name in names:
        attempt(
            [],
            f"spark warm-up write {name}",
            _timed_write,
            name,
            spark,
            grpc,
            _WARM_UP_ROWS,
            cpu_s,
            timeout_s=limit_s,
            on_stop=on_stop,
        )
    count = WRITE_ROWS_QUICK if quick else WRITE_ROWS
    runs: dict[str, list[Result]] = {name: [] for name in names}
    for _ in range(1 if quick else WRITE_ROUNDS):
        for name in names:
            runs[name] += case_rows(
                name,
                _timed_write,
                name,
                spark,
                grpc,
                count,
                cpu_s,
                timeout_s=limit_s,
                on_stop=on_stop,
            )
    for name in names:
        yield median_run(runs[name])


def write_targets(rows: dict[str, Result]) -> Iterator[Target]:
    """The issue's target: aeromq's Arrow sink at 0.5x the Arrow writer ceiling or more."""
    mine, ceiling = figure(rows, SINK_CASE), figure(rows, ARROW_CEILING)
    yield Target(
        "aeromq arrow sink / arrow writer ceiling", ratio_of(mine, ceiling), _TARGET_RATIO, "x"
    )
