"""Reading a pull's answer: the stored record batches, checked and cut to what was asked.

A FOUND answer carries whole stored batches (:mod:`common._record_batch`); this keeps, of each,
the records in ``[offset, next_begin_offset)`` that match the subscription, as a
:class:`~consumer.message_batch.MessageBatch`, without a Python object per message. Each batch is
checked once (framing and its CRC, one zlib call); one that fails raises
:class:`~client.CorruptMessageError` naming the queue and offsets, and nothing of the answer is
delivered.

Tags: the broker filtered on tag hash codes; here the hash column is filtered again (a batch
holds other records too) and, as RocketMQ's client does, the tag strings of the records whose
hash matched are compared, so a hash collision never delivers a foreign tag.
"""

from __future__ import annotations

import numpy as np

from aeromq.client import CorruptMessageError, MessageQueue, SubscriptionData
from aeromq.common import BATCH_MAGIC, BatchCheck, RecordBatch, check_batch, read_total_length
from aeromq.consumer.message_batch import MessageBatch, MessageBatchPart

__all__ = ["read_pulled_batches"]

_MIN_BATCH_LENGTH = 8


def read_pulled_batches(
    data: bytes,
    queue: MessageQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: SubscriptionData | None,
) -> MessageBatch:
    """The messages of ``data`` (a pull's ``batches``) that the consumer asked for (see
    module); raises :class:`~client.CorruptMessageError`."""
    parts: list[MessageBatchPart] = []
    codes = None
    tags = None
    if subscription is not None and subscription.tags:
        codes = np.fromiter(subscription.codes, dtype=np.int64)
        tags = frozenset(subscription.tags)
    view = memoryview(data)
    position = 0
    end = len(data)
    while position < end:
        if end - position < _MIN_BATCH_LENGTH:
            raise _corrupt("a truncated batch", queue, offset, position, end)
        length, magic = read_total_length(data, position)
        if magic != BATCH_MAGIC or length <= _MIN_BATCH_LENGTH or position + length > end:
            raise _corrupt("a broken batch header", queue, offset, position, end)
        piece = view[position : position + length]
        check, problem = check_batch(piece, check_content=False)
        if check is not BatchCheck.OK:
            raise _corrupt(problem, queue, offset, position, end)
        batch = RecordBatch(piece)
        if batch.queue_id != queue.queue_id or batch.topic != queue.topic:
            raise _corrupt(
                f"a batch of another queue: topic={batch.topic!r} queue_id={batch.queue_id}",
                queue,
                offset,
                position,
                end,
            )
        base = batch.base_queue_offset
        first = max(offset - base, 0)
        last = min(next_offset - base, batch.count)
        position += length
        if last <= first:
            continue
        indexes = np.arange(first, last, dtype=np.int64)
        if codes is not None:
            indexes = indexes[np.isin(batch.tag_hashes[first:last], codes)]
            if len(indexes) and tags is not None:
                indexes = np.fromiter(
                    (i for i in indexes.tolist() if batch.tag(i) in tags), dtype=np.int64
                )
        if len(indexes):
            parts.append(MessageBatchPart(batch, indexes, broker_name, queue))
    return MessageBatch(parts)


def _corrupt(
    problem: str, queue: MessageQueue, offset: int, position: int, length: int
) -> CorruptMessageError:
    return CorruptMessageError(
        f"pulled record batch failed its check: {problem}",
        topic=queue.topic,
        broker=queue.broker_name,
        queue_id=queue.queue_id,
        pull_offset=offset,
        batch_position=position,
        response_length=length,
    )
