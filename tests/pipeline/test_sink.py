"""The sink: batch writes that a ``DefaultLitePullConsumer`` reads back, and a streaming write
whose replayed micro-batch (after a stop between the sink's commit and Spark's) sends nothing."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from tests.pipeline._helpers import consume_all, copy_stream, forget_last_commit, produce

# The first test of a session waits for the SparkSession (10-20 s, longer on a loaded machine).
pytestmark = pytest.mark.timeout(600)

_names = itertools.count()
_COLUMNS = ("body", "tags", "key")


def test_should_write_rows_that_a_lite_pull_consumer_reads(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    rows = [
        (f"body-{n}".encode(), "TagA" if n % 2 else None, f"key{n}", {"n": str(n)})
        for n in range(60)
    ]
    df = spark.createDataFrame(
        rows, "body binary, tags string, keys string, properties map<string,string>"
    ).repartition(3)
    df.write.format("aeromq").option("endpoints", broker.grpc_address).option("topic", topic).mode(
        "append"
    ).save()

    got = consume_all(broker, topic, 60)
    assert len(got) == 60
    by_body = {m.body: m for m in got}
    for n in range(60):
        message = by_body[f"body-{n}".encode()]
        assert message.tags == ("TagA" if n % 2 else None)
        assert message.keys == (f"key{n}",)
        assert message.get_property("n") == str(n)


def test_should_fail_a_write_without_a_body_column(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    df = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match="OptionError: the sink needs a body column"):
        df.write.format("aeromq").option("endpoints", broker.grpc_address).option(
            "topic", topic
        ).mode("append").save()


def _copy(spark: SparkSession, broker: ServerProcess, source: str, sink: str, root: Path) -> None:
    """One ``availableNow`` run copying ``source`` to ``sink`` through the stream writer."""
    copy_stream(spark, broker, source, root, per_trigger=50, columns=_COLUMNS, sink=sink)


def test_should_not_write_a_replayed_micro_batch_twice(
    spark: SparkSession, broker: ServerProcess, topic: str, tmp_path: Path
) -> None:
    from tests.consumer._broker_process import create_topic

    sink = f"SparkSink{next(_names)}"
    create_topic(broker, sink, 2)
    produce(broker, topic, per_queue=25)  # 100 messages: two micro-batches of 50
    _copy(spark, broker, topic, sink, tmp_path)
    assert len(consume_all(broker, sink, 100)) == 100

    # A stop after the sink committed batch 1 and before Spark's commit log recorded it:
    last = forget_last_commit(tmp_path)
    assert last == 1

    _copy(spark, broker, topic, sink, tmp_path)  # Spark replays batch 1: the sink skips it
    got = consume_all(broker, sink, 100)
    assert len(got) == 100
    assert sorted(m.body for m in got) == sorted(
        b"%d-%d" % (q, n) for q in range(4) for n in range(25)
    )
