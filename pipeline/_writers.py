"""The sink: the batch writer and the stream writer of the ``aeromq`` data source.

Each Spark task sends its rows with one :class:`~producer.Producer`, in batches of
``sendBatchSize`` messages of one topic, eight batches in flight, and waits for every
acknowledgement before it reports success; a row that cannot become a message (no body, a
reserved property name, a bad tag) fails the task with the producer's typed error.

Guarantees. Batch writes are at least once: a task that Spark retries after a failure sends its
rows again. The stream writer makes replayed micro-batches idempotent: when Spark restarts a
query and replays a micro-batch whose write already completed (the sink committed it, but the
query stopped before Spark's own commit log recorded it), the replay sends nothing. The sink
records each completed micro-batch on the broker, as the committed offset ``batchId + 1`` of the
group ``aeromq-sink-<queryId>`` on queue 0 of the sink's topic, and a task skips a batch whose
id is below it. A micro-batch that failed part way is written again in full when replayed, so
its rows may appear twice: at least once, exactly once for completed batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from itertools import chain
from typing import Any, Final

from pyspark import TaskContext
from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from aeromq.client import Message
from aeromq.pipeline._errors import OptionError
from aeromq.pipeline._metadata import BrokerMetadata
from aeromq.pipeline._options import SinkOptions
from aeromq.producer import Producer, SendResult

__all__ = ["AeromqBatchWriter", "AeromqStreamWriter", "SinkCommit", "marker_group"]

_IN_FLIGHT: Final = 8
_SEND_TIMEOUT_S: Final = 60.0
_BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
_QUERY_ID_PROPERTY: Final = "sql.streaming.queryId"


@dataclass
class SinkCommit(WriterCommitMessage):
    """What one task wrote: its row count, the sink topic, and in a stream its query and
    batch (``skipped``: a replay of a completed batch, nothing sent)."""

    rows: int
    topic: str | None = None
    query_id: str | None = None
    batch_id: int | None = None
    skipped: bool = False


def marker_group(query_id: str) -> str:
    """The group whose offset on the sink topic records a query's completed micro-batches."""
    return f"aeromq-sink-{query_id}"


def _message(row: Row, default_topic: str | None) -> Message:
    values: Mapping[str, Any] = row.asDict()
    if "body" not in values:
        raise OptionError("the sink needs a body column", columns=sorted(values))
    body = values["body"]
    if isinstance(body, str):
        body = body.encode()
    topic = values.get("topic") or default_topic
    if not topic:
        raise OptionError("no topic: give the topic option or a topic column")
    keys = values.get("keys") if values.get("keys") is not None else values.get("key")
    return Message(
        topic,
        body,
        tags=values.get("tags") or None,
        keys=keys or (),
        properties=dict(values.get("properties") or {}),
    )


def send_rows(options: SinkOptions, rows: Iterator[Row]) -> int:
    """Send every row; returns how many. Raises the producer's error of the first failure."""
    pending: dict[str, list[Message]] = {}
    in_flight: list[Future[Sequence[SendResult]]] = []
    count = 0
    with Producer(options.producer_group, options.endpoints) as producer:

        def flush(batch: list[Message]) -> None:
            in_flight.append(producer.send_batch_async(batch))
            if len(in_flight) >= _IN_FLIGHT:
                in_flight.pop(0).result(_SEND_TIMEOUT_S)

        for row in rows:
            message = _message(row, options.topic)
            batch = pending.setdefault(message.topic, [])
            batch.append(message)
            count += 1
            if len(batch) >= options.send_batch_size:
                flush(pending.pop(message.topic))
        for batch in pending.values():
            flush(batch)
        for future in in_flight:
            future.result(_SEND_TIMEOUT_S)
    return count


class AeromqBatchWriter(DataSourceWriter):
    """``df.write.format("aeromq")``: at least once (see the module)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Row]) -> SinkCommit:
        return SinkCommit(send_rows(self.options, iterator), self.options.topic)


class AeromqStreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("aeromq")``: replays of completed micro-batches send nothing
    (see the module)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Row]) -> SinkCommit:
        context = TaskContext.get()
        batch_raw = context.getLocalProperty(_BATCH_ID_PROPERTY) if context else None
        query_id = context.getLocalProperty(_QUERY_ID_PROPERTY) if context else None
        if batch_raw is None or query_id is None:
            raise OptionError("the stream writer runs only inside a streaming query")
        batch_id = int(batch_raw)
        topic = self.options.topic
        if topic is None:  # the marker lives on the first row's topic
            first = next(iterator, None)
            if first is None:
                return SinkCommit(0, None, query_id, batch_id)
            topic = _message(first, None).topic
            iterator = chain([first], iterator)
        with BrokerMetadata(self.options.endpoints) as metadata:
            done = metadata.committed(marker_group(query_id), metadata.queues(topic)[0])
        if batch_id < done:
            return SinkCommit(0, topic, query_id, batch_id, skipped=True)
        return SinkCommit(send_rows(self.options, iterator), topic, query_id, batch_id)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        done = [m for m in messages if isinstance(m, SinkCommit) and m.topic and m.query_id]
        if not done:
            return
        first = done[0]
        assert first.topic is not None and first.query_id is not None
        with BrokerMetadata(self.options.endpoints) as metadata:
            marker = metadata.queues(first.topic)[0]
            metadata.commit_group(marker_group(first.query_id), {marker: batchId + 1})

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to undo: what the tasks sent is stored; a replay sends the batch again."""
