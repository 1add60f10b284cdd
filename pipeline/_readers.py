"""The batch reader and the stream reader of the ``aeromq`` data source.

Both plan on the driver with :class:`~pipeline._metadata.BrokerMetadata` (routes and offsets
over gRPC) and read on the executors through :func:`~pipeline._queue_reader.read_queue_range`,
one Spark partition per queue range. Spark pickles a reader to send it to the executors, so a
reader holds only its options (and, in a stream, the ``Trigger.AvailableNow`` target).

Stream offsets are ``{"topic": {"broker:queueId": next offset}}``, keys sorted
(:mod:`pipeline._planning`). A queue that appears in a topic while a query runs enters the next
micro-batch from its min offset. With the ``group`` option, what Spark has finished becomes the
group's committed offsets, so ``aeromq admin`` shows the query's lag; the query itself restarts
from its checkpoint, never from the group.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from aeromq.pipeline._metadata import BrokerMetadata
from aeromq.pipeline._options import SourceOptions
from aeromq.pipeline._planning import (
    Offsets,
    QueueRange,
    admit,
    offsets_from_json,
    offsets_to_json,
    split_ranges,
)
from aeromq.pipeline._queue_reader import read_queue_range
from aeromq.pipeline._resolve import check_data_loss, ending_offsets, queues_of, starting_offsets

__all__ = ["AeromqBatchReader", "AeromqStreamReader"]


def _partitions(options: SourceOptions, starts: Offsets, ends: Offsets) -> list[InputPartition]:
    ranges = [
        QueueRange(q.topic, q.broker_name, q.queue_id, starts[q], max(starts[q], ends[q]))
        for q in sorted(ends)
        if q in starts
    ]
    return [InputPartition(r) for r in split_ranges(ranges, options.min_partitions)]


def _read(options: SourceOptions, partition: InputPartition | None) -> Iterator[pa.RecordBatch]:
    """The rows of ``partition``'s queue range; none for the one partition without a value
    that PySpark reads when :meth:`partitions` planned none (every queue empty)."""
    queue_range: QueueRange | None = None if partition is None else partition.value
    if queue_range is None:
        return iter(())
    return read_queue_range(
        options.endpoints,
        queue_range.topic,
        queue_range.broker,
        queue_range.queue_id,
        queue_range.start,
        queue_range.end,
        options.sub_expression,
        include_properties=options.include_properties,
        fail_on_data_loss=options.fail_on_data_loss,
        read_timeout_ms=options.read_timeout_ms,
        pull_batch_size=options.pull_batch_size,
        local_reads=options.local_reads,
    )


class AeromqBatchReader(DataSourceReader):
    """``spark.read.format("aeromq")``: the queues' ranges from the starting to the ending
    offsets, as of planning."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        options = self.options
        with BrokerMetadata(options.endpoints) as metadata:
            queues = queues_of(options, metadata)
            starts = starting_offsets(options, queues, metadata)
            starts = check_data_loss(options, starts, metadata)
            ends = ending_offsets(options, queues, metadata)
        return _partitions(options, starts, ends)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)


class AeromqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("aeromq")``, with admission control (``maxOffsetsPerTrigger``)
    and ``Trigger.AvailableNow``."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._target: Offsets | None = None
        self._committed: Offsets = {}  # what the group holds, as far as this reader set it

    def initialOffset(self) -> dict[str, dict[str, int]]:  # noqa: N802 (Spark's name)
        options = self.options
        with BrokerMetadata(options.endpoints) as metadata:
            queues = queues_of(options, metadata)
            return offsets_to_json(starting_offsets(options, queues, metadata))

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 (Spark's name)
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark's name)
        """Fix the end of an ``availableNow`` run: every queue's max offset now."""
        with BrokerMetadata(self.options.endpoints) as metadata:
            self._target = metadata.max_offsets(queues_of(self.options, metadata))

    def latestOffset(  # noqa: N802 (Spark's name)
        self, start: dict[str, dict[str, int]], limit: ReadLimit
    ) -> dict[str, dict[str, int]]:
        begin = offsets_from_json(start)
        with BrokerMetadata(self.options.endpoints) as metadata:
            self._commit_group(metadata, begin)
            if self._target is not None:
                latest = dict(self._target)
            else:
                latest = metadata.max_offsets(queues_of(self.options, metadata))
            for queue in latest.keys() - begin.keys():  # new queues start at their min offset
                begin[queue] = metadata.min_offset(queue)
        for queue, offset in begin.items():  # never move back, never forget a queue
            latest[queue] = max(offset, latest.get(queue, offset))
        if isinstance(limit, ReadMaxRows):
            return offsets_to_json(admit(begin, latest, limit.max_rows))
        return offsets_to_json(latest)

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:  # noqa: N802 (Spark's name)
        with BrokerMetadata(self.options.endpoints) as metadata:
            return offsets_to_json(metadata.max_offsets(queues_of(self.options, metadata)))

    def partitions(
        self, start: dict[str, dict[str, int]], end: dict[str, dict[str, int]]
    ) -> Sequence[InputPartition]:
        begin = offsets_from_json(start)
        stop = offsets_from_json(end)
        with BrokerMetadata(self.options.endpoints) as metadata:
            for queue in stop.keys() - begin.keys():
                begin[queue] = metadata.min_offset(queue)
            moving = {q: o for q, o in begin.items() if stop.get(q, o) > o}
            begin.update(check_data_loss(self.options, moving, metadata))
        return _partitions(self.options, begin, stop)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)

    def commit(self, end: dict[str, dict[str, int]]) -> None:
        if self.options.group is not None:
            with BrokerMetadata(self.options.endpoints) as metadata:
                self._commit_group(metadata, offsets_from_json(end))

    def _commit_group(self, metadata: BrokerMetadata, offsets: Offsets) -> None:
        """Set the ``group``'s offsets to what Spark has finished. Spark calls ``commit`` for a
        micro-batch only when it plans the next one, so the last batch of a run (an
        ``availableNow`` run above all) is committed here too: ``latestOffset`` is asked from
        the end of the last finished batch."""
        changed = {q: o for q, o in offsets.items() if self._committed.get(q) != o}
        if self.options.group is not None and changed:
            metadata.commit_group(self.options.group, changed)
            self._committed.update(changed)

    def stop(self) -> None:
        """Nothing to release: every call opens and closes its own gRPC clients."""
