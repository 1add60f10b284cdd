"""The example pipeline: JSON events from a topic, aggregated per key and one-minute window,
written to Parquet and sent back to a topic as JSON.

Against a local broker (``aeromq broker`` in another terminal, gRPC on 127.0.0.1:8081)::

    python -m aeromq.pipeline.examples.window_aggregation --seed 10000

On a Spark standalone cluster, ``--master spark://HOST:7077`` (and ``--conf`` for Spark's
settings); through a Spark Connect server, ``--master sc://HOST:15002``
(``docs/spark-cluster.md``).

``--seed N`` first sends N events ``{"key": "sensor-3", "value": 4.5, "ts": <epoch ms>}`` to the
events topic (created when missing, as is the results topic). Then one Spark batch job reads the
whole events topic, counts, sums and averages ``value`` per key and window, overwrites the Parquet
directory ``--output`` and sends one JSON message per window and key to the results topic
(tag ``window``, key = the event key). It prints what it did.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence

from aeromq.client import GrpcClient, Message, TopicNotFoundError
from aeromq.pipeline._session import spark_session
from aeromq.producer import Producer

__all__ = ["main", "run"]

EVENT_SCHEMA = "key string, value double, ts long"
_KEYS = 5
_SPAN_MS = 5 * 60_000


def _ensure_topic(admin: GrpcClient, topic: str, queues: int) -> None:
    try:
        admin.query_route(topic)
    except TopicNotFoundError:
        admin.create_topic(topic, read_queue_nums=queues, write_queue_nums=queues)


def seed_events(endpoints: str, topic: str, count: int, start_ms: int) -> None:
    """Send ``count`` events over five minutes of event time, keys ``sensor-0..4``."""
    chooser = random.Random(7)
    with Producer("aeromq-example-seed", endpoints) as producer:
        batch: list[Message] = []
        for n in range(count):
            event = {
                "key": f"sensor-{n % _KEYS}",
                "value": round(chooser.uniform(0, 10), 3),
                "ts": start_ms + n * _SPAN_MS // max(1, count),
            }
            batch.append(Message(topic, json.dumps(event).encode()))
            if len(batch) == 64:
                producer.send_batch(batch)
                batch = []
        if batch:
            producer.send_batch(batch)


def run(
    endpoints: str,
    events: str,
    results: str,
    output: str,
    window: str,
    master: str = "local[2]",
    config: dict[str, str] | None = None,
) -> dict[str, int]:
    """The Spark job on ``master`` (``local[2]``, a cluster's ``spark://host:port`` or a Spark
    Connect server's ``sc://host:port``, with ``config``); returns counts of what it read and
    wrote."""
    from pyspark.sql import functions as f

    spark = spark_session(master, "aeromq-window-aggregation", config)
    raw = spark.read.format("aeromq").option("endpoints", endpoints).option("topic", events).load()
    parsed = raw.select(f.from_json(f.col("body").cast("string"), EVENT_SCHEMA).alias("e")).select(
        "e.key", "e.value", f.timestamp_millis(f.col("e.ts")).alias("event_time")
    )
    windows = (
        parsed.where(f.col("key").isNotNull())
        .groupBy(f.window("event_time", window).alias("w"), "key")
        .agg(
            f.count("*").alias("events"),
            f.sum("value").alias("total"),
            f.avg("value").alias("mean"),
        )
        .select(
            f.col("w.start").alias("window_start"),
            f.col("w.end").alias("window_end"),
            "key",
            "events",
            "total",
            "mean",
        )
        .cache()
    )
    windows.write.mode("overwrite").parquet(output)
    (
        windows.select(
            f.to_json(f.struct(*windows.columns)).alias("body"),
            f.lit("window").alias("tags"),
            f.col("key").alias("keys"),
        )
        .write.format("aeromq")
        .option("endpoints", endpoints)
        .option("topic", results)
        .mode("append")
        .save()
    )
    counts = {"events": raw.count(), "windows": windows.count()}
    windows.unpersist()
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m aeromq.pipeline.examples.window_aggregation", description=__doc__
    )
    parser.add_argument("--endpoints", default="127.0.0.1:8081", help="broker gRPC host:port")
    parser.add_argument("--events", default="PipelineEvents", help="the events topic")
    parser.add_argument("--results", default="PipelineWindows", help="the results topic")
    parser.add_argument("--output", default="/tmp/aeromq-windows", help="Parquet directory")
    parser.add_argument("--window", default="1 minute", help="the window length")
    parser.add_argument("--seed", type=int, default=0, help="send this many events first")
    parser.add_argument(
        "--master",
        default="local[2]",
        help="Spark's master: local[N], spark://host:port or a Spark Connect server's "
        "sc://host:port",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting (again for more), e.g. spark.driver.host=10.0.0.5",
    )
    args = parser.parse_args(argv)
    config = dict(item.split("=", 1) for item in args.conf if "=" in item)
    with GrpcClient(args.endpoints, timeout_s=30.0) as admin:
        _ensure_topic(admin, args.events, 4)
        _ensure_topic(admin, args.results, 4)
    if args.seed:
        seed_events(args.endpoints, args.events, args.seed, int(time.time() * 1000) - _SPAN_MS)
    counts = run(
        args.endpoints, args.events, args.results, args.output, args.window, args.master, config
    )
    print(
        f"read {counts['events']} events from {args.events}; wrote {counts['windows']} "
        f"windows to {args.output} (Parquet) and to topic {args.results}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
