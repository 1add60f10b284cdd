"""Helpers of the Spark connector tests: send known messages, read a topic back with a
``DefaultLitePullConsumer``, copy a topic with a streaming query and make Spark replay its last
micro-batch."""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message, MessageExt, MessageQueue
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.pipeline import spark_session
from aeromq.producer import Producer
from tests.consumer._broker_process import create_topic

_groups = itertools.count()
_QUERY_TIMEOUT_S = 180

LOCAL_SPARK_CONFIG = {
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.streaming.stopTimeout": "30s",
    "spark.ui.showConsoleProgress": "false",
}
"""The tests' ``local[2]`` sessions: on the loopback, quiet, two shuffle partitions."""


def local_spark(app_name: str) -> SparkSession:
    """A ``local[2]`` session of :data:`LOCAL_SPARK_CONFIG` (Python workers run this
    interpreter), its log at ERROR."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # before the JVM starts: loopback only
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = spark_session("local[2]", app_name, LOCAL_SPARK_CONFIG)
    session.sparkContext.setLogLevel("ERROR")
    return session


def produce(broker: ServerProcess, topic: str, per_queue: int, first: int = 0) -> list[Message]:
    """``per_queue`` messages to each of the topic's 4 queues: body ``b"<queue>-<n>"``, tag
    ``even``/``odd``, key ``k<n>``, a property ``n``; returns them in the order sent."""
    sent: list[Message] = []
    with Producer("pipeline-test-producer", broker.grpc_address) as producer:
        for queue_id in range(4):
            batch = [
                Message(
                    topic,
                    b"%d-%d" % (queue_id, n),
                    tags="even" if n % 2 == 0 else "odd",
                    keys=f"k{n}",
                    properties={"n": str(n)},
                )
                for n in range(first, first + per_queue)
            ]
            producer.send_batch(batch, queue=MessageQueue(topic, broker.name, queue_id))
            sent += batch
    return sent


def source_and_sink(
    broker: ServerProcess, source: str, sink: str, per_queue: int, sink_queues: int, first: int = 0
) -> list[Message]:
    """Create ``source`` (4 queues) and ``sink`` (``sink_queues``) on ``broker``; fill
    ``source`` with :func:`produce`; returns what was sent."""
    create_topic(broker, source, 4)
    create_topic(broker, sink, sink_queues)
    return produce(broker, source, per_queue, first)


def consume_all(
    broker: ServerProcess, topic: str, count: int, timeout_s: float = 60.0
) -> list[MessageExt]:
    """Every message of ``topic`` with a fresh group from the first offset, until ``count``
    arrived (or the timeout); then a short wait proves no more come."""
    config = LitePullConsumerConfig(
        consumer_group=f"pipeline-check-{next(_groups)}",
        endpoints=(broker.grpc_address,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=500,
    )
    got: list[MessageExt] = []
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(topic, "*")
    with consumer:
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            got += consumer.poll(500)
        got += consumer.poll(1000)
    return got


def copy_stream(
    spark: SparkSession,
    broker: ServerProcess,
    source: str,
    root: Path,
    *,
    per_trigger: int,
    columns: tuple[str, ...],
    sink: str | None = None,
) -> None:
    """One ``availableNow`` run of the sink's stream writer: ``source``'s rows, ``per_trigger``
    a micro-batch, as ``columns`` (SQL expressions), to ``sink`` (the topic option; None: the
    topic each row names), checkpointed under ``root``."""
    writer = (
        spark.readStream.format("aeromq")
        .option("endpoints", broker.grpc_address)
        .option("topic", source)
        .option("maxOffsetsPerTrigger", str(per_trigger))
        .load()
        .selectExpr(*columns)
        .writeStream.format("aeromq")
        .option("endpoints", broker.grpc_address)
        .option("checkpointLocation", str(root / "checkpoint"))
    )
    if sink is not None:
        writer = writer.option("topic", sink)
    query = writer.trigger(availableNow=True).start()
    assert query.awaitTermination(_QUERY_TIMEOUT_S), "the availableNow query did not finish"
    assert query.exception() is None


def forget_last_commit(root: Path) -> int:
    """A stop after the sink committed the last micro-batch and before Spark's commit log
    recorded it: that batch's entry removed from the checkpoint under ``root``; its id."""
    commits = root / "checkpoint" / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    return last
