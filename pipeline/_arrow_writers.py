"""The sink's Arrow writers: a task's rows as Spark hands them to Python, Arrow record batches,
sent as columns (``Producer.send_columns_async``), with no Python object per row.

Each Spark task sends its partition with one :class:`~producer.Producer`: each Arrow batch's
``body`` column (binary or string) with its ``tags``, ``keys`` (or ``key``, where ``keys`` is
null) and ``properties`` (a map) columns, as they are, its rows cut into record batches by the
producer straight from the columns' buffers and spread over the topic's queues batch by batch;
eight calls in flight, every acknowledgement awaited before the task reports success. Rows of
several topics (a ``topic`` column; a null or empty one takes the ``topic`` option) go topic by
topic. A stream task sends its rows exactly once (``_exactly_once.py``): in slices, each to the
queue and under the producer id its place in the task gives it, so that a replay sends the same
record batches and the broker answers those it stored before. A row that cannot become a message (no body, a reserved property name, a bad tag) fails
the task with the producer's typed error, naming the row (its place in its Arrow batch); the
``sendBatchSize`` option does not apply (the producer sizes the batches by bytes). The
guarantees and a stream's replay rule are ``_sink.py``'s.

Caller: Spark's Python workers (``DataSourceArrowWriter.write``,
``DataSourceStreamArrowWriter.write``) through the data source (``_writers.py``); the driver
for a micro-batch's commit.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
)

from aeromq.client import MessageQueue
from aeromq.pipeline._errors import OptionError
from aeromq.pipeline._exactly_once import TopicWriter, sink_producer
from aeromq.pipeline._options import SinkOptions
from aeromq.pipeline._sink import (
    IN_FLIGHT,
    SEND_TIMEOUT_S,
    SinkCommit,
    StreamCommits,
    StreamTask,
    write_micro_batch,
)
from aeromq.producer import ColumnSendResults, Producer

__all__ = [
    "AeromqArrowBatchWriter",
    "AeromqArrowStreamWriter",
    "send_batches",
    "send_exactly_once",
]


def _topics(batch: pa.RecordBatch, default: str | None) -> list[tuple[str, pa.RecordBatch]]:
    """The rows of each topic of ``batch`` (its ``topic`` column, nulls and empties taking
    ``default``), the whole batch when it has one topic."""
    if "topic" not in batch.schema.names:
        if not default:
            raise OptionError("no topic: give the topic option or a topic column")
        return [(default, batch)]
    topics = batch.column("topic")
    topics = pc.if_else(pc.equal(topics, ""), pa.scalar(None, topics.type), topics)
    if default:
        topics = pc.fill_null(topics, default)
    if topics.null_count:
        raise OptionError("no topic: give the topic option or a topic column")
    names = pc.unique(topics).to_pylist()
    if len(names) == 1:
        return [(names[0], batch)]
    return [(name, batch.filter(pc.equal(topics, name))) for name in names]


def _first_topic(batch: pa.RecordBatch) -> str | None:
    """The topic of the batch's first row (None: no rows)."""
    return _topics(batch.slice(0, 1), None)[0][0] if batch.num_rows else None


def _send(
    producer: Producer, topic: str, batch: pa.RecordBatch, queue: MessageQueue | None = None
) -> Future[ColumnSendResults]:
    """One Arrow batch's rows of one topic, as columns (to ``queue``, else round robin)."""
    names = batch.schema.names
    keys = batch.column("keys") if "keys" in names else None
    if "key" in names:
        key = batch.column("key")
        keys = key if keys is None else pc.coalesce(keys, key)
    return producer.send_columns_async(
        topic,
        batch.column("body"),
        tags=batch.column("tags") if "tags" in names else None,
        keys=keys,
        properties=batch.column("properties") if "properties" in names else None,
        queue=queue,
    )


def _checked(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch``, which has a body column (else OptionError)."""
    if "body" not in batch.schema.names:
        raise OptionError("the sink needs a body column", columns=sorted(batch.schema.names))
    return batch


def send_batches(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> int:
    """Send every row of ``batches``; returns how many. Raises the producer's error of the first
    failure (or OptionError: no body column, no topic)."""
    count = 0
    in_flight: deque[Future[ColumnSendResults]] = deque()
    with sink_producer(options) as producer:
        for batch in batches:
            if not batch.num_rows:
                continue
            for topic, rows in _topics(_checked(batch), options.topic):
                in_flight.append(_send(producer, topic, rows))
                if len(in_flight) >= IN_FLIGHT:
                    in_flight.popleft().result(SEND_TIMEOUT_S)
            count += batch.num_rows
        for future in in_flight:
            future.result(SEND_TIMEOUT_S)
    return count


def send_exactly_once(
    options: SinkOptions, batches: Iterator[pa.RecordBatch], task: StreamTask
) -> int:
    """Send every row of ``batches`` as stream task ``task``, so that sending them again as
    that task stores nothing twice (``_exactly_once.py``); returns how many. Raises as
    :func:`send_batches`."""
    count = 0
    writers: dict[str, TopicWriter] = {}
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            for topic, rows in _topics(_checked(batch), options.topic):
                writer = writers.get(topic)
                if writer is None:
                    writer = writers[topic] = TopicWriter(options, topic, task, _send)
                writer.add(rows)
            count += batch.num_rows
        for writer in writers.values():
            writer.finish()
    finally:
        for writer in writers.values():
            writer.close()
    return count


class AeromqArrowBatchWriter(DataSourceArrowWriter):
    """``df.write.format("aeromq")``: at least once (``_sink.py``)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        return SinkCommit(send_batches(self.options, iterator), self.options.topic)


class AeromqArrowStreamWriter(DataSourceStreamArrowWriter, StreamCommits):
    """``df.writeStream.format("aeromq")``: exactly once (``_sink.py``, ``_exactly_once.py``)."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        return write_micro_batch(self.options, iterator, _first_topic, send_exactly_once)
