"""A pull's answer read for ``poll``: a small one straight into ``MessageExt`` objects, a larger
one as a :class:`~consumer.MessageBatch` of columns.

A consumer keeping up pulls one message at a time. Read into columns, such a message cost
eleven numpy views, a chunk and a batch object, and then a numpy read for each field ``poll``'s
caller and the consumer's bookkeeping asked (about 60 calls of Python functions a message,
``python -m bench profile``). An answer of at most :data:`SMALL_PULL_RECORDS` records in the
pulled range (and :data:`SMALL_PULL_BYTES` bytes) is read instead by one native call into
plain ``MessageExt`` objects, every field set (:func:`~common.record_batch.read_pulled_records`,
``_message_reader.c``), and the consumer's bookkeeping reads their offsets as ints
(``process_queue``). Larger answers, SQL92
subscriptions (whose filter reads the properties of every record anyway) and answers the
native pass does not take (compressed, failing a check: the column reader raises the typed
error) keep the column path.

The small path's list is a :class:`~consumer.message_batch.PulledMessages`: it keeps the
answer, so ``poll_batch`` reads it as columns again (:func:`~consumer.as_message_batch`)
rather than encoding the messages back into a batch.

Caller: the broker API's pull callback (``consumer/_grpc_broker_api.py``), on the thread that
read the answer. No I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from aeromq.client import ExpressionType, MessageExt, MessageQueue, SubscriptionData
from aeromq.common.record_batch import read_pulled_records
from aeromq.consumer.message_batch import PulledMessages, read_pulled_batches

__all__ = ["SMALL_PULL_BYTES", "SMALL_PULL_RECORDS", "read_pulled_messages"]

SMALL_PULL_RECORDS: Final = 16
"""An answer with at most this many records in the pulled range is read into ``MessageExt``
objects (the default ``pull_batch_size`` is 10); a larger one into columns."""
SMALL_PULL_BYTES: Final = 65_536
"""An answer of more bytes goes to the column reader without the native message reader's try
(a drain's answers of hundreds of records: the try would read its framing twice)."""


def read_pulled_messages(
    data: bytes,
    queue: MessageQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: SubscriptionData | None,
) -> Sequence[MessageExt]:
    """The messages of ``data`` (a pull's ``batches``) in ``[offset, next_offset)`` of
    ``queue`` that ``subscription`` selects (see module); raises
    :class:`~client.CorruptMessageError` as :func:`~consumer.read_pulled_batches` does."""
    if len(data) <= SMALL_PULL_BYTES and (
        subscription is None or subscription.expression_type is not ExpressionType.SQL92
    ):
        records = read_pulled_records(
            data, queue, broker_name, offset, next_offset, SMALL_PULL_RECORDS, MessageExt
        )
        if records is not None:
            messages = PulledMessages(records)
            tags = None if subscription is None else subscription.tags
            if tags:  # as the column reader: the tag string is one of the subscription's
                messages[:] = [message for message in records if message.tags in tags]
            messages.answer = (data, queue, broker_name, offset, next_offset, subscription)
            return messages
    return read_pulled_batches(data, queue, broker_name, offset, next_offset, subscription)
