"""The size of one message stored alone: a one-record batch (``common/_record_batch.py``).

The broker's config sizes the store's record cap with it (the largest body a client may send,
with the longest topic and properties, must fit a segment). The commit log stores batches
(``_commit_log.py``); there is no per-message record format any more.
"""

from __future__ import annotations

from aeromq.broker.store._batch_codec import MAX_PROPERTIES_LENGTH
from aeromq.common._record_batch import MAX_TOPIC_LENGTH, RECORD_OVERHEAD, batch_header_length

__all__ = ["MAX_PROPERTIES_LENGTH", "MAX_TOPIC_LENGTH", "record_length"]


def record_length(body_length: int, topic_length: int, properties_length: int) -> int:
    """The stored size of a batch of one message with these variable parts (its tags
    counted among its properties, as RocketMQ's TAGS property is)."""
    return batch_header_length(topic_length) + RECORD_OVERHEAD + body_length + properties_length
