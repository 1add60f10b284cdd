"""A Spark application on a standalone cluster, in a process of its own (``python -m
tests.pipeline._cluster_driver MASTER DRIVER_HOST ENDPOINTS SOURCE SINK CHECKPOINT``): a batch
read of ``SOURCE``, a streaming read of it with ``maxOffsetsPerTrigger`` into ``SINK`` through
the sink (``availableNow``); prints one JSON line ``{"batch": [[queueId, queueOffset, body
hex], ...], "hosts": [...], "partitions": n}`` (the executors' host names)."""

from __future__ import annotations

import json
import os
import socket
import sys

from pyspark.sql import SparkSession

from aeromq.pipeline import spark_session

PER_TRIGGER = 300


def _hosts(spark: SparkSession) -> list[str]:
    """The host names the executors' Python workers see."""
    names = spark.sparkContext.parallelize(range(8), 8).map(lambda _: socket.gethostname())
    return sorted(set(names.collect()))


def main(
    master: str, driver_host: str, endpoints: str, source: str, sink: str, checkpoint: str
) -> None:
    spark = spark_session(
        master,
        "aeromq-cluster-test",
        {
            "spark.driver.host": driver_host,
            "spark.driver.bindAddress": driver_host,
            "spark.pyspark.python": sys.executable,
            "spark.executorEnv.PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "spark.executor.memory": "512m",
            "spark.cores.max": "2",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    reader = spark.read.format("aeromq").option("endpoints", endpoints).option("topic", source)
    rows = reader.load().select("queueId", "queueOffset", "body").collect()
    query = (
        spark.readStream.format("aeromq")
        .option("endpoints", endpoints)
        .option("topic", source)
        .option("maxOffsetsPerTrigger", str(PER_TRIGGER))
        .load()
        .select("body")
        .writeStream.format("aeromq")
        .option("endpoints", endpoints)
        .option("topic", sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    batches = len([p for p in query.recentProgress if p["numInputRows"]])
    print(json.dumps({
        "batch": sorted([r.queueId, r.queueOffset, bytes(r.body).hex()] for r in rows),
        "hosts": _hosts(spark),
        "micro_batches": batches,
    }), flush=True)  # fmt: skip
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:7])
