"""The one way the connector reads the broker: a queue range as ``pyarrow.RecordBatch``\\es of
the row schema (:mod:`pipeline._schema`).

:func:`read_queue_range` opens a reader for (endpoints, topic, broker, queue id, start offset,
end offset, sub expression) and yields record batches of the messages in ``[start, end)`` that
match the expression, in offset order, then closes. It rides on the public
``DefaultLitePullConsumer`` API (assign the one queue, seek, ``poll_batch()``): each Arrow column
is made from the pulled record batches' columns (``consumer.MessageBatch``), without a Python
object per message (the ``properties`` map, asked for with ``includeProperties``, is the
exception: it parses each message's properties).

Tag filtering is done here, on the tags of the pulled messages, so that every offset of the
range is seen and the end of the range is known without asking the broker again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Final

import numpy as np
import pyarrow as pa

from aeromq.client import MessageQueue, OffsetIllegalError, build_subscription_data
from aeromq.common import PROPERTY_KEYS, RESERVED_PROPERTY_NAMES
from aeromq.consumer import (
    ConsumeFromWhere,
    DefaultLitePullConsumer,
    LitePullConsumerConfig,
    MessageBatch,
)
from aeromq.pipeline._errors import DataLossError, ReadTimeoutError
from aeromq.pipeline._schema import arrow_schema

__all__ = ["READER_GROUP", "read_queue_range"]

READER_GROUP: Final = "aeromq-spark-reader"
"""The consumer group the readers' consumers are created with. They ``assign`` their queue and
never commit, so the group holds no offsets and joins no rebalance."""

_POLL_TIMEOUT_MS: Final = 500
_MAX_POLL_RECORDS: Final = 8192


def read_queue_range(
    endpoints: Sequence[str],
    topic: str,
    broker: str,
    queue_id: int,
    start_offset: int,
    end_offset: int,
    sub_expression: str = "*",
    *,
    include_properties: bool = False,
    fail_on_data_loss: bool = True,
    read_timeout_ms: int = 60_000,
    pull_batch_size: int = 1024,
) -> Iterator[pa.RecordBatch]:
    """Yield the range's matching messages as record batches (up to 8,192 rows each).

    Raises :class:`~pipeline.DataLossError` when ``start_offset`` (or a later offset of the
    range) is no longer on the broker and ``fail_on_data_loss``; otherwise reads on from what
    is left. Raises :class:`~pipeline.ReadTimeoutError` when no message arrives for
    ``read_timeout_ms`` before the end."""
    if end_offset <= start_offset:
        return
    queue = MessageQueue(topic, broker, queue_id)
    subscription = build_subscription_data(topic, sub_expression)
    schema = arrow_schema(include_properties)
    config = LitePullConsumerConfig(
        consumer_group=READER_GROUP,
        endpoints=tuple(endpoints),
        consume_from_where=ConsumeFromWhere.LAST_OFFSET,
        auto_commit=False,
        pull_batch_size=max(1, min(1024, pull_batch_size, end_offset - start_offset)),
        pull_threshold_for_queue=max(1024, min(65535, 4 * pull_batch_size)),
        max_poll_records=_MAX_POLL_RECORDS,
        poll_timeout_ms=_POLL_TIMEOUT_MS,
    )
    consumer = DefaultLitePullConsumer(config=config)
    consumer.assign([queue])
    consumer.start()
    codes = (
        None
        if subscription.is_sub_all
        else np.fromiter(subscription.codes, dtype=np.int64, count=len(subscription.codes))
    )
    try:
        expected = _seek(consumer, queue, start_offset, fail_on_data_loss)
        deadline = time.monotonic() + read_timeout_ms / 1000.0
        while expected < end_offset:
            batch = consumer.poll_batch(_POLL_TIMEOUT_MS, _MAX_POLL_RECORDS)
            if not len(batch):
                if time.monotonic() > deadline:
                    raise ReadTimeoutError(
                        "queue range stopped arriving",
                        queue=str(queue),
                        next_offset=expected,
                        end_offset=end_offset,
                        read_timeout_ms=read_timeout_ms,
                    )
                continue
            deadline = time.monotonic() + read_timeout_ms / 1000.0
            offsets = batch.queue_offsets
            keep = (offsets >= expected) & (offsets < end_offset)  # not again after the seek
            kept = offsets[keep]
            if fail_on_data_loss and len(kept):
                gaps = np.flatnonzero(np.diff(np.r_[expected - 1, kept]) > 1)
                if len(gaps):
                    at = int(gaps[0])
                    raise DataLossError(
                        "messages were removed from the queue during the read",
                        queue=str(queue),
                        expected_offset=int(kept[at - 1]) + 1 if at else expected,
                        next_offset=int(kept[at]),
                    )
            if len(kept):
                expected = int(kept[-1]) + 1
            if int(offsets[-1]) >= end_offset:  # one queue's offsets ascend: the range is read
                expected = end_offset
            if codes is not None:
                keep &= np.isin(batch.tag_hashes, codes)
                if keep.any():  # the tag strings of the hash matches, as the consumer's filter
                    tags = batch.tag_array().to_pylist()
                    keep &= np.fromiter(
                        (tag in subscription.tags for tag in tags), dtype=bool, count=len(tags)
                    )
            if keep.any():
                yield _to_batch(
                    batch if keep.all() else batch.select(keep), schema, include_properties
                )
    finally:
        consumer.shutdown()


def _seek(
    consumer: DefaultLitePullConsumer, queue: MessageQueue, offset: int, fail_on_data_loss: bool
) -> int:
    """Seek to ``offset``; below the min offset: fail, or start at the min offset."""
    try:
        consumer.seek(queue, offset)
        return offset
    except OffsetIllegalError as exc:
        min_offset = int(exc.values.get("min_offset", 0))
        if offset >= min_offset:
            raise
        if fail_on_data_loss:
            raise DataLossError(
                "offset is below the queue's min offset (removed by retention); set "
                "failOnDataLoss=false to read on from the min offset",
                queue=str(queue),
                offset=offset,
                min_offset=min_offset,
            ) from exc
        consumer.seek(queue, min_offset)
        return min_offset


def _to_batch(batch: MessageBatch, schema: pa.Schema, include_properties: bool) -> pa.RecordBatch:
    """One record batch of the row schema from messages of one queue, column by column."""
    count = len(batch)
    first = batch[0]
    timestamp = pa.timestamp("us", tz="UTC")
    columns: list[pa.Array] = [
        pa.repeat(pa.scalar(first.topic, pa.string()), count),
        pa.repeat(pa.scalar(first.broker_name, pa.string()), count),
        pa.array(batch.queue_ids),
        pa.array(batch.queue_offsets),
        batch.property_array(PROPERTY_KEYS),
        batch.tag_array(),
        batch.body_array(),
    ]
    if include_properties:
        columns.append(
            pa.array(
                [
                    [(k, v) for k, v in m.properties.items() if k not in RESERVED_PROPERTY_NAMES]
                    for m in batch
                ],
                schema.field("properties").type,
            )
        )
    columns.append(pa.array(batch.born_timestamps_ms * 1000, timestamp))
    columns.append(pa.array(batch.store_timestamps_ms * 1000, timestamp))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
