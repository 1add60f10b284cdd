"""A streaming query's driver in a process of its own (``python -m tests.pipeline._copy_driver
ENDPOINTS SOURCE SINK CHECKPOINT``): it copies ``SOURCE`` to ``SINK`` through the sink, each
row held a moment on its way (:func:`start_copy`'s ``pause_s``, a Python UDF), so that a
micro-batch is written over a second or more and a test can SIGKILL this process in the middle
of it. It prints ``query started`` once the query runs, and runs until killed."""

from __future__ import annotations

import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql.functions import udf
from pyspark.sql.streaming import StreamingQuery

from tests.pipeline._helpers import local_spark

PER_TRIGGER = 6_000


def start_copy(
    spark: SparkSession,
    endpoints: str,
    source: str,
    sink: str,
    checkpoint: str,
    *,
    pause_s: float,
    available_now: bool,
) -> StreamingQuery:
    """The copy query: ``source``'s bodies to ``sink``, :data:`PER_TRIGGER` rows a
    micro-batch, checkpointed at ``checkpoint``; each row waits ``pause_s`` first."""

    def slowly(body: bytes) -> bytes:
        if pause_s:
            time.sleep(pause_s)
        return body

    writer = (
        spark.readStream.format("aeromq")
        .option("endpoints", endpoints)
        .option("topic", source)
        .option("maxOffsetsPerTrigger", str(PER_TRIGGER))
        .load()
        .select(udf(slowly, "binary", useArrow=False)("body").alias("body"))
        .writeStream.format("aeromq")
        .option("endpoints", endpoints)
        .option("topic", sink)
        .option("checkpointLocation", checkpoint)
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def main(endpoints: str, source: str, sink: str, checkpoint: str) -> None:
    spark = local_spark("aeromq-killed-driver")
    query = start_copy(
        spark, endpoints, source, sink, checkpoint, pause_s=0.001, available_now=False
    )
    print("query started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:5])
