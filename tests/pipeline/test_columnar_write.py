"""The sink's Arrow writers: what ``df.write`` and ``df.writeStream`` send as columns is what a
``DefaultLitePullConsumer`` reads back, every column with its nulls; a row that cannot be a
message fails the write naming it; the Row writers of older PySpark still send the same."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter
from pyspark.sql.types import StructType

from aeromq.broker.testing import ServerProcess
from aeromq.client import MessageExt, MessageIllegalError
from aeromq.pipeline import (
    AeromqBatchWriter,
    AeromqDataSource,
    AeromqRowBatchWriter,
    AeromqStreamWriter,
    OptionError,
    sink_options,
)
from tests.consumer._broker_process import create_topic
from tests.pipeline._helpers import consume_all, copy_stream, forget_last_commit, produce

# The first test of a session waits for the SparkSession (10-20 s, longer on a loaded machine).
pytestmark = pytest.mark.timeout(600)

_names = itertools.count()


def _user(message: MessageExt) -> dict[str, str]:
    return {
        k: v for k, v in message.properties.items() if k not in ("WAIT", "UNIQ_KEY", "KEYS", "TAGS")
    }


def test_should_hand_spark_the_arrow_writers(broker: ServerProcess) -> None:
    source = AeromqDataSource({"endpoints": broker.grpc_address, "topic": "T"})
    assert isinstance(source.writer(StructType(), False), DataSourceArrowWriter)
    assert isinstance(source.streamWriter(StructType(), False), DataSourceStreamArrowWriter)
    assert AeromqBatchWriter.__name__ == "AeromqArrowBatchWriter"
    assert AeromqStreamWriter.__name__ == "AeromqArrowStreamWriter"


def test_should_write_every_column_with_its_nulls_as_the_consumer_reads_it(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    rows = [
        (
            f"body-{n}".encode() if n % 5 else f"text-{n}",
            "TagA" if n % 3 == 1 else (None if n % 3 else ""),
            f"k{n} x{n}" if n % 4 else None,
            f"key{n}",
            {"n": str(n), "even": "yes"} if n % 2 == 0 else ({} if n % 6 == 1 else None),
        )
        for n in range(120)
    ]
    df = spark.createDataFrame(
        [(r[0] if isinstance(r[0], bytes) else r[0].encode(), *r[1:]) for r in rows],
        "body binary, tags string, keys string, key string, properties map<string,string>",
    ).repartition(3)
    df.write.format("aeromq").option("endpoints", broker.grpc_address).option("topic", topic).mode(
        "append"
    ).save()

    got = consume_all(broker, topic, 120)
    assert len(got) == 120
    by_body = {m.body: m for m in got}
    for n, (body, tags, keys, key, properties) in enumerate(rows):
        message = by_body[body if isinstance(body, bytes) else body.encode()]
        assert message.tags == (tags or None), n
        assert message.keys == tuple((keys or key).split()), n
        assert _user(message) == (properties or {}), n


def test_should_write_string_bodies_and_rows_of_several_topics(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    other = f"SparkOther{next(_names)}"
    create_topic(broker, other, 2)
    rows = [(f"s{n}", other if n % 2 else None) for n in range(40)]
    df = spark.createDataFrame(rows, "body string, topic string").coalesce(1)
    df.write.format("aeromq").option("endpoints", broker.grpc_address).option("topic", topic).mode(
        "append"
    ).save()
    assert sorted(m.body for m in consume_all(broker, topic, 20)) == sorted(
        f"s{n}".encode() for n in range(0, 40, 2)
    )
    assert sorted(m.body for m in consume_all(broker, other, 20)) == sorted(
        f"s{n}".encode() for n in range(1, 40, 2)
    )


def test_should_fail_a_write_naming_the_row_that_cannot_be_a_message(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    df = spark.createDataFrame([(b"ok", "T"), (b"ok", "bad tag")], "body binary, tags string")
    with pytest.raises(Exception, match="MessageIllegalError: a row cannot be a message: row=1"):
        df.coalesce(1).write.format("aeromq").option("endpoints", broker.grpc_address).option(
            "topic", topic
        ).mode("append").save()


def _copy(spark: SparkSession, broker: ServerProcess, source: str, root: Path) -> None:
    """One ``availableNow`` run of the stream writer: ``source``'s rows to the topic each
    names in a ``topic`` column (no topic option)."""
    columns = ("body", "tags", "key", f"concat('{source}', 'Sink') as topic")
    copy_stream(spark, broker, source, root, per_trigger=40, columns=columns)


def test_should_stream_rows_to_the_topic_of_a_column_and_skip_a_replayed_batch(
    spark: SparkSession, broker: ServerProcess, topic: str, tmp_path: Path
) -> None:
    sink = f"{topic}Sink"
    create_topic(broker, sink, 2)
    sent = produce(broker, topic, per_queue=20)  # 80 messages: two micro-batches of 40
    _copy(spark, broker, topic, tmp_path)
    got = consume_all(broker, sink, 80)
    assert sorted((m.body, m.tags, m.keys) for m in got) == sorted(
        (m.body, m.tags, m.keys) for m in sent
    )
    forget_last_commit(tmp_path)
    _copy(spark, broker, topic, tmp_path)  # Spark replays the last batch: the sink skips it
    assert len(consume_all(broker, sink, 80)) == 80


def test_should_send_arrow_batches_and_rows_outside_spark(
    broker: ServerProcess, topic: str
) -> None:
    options = sink_options({"endpoints": broker.grpc_address, "topic": topic})
    batch = pa.record_batch(
        [pa.array([b"a1", b"a2"]), pa.array(["T", None]), pa.array([None, "k"])],
        names=["body", "tags", "key"],
    )
    commit = AeromqBatchWriter(options).write(iter([batch, batch.slice(0, 0)]))
    assert commit.rows == 2
    rows = [Row(body=b"r1", tags="T", keys="k"), Row(body=b"r2", tags=None, keys=None)]
    assert AeromqRowBatchWriter(options).write(iter(rows)).rows == 2
    got = sorted((m.body, m.tags, m.keys) for m in consume_all(broker, topic, 4))
    assert got == [
        (b"a1", "T", ()),
        (b"a2", None, ("k",)),
        (b"r1", "T", ("k",)),
        (b"r2", None, ()),
    ]
    with pytest.raises(OptionError, match="needs a body column"):
        AeromqBatchWriter(options).write(iter([pa.record_batch([pa.array([1])], names=["x"])]))
    with pytest.raises(MessageIllegalError) as raised:
        AeromqBatchWriter(options).write(iter([pa.record_batch([pa.array([b"", b"x"])], ["body"])]))
    assert raised.value.values["row"] == 0
