"""Streaming reads with admission control, ``Trigger.AvailableNow`` and restarts from a
checkpoint, through a real local SparkSession and a real broker."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from aeromq._cli.admin import main as admin_main
from aeromq.broker.testing import ServerProcess
from aeromq.client import GrpcClient, Message, MessageQueue
from aeromq.producer import Producer
from tests.pipeline._helpers import produce

# The first test of a session waits for the SparkSession (10-20 s, longer on a loaded machine).
pytestmark = pytest.mark.timeout(600)

_QUERY_TIMEOUT_S = 180


def _run_available_now(
    spark: SparkSession, broker: ServerProcess, topic: str, root: Path, group: str
) -> list[int]:
    """One ``availableNow`` run into Parquet under ``root``; the rows of each micro-batch."""
    stream = (
        spark.readStream.format("aeromq")
        .option("endpoints", broker.grpc_address)
        .option("topic", topic)
        .option("maxOffsetsPerTrigger", "30")
        .option("group", group)
        .load()
        .select("queueId", "queueOffset", "body")
    )
    query = (
        stream.writeStream.format("parquet")
        .option("path", str(root / "out"))
        .option("checkpointLocation", str(root / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(_QUERY_TIMEOUT_S), "the availableNow query did not finish"
    assert query.exception() is None
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def test_should_read_everything_in_capped_batches_and_restart_where_it_stopped(
    spark: SparkSession, broker: ServerProcess, topic: str, tmp_path: Path
) -> None:
    group = f"spark-{topic}"
    produce(broker, topic, per_queue=25)  # 100 messages, 25 per queue

    batches = _run_available_now(spark, broker, topic, tmp_path, group)
    assert batches == [30, 30, 30, 10]  # maxOffsetsPerTrigger=30, split across 4 queues

    produce(broker, topic, per_queue=10, first=25)  # 40 more
    shown = io.StringIO()  # `aeromq admin group progress` shows the query's lag
    assert admin_main(["--server", broker.grpc_address, "group", "progress", group], shown) == 0
    lags = [line.split()[-1] for line in shown.getvalue().splitlines() if line.startswith(topic)]
    assert lags == ["10"] * 4
    batches = _run_available_now(spark, broker, topic, tmp_path, group)
    assert batches == [30, 10]  # only the new ones

    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    seen = sorted((r.queueId, r.queueOffset) for r in rows)
    assert seen == [(q, n) for q in range(4) for n in range(35)]  # no duplicates, no gaps
    assert {bytes(r.body) for r in rows} == {b"%d-%d" % (q, n) for q in range(4) for n in range(35)}

    with GrpcClient(broker.grpc_address, timeout_s=30) as admin:  # the group's progress
        assert [admin.query_offset(group, topic, q) for q in range(4)] == [35] * 4
        progress = admin.consumer_progress(group, topic)
        assert progress.total_lag == 0 and len(progress.queues) == 4


def test_should_pick_up_queues_added_to_the_topic(
    spark: SparkSession, broker: ServerProcess, topic: str, tmp_path: Path
) -> None:
    produce(broker, topic, per_queue=5)
    assert _run_available_now(spark, broker, topic, tmp_path, f"spark-{topic}") == [20]
    with GrpcClient(broker.grpc_address, timeout_s=30) as admin:
        (config,) = [t for t in admin.list_topics() if t.topic_name == topic]
        config.read_queue_nums = config.write_queue_nums = 6
        admin.update_topic(config)
    with Producer("pipeline-test-producer", broker.grpc_address) as producer:
        for queue_id in (4, 5):
            producer.send_batch(
                [Message(topic, b"new-%d" % queue_id)] * 3,
                queue=MessageQueue(topic, broker.name, queue_id),
            )
    batches = _run_available_now(spark, broker, topic, tmp_path, f"spark-{topic}")
    assert sum(batches) == 6
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted({r.queueId for r in rows}) == [0, 1, 2, 3, 4, 5]
    assert len(rows) == 26
