"""The sink's Row writers, for PySpark without the Arrow writers (before 4.1, below aeromq's
supported floor): each row a :class:`~client.Message`, sent with one
:class:`~producer.Producer` per task in batches of ``sendBatchSize`` messages of one topic,
eight batches in flight, every acknowledgement awaited before the task reports success; a row
that cannot become a message (no body, a reserved property name, a bad tag) fails the task with
the producer's typed error. The guarantees and a stream's replay rule are ``_sink.py``'s.

Caller: Spark's Python workers, through the data source's writers (``_writers.py`` hands these
to Spark only when its PySpark has no Arrow writer).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceWriter

from aeromq.client import Message
from aeromq.pipeline._errors import OptionError
from aeromq.pipeline._exactly_once import sink_producer
from aeromq.pipeline._options import SinkOptions
from aeromq.pipeline._sink import (
    IN_FLIGHT,
    SEND_TIMEOUT_S,
    SinkCommit,
    StreamCommits,
    write_micro_batch,
)
from aeromq.producer import SendResult

__all__ = ["AeromqRowBatchWriter", "AeromqRowStreamWriter", "send_rows"]


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
    with sink_producer(options) as producer:

        def flush(batch: list[Message]) -> None:
            in_flight.append(producer.send_batch_async(batch))
            if len(in_flight) >= IN_FLIGHT:
                in_flight.pop(0).result(SEND_TIMEOUT_S)

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
            future.result(SEND_TIMEOUT_S)
    return count


class AeromqRowBatchWriter(DataSourceWriter):
    """``df.write.format("aeromq")`` on PySpark without Arrow writers: at least once."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Row]) -> SinkCommit:
        return SinkCommit(send_rows(self.options, iterator), self.options.topic)


class AeromqRowStreamWriter(StreamCommits):
    """``df.writeStream.format("aeromq")`` on PySpark without Arrow writers: replays of
    completed micro-batches send nothing (``_sink.py``)."""

    def write(self, iterator: Iterator[Row]) -> SinkCommit:
        return write_micro_batch(
            self.options,
            iterator,
            lambda row: _message(row, None).topic,
            lambda options, rows, _task: send_rows(options, rows),  # at least once
        )
