"""What the sink's writers share: the commit message of a task, and a stream's replay rule.

Guarantees. Batch writes are at least once: a task that Spark retries after a failure sends its
rows again. Stream writes are exactly once, in two steps. A replayed micro-batch whose write
already completed (the sink committed it, but the query stopped before Spark's own commit log
recorded it) sends nothing: the sink records each completed micro-batch on the broker, as the
committed offset ``batchId + 1`` of the group ``aeromq-sink-<queryId>`` on queue 0 of the sink's
topic (:func:`record_completed`; a marker group, whose offset the broker does not bound by the
queue's max offset: queue 0 may hold fewer messages than there were batches, their rows sent to
other queues), and a task skips a batch whose id is below it (:func:`completed_before`). A
micro-batch that stopped part way (the driver killed in the middle of it) is sent again when
replayed, by tasks whose producer ids and sequences are the ones the first run used
(``_exactly_once.py``), so the broker answers what it stored then instead of storing it twice.
The Row writers (a PySpark without Arrow writers) have only the first step: at least once.

Caller: the Arrow writers (``_writers.py``) and the Row writers of older PySpark
(``_row_writers.py``), on the executors (a task's write) and on the driver (a batch's commit).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Final, TypeVar

from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage

from aeromq.common import MARKER_GROUP_PREFIX
from aeromq.pipeline._errors import OptionError
from aeromq.pipeline._metadata import BrokerMetadata
from aeromq.pipeline._options import SinkOptions

__all__ = [
    "IN_FLIGHT",
    "SEND_TIMEOUT_S",
    "SinkCommit",
    "StreamCommits",
    "StreamTask",
    "completed_before",
    "marker_group",
    "record_completed",
    "stream_batch",
    "write_micro_batch",
]

IN_FLIGHT: Final = 8
"""Sends a task keeps in flight."""
SEND_TIMEOUT_S: Final = 60.0
_BATCH_ID_PROPERTY: Final = "streaming.sql.batchId"
_QUERY_ID_PROPERTY: Final = "sql.streaming.queryId"

_Item = TypeVar("_Item")


@dataclass(frozen=True, slots=True)
class StreamTask:
    """The task of a streaming query's micro-batch that writes now."""

    query_id: str
    batch_id: int
    partition_id: int


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
    return f"{MARKER_GROUP_PREFIX}{query_id}"


def stream_batch() -> StreamTask:
    """The streaming query's id, the micro-batch id and the partition of the task running now.
    Raises OptionError outside a streaming query."""
    context = TaskContext.get()
    batch_raw = context.getLocalProperty(_BATCH_ID_PROPERTY) if context else None
    query_id = context.getLocalProperty(_QUERY_ID_PROPERTY) if context else None
    if context is None or batch_raw is None or query_id is None:
        raise OptionError("the stream writer runs only inside a streaming query")
    return StreamTask(query_id, int(batch_raw), context.partitionId())


def completed_before(options: SinkOptions, topic: str, query_id: str, batch_id: int) -> bool:
    """Whether micro-batch ``batch_id`` of the query completed before (a replay: send nothing)."""
    with BrokerMetadata(options.endpoints) as metadata:
        done = metadata.committed(marker_group(query_id), metadata.queues(topic)[0])
    return batch_id < done


def record_completed(
    options: SinkOptions, messages: list[WriterCommitMessage | None], batch_id: int
) -> None:
    """Record micro-batch ``batch_id`` as completed (the driver's commit of the batch)."""
    done = [m for m in messages if isinstance(m, SinkCommit) and m.topic and m.query_id]
    if not done:
        return
    first = done[0]
    assert first.topic is not None and first.query_id is not None
    with BrokerMetadata(options.endpoints) as metadata:
        marker = metadata.queues(first.topic)[0]
        metadata.commit_group(marker_group(first.query_id), {marker: batch_id + 1})


def write_micro_batch(
    options: SinkOptions,
    items: Iterator[_Item],
    topic_of: Callable[[_Item], str | None],
    send: Callable[[SinkOptions, Iterator[_Item], StreamTask], int],
) -> SinkCommit:
    """A stream task's write: nothing sent when its micro-batch completed before, else every
    item sent with ``send`` (as that task). Without a topic option the marker lives on the topic
    of the first item ``topic_of`` names one for (None: an empty item, skipped)."""
    task = stream_batch()
    query_id, batch_id = task.query_id, task.batch_id
    topic = options.topic
    if topic is None:
        for first in items:
            topic = topic_of(first)
            if topic is not None:
                items = chain([first], items)
                break
        else:
            return SinkCommit(0, None, query_id, batch_id)
    if completed_before(options, topic, query_id, batch_id):
        return SinkCommit(0, topic, query_id, batch_id, skipped=True)
    return SinkCommit(send(options, items, task), topic, query_id, batch_id)


class StreamCommits(DataSourceStreamWriter):
    """The driver's side of a stream writer: a micro-batch's commit records it as completed
    (:func:`record_completed`); an abort undoes nothing (what the tasks sent is stored, and a
    replay sends the batch again). The Arrow and Row stream writers add their ``write``."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        record_completed(self.options, messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to undo: what the tasks sent is stored; a replay sends the batch again."""
