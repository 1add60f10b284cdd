"""Batch reads of a real broker's topic through a real local SparkSession."""

from __future__ import annotations

import time

import pytest
from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from aeromq.common import PROPERTY_KEYS
from tests.broker.observability._scrape import scrape, value
from tests.pipeline._helpers import produce

# The first test of a session waits for the SparkSession (10-20 s, longer on a loaded machine).
pytestmark = pytest.mark.timeout(600)


def test_should_read_back_what_was_produced_to_a_four_queue_topic(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    sent = produce(broker, topic, per_queue=50)
    df = (
        spark.read.format("aeromq")
        .option("endpoints", broker.grpc_address)
        .option("topic", topic)
        .option("includeProperties", "true")
        .load()
    )
    rows = df.collect()
    assert len(rows) == len(sent) == 200
    got = {(r.queueId, r.queueOffset): r for r in rows}
    assert len(got) == 200  # no duplicates
    for queue_id in range(4):
        for n in range(50):
            row = got[(queue_id, n)]  # offsets 0..49 in every queue, no gaps
            assert row.topic == topic and row.broker == broker.name
            assert bytes(row.body) == b"%d-%d" % (queue_id, n)
            assert row.tags == ("even" if n % 2 == 0 else "odd")
            assert row.key == f"k{n}"
            assert row.properties == {"n": str(n)}  # user properties only
            assert row.storeTimestamp >= row.bornTimestamp
    assert all(PROPERTY_KEYS not in r.properties for r in rows)


def test_should_read_no_rows_from_a_topic_with_no_messages(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    """Every queue empty: no partition planned, and PySpark's one valueless partition reads
    nothing (it used to fail on its missing range)."""
    df = spark.read.format("aeromq").option("endpoints", broker.grpc_address).option("topic", topic)
    assert df.load().count() == 0


def test_should_read_offset_ranges_in_more_partitions_with_a_tag_filter(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    produce(broker, topic, per_queue=40)
    df = (
        spark.read.format("aeromq")
        .option("endpoints", broker.grpc_address)
        .option("topic", topic)
        .option("subExpression", "even")
        .option("startingOffsets", f'{{"{topic}": {{"{broker.name}:0": 10}}}}')
        .option("endingOffsets", f'{{"{topic}": {{"{broker.name}:3": 20}}}}')
        .option("minPartitions", "8")
        .load()
    )
    assert df.rdd.getNumPartitions() >= 8
    rows = df.select("queueId", "queueOffset", "tags").collect()
    expected = (
        {(0, n) for n in range(10, 40, 2)}
        | {(q, n) for q in (1, 2) for n in range(0, 40, 2)}
        | {(3, n) for n in range(0, 20, 2)}
    )
    assert sorted((r.queueId, r.queueOffset) for r in rows) == sorted(expected)
    assert {r.tags for r in rows} == {"even"}
    assert "properties" not in df.columns


def test_should_start_at_a_timestamp_searched_on_the_broker(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    produce(broker, topic, per_queue=10)
    time.sleep(0.05)  # store times are in milliseconds: the rounds must not share one
    since_ms = int(time.time() * 1000)
    time.sleep(0.05)
    produce(broker, topic, per_queue=10, first=10)
    df = (
        spark.read.format("aeromq")
        .option("endpoints", broker.grpc_address)
        .option("subscribePattern", f"{topic}|NoSuchTopic.*")
        .option("startingTimestamp", str(since_ms))
        .load()
    )
    rows = df.select("queueId", "queueOffset").collect()
    assert sorted((r.queueId, r.queueOffset) for r in rows) == [
        (q, n) for q in range(4) for n in range(10, 20)
    ]


def test_should_read_the_broker_files_in_place_on_its_host_unless_told_not_to(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    """The executors share the broker's host: their pulls are answered with local ranges (the
    broker's ``aeromq_pulls_local_total``), and ``localReads=false`` reads the same rows
    through the transport."""
    produce(broker, topic, per_queue=30)

    def read(**options: str) -> list[tuple[int, int, bytes]]:
        df = (
            spark.read.format("aeromq")
            .option("endpoints", broker.grpc_address)
            .option("topic", topic)
            .options(**options)
            .load()
        )
        return sorted((r.queueId, r.queueOffset, bytes(r.body)) for r in df.collect())

    metrics = broker.ready["metrics"]
    before = value(scrape(metrics), "aeromq_pulls_local_total")
    local = read()
    after = value(scrape(metrics), "aeromq_pulls_local_total")
    assert after >= before + 4  # one answer at least per queue
    through = read(localReads="false")
    assert value(scrape(metrics), "aeromq_pulls_local_total") == after
    assert local == through and len(local) == 120
    assert [body for _, _, body in local[:3]] == [b"0-0", b"0-1", b"0-2"]
