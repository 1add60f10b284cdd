"""A Spark application on a standalone cluster or through a Spark Connect server, in a process
of its own (``python -m tests.pipeline._cluster_driver MASTER DRIVER_HOST ENDPOINTS SOURCE SINK
CHECKPOINT``; ``MASTER`` ``spark://...`` or ``sc://...``, whose server is the driver and
``DRIVER_HOST`` unused): a batch read of ``SOURCE``, a streaming read of it with
``maxOffsetsPerTrigger`` into ``SINK`` through the sink (``availableNow``); prints one JSON line
``{"batch": [[queueId, queueOffset, body hex], ...], "hosts": [...], "micro_batches": n}``
(the host names the Python workers see, the micro-batches that read rows).

Through Spark Connect the client registers the format (``spark_session("sc://...")``: the data
source class goes to the server pickled by reference, and the server's Python workers import
``aeromq.pipeline``); the client's Python needs ``aeromq[spark-connect]``."""

from __future__ import annotations

import json
import os
import socket
import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import udf

from aeromq.pipeline import CONNECT_SCHEME, spark_session

PER_TRIGGER = 300


def _hosts(spark: SparkSession) -> list[str]:
    """The host names the executors' Python workers see (a UDF: Spark Connect has no RDDs)."""
    host = udf(lambda _: socket.gethostname(), "string")
    rows = spark.range(0, 8, 1, 8).select(host("id").alias("host")).distinct().collect()
    return sorted(row.host for row in rows)


def _session(master: str, driver_host: str) -> SparkSession:
    """A Spark Connect client of ``sc://`` ``master``, or a driver of the cluster."""
    if master.startswith(CONNECT_SCHEME):
        return spark_session(master)  # Spark's settings are the server's
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
    return spark


def main(
    master: str, driver_host: str, endpoints: str, source: str, sink: str, checkpoint: str
) -> None:
    spark = _session(master, driver_host)
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
    batches = len([p for p in query.recentProgress if p.numInputRows])
    print(json.dumps({
        "batch": sorted([r.queueId, r.queueOffset, bytes(r.body).hex()] for r in rows),
        "hosts": _hosts(spark),
        "micro_batches": batches,
    }), flush=True)  # fmt: skip
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:7])
