"""``DeadLetterProcessor``: the admin's view of a queue's messages and the re-send of a
dead-lettered message to the topic it first came from (``aeromq admin dlq``).

- :meth:`DeadLetterProcessor.view`: the stored messages of one queue from an offset, oldest
  first (a ``%DLQ%<group>`` topic is read like any other; nobody consumes it);
- :meth:`DeadLetterProcessor.resend`: the message at (topic, queue, offset) of a dead-letter
  topic written again to its ``RETRY_TOPIC`` (the first topic; a message that has none is
  refused), with the retry properties dropped and its reconsume times back at 0, on the queue
  ``offset % write queues`` of that topic. The dead-letter copy stays (a queue is an append-only
  log); the admin re-sends each message once.

Caller: the control plane (gRPC threads). Affects: the store (one put per re-send).
"""

from __future__ import annotations

from typing import Final

from aeromq.broker._errors import InvalidArgumentError, UnknownTopicError
from aeromq.broker.processor.send_back import StoredCopy, put_copy
from aeromq.broker.store import MessageStore, StoredMessage
from aeromq.common import (
    DLQ_TOPIC_PREFIX,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
)

__all__ = ["DEFAULT_VIEW_COUNT", "DeadLetterProcessor"]

DEFAULT_VIEW_COUNT: Final = 32
_RETRY_PROPERTIES: Final = (
    PROPERTY_RETRY_TOPIC,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_DELAY_TIME_LEVEL,
)


class DeadLetterProcessor:
    """See the module."""

    def __init__(self, store: MessageStore) -> None:
        self._store = store

    def view(self, topic: str, queue_id: int, offset: int, max_count: int) -> list[StoredMessage]:
        """Up to ``max_count`` (0: 32) messages of the queue from ``offset`` on."""
        config = self._store.topic_config.require(topic)
        if not 0 <= queue_id < config.read_queue_nums:
            raise InvalidArgumentError("no such queue", topic=topic, queue_id=queue_id,
                                       read_queue_nums=config.read_queue_nums)  # fmt: skip
        count = max_count if max_count > 0 else DEFAULT_VIEW_COUNT
        start = max(offset, self._store.get_min_offset(topic, queue_id))
        return list(self._store.get_messages(topic, queue_id, start, count).messages)

    def resend(self, topic: str, queue_id: int, offset: int) -> StoredCopy:
        """Re-send the dead-lettered message at ``offset`` to its first topic (see module)."""
        if not topic.startswith(DLQ_TOPIC_PREFIX):
            raise InvalidArgumentError("only a dead-letter topic's messages are re-sent",
                                       topic=topic)  # fmt: skip
        found = self.view(topic, queue_id, offset, 1)
        if not found or found[0].queue_offset != offset:
            raise InvalidArgumentError("no stored message at this offset", topic=topic,
                                       queue_id=queue_id, offset=offset)  # fmt: skip
        message = found[0]
        origin = message.properties.get(PROPERTY_RETRY_TOPIC, "")
        config = self._store.topic_config.get(origin) if origin else None
        if config is None or config.write_queue_nums == 0:
            raise UnknownTopicError("the message's first topic is gone or not writable",
                                    topic=topic, offset=offset, origin=origin)  # fmt: skip
        properties = {k: v for k, v in message.properties.items() if k not in _RETRY_PROPERTIES}
        target_queue = offset % config.write_queue_nums
        return put_copy(self._store, origin, target_queue, message, properties, 0)
