"""The push consumer's listeners, their answers and contexts (RocketMQ's
``MessageListenerConcurrently`` and ``MessageListenerOrderly``).

A listener is a class with ``consume_message(messages, context)`` (subclass
:class:`MessageListenerConcurrently` or :class:`MessageListenerOrderly`), or a plain function
of the same two arguments registered with ``orderly=False`` or ``True``. It is called with at
most ``consume_message_batch_max_size`` messages of one queue; an exception it raises counts
as ``RECONSUME_LATER`` (concurrent) or ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` (orderly), as in
RocketMQ, and is logged.

Caller: the consume services (``consumer.push.concurrently``, ``consumer.push.orderly``), on
their threads.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from aeromq.client import MessageExt, MessageQueue

__all__ = [
    "ConcurrentlyFunction",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "MessageListenerConcurrently",
    "MessageListenerOrderly",
    "OrderlyFunction",
]


class ConsumeConcurrentlyStatus(Enum):
    """A concurrent listener's answer for its messages."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    """Consumed: the offset may move past them."""
    RECONSUME_LATER = "RECONSUME_LATER"
    """Failed: each is sent back, to come again after the back-off (or to the DLQ)."""


class ConsumeOrderlyStatus(Enum):
    """An orderly listener's answer for its messages."""

    SUCCESS = "SUCCESS"
    """Consumed: the queue goes on with the next messages."""
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"
    """Failed: the queue waits ``suspend_current_queue_time_ms`` and the same messages come
    again (in place, order kept); after ``max_reconsume_times`` attempts they go to the DLQ."""


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """The queue of a concurrent listener's messages, and what it may set for a failure."""

    queue: MessageQueue
    """The queue the messages were pulled from (a retry topic's for retried ones)."""
    delay_level_when_next_consume: int = 0
    """The back-off level of a send-back (0: the broker's, 3 + reconsume times; -1: straight
    to the dead-letter queue; 1-18: RocketMQ's levels, 1 s to 2 h)."""
    ack_index: int = -1
    """With CONSUME_SUCCESS, messages after this index are sent back (RocketMQ's
    ``ackIndex``); -1 (default): all consumed."""


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """The queue of an orderly listener's messages, and its suspend time for a failure."""

    queue: MessageQueue
    suspend_current_queue_time_ms: int = -1
    """-1: the consumer's ``suspend_current_queue_time_ms``."""


class MessageListenerConcurrently(abc.ABC):
    """RocketMQ's ``MessageListenerConcurrently``: messages of any queue, on any thread."""

    @abc.abstractmethod
    def consume_message(
        self, messages: list[MessageExt], context: ConsumeConcurrentlyContext
    ) -> ConsumeConcurrentlyStatus:
        """Consume ``messages``; the answer says whether they must come again."""


class MessageListenerOrderly(abc.ABC):
    """RocketMQ's ``MessageListenerOrderly``: one queue's messages in order, one call at a
    time per queue, while this consumer holds the queue's lock."""

    @abc.abstractmethod
    def consume_message(
        self, messages: list[MessageExt], context: ConsumeOrderlyContext
    ) -> ConsumeOrderlyStatus:
        """Consume ``messages``; the answer says whether the queue goes on."""


ConcurrentlyFunction = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext], ConsumeConcurrentlyStatus
]
"""A plain function as a concurrent listener."""
OrderlyFunction = Callable[[list[MessageExt], ConsumeOrderlyContext], ConsumeOrderlyStatus]
"""A plain function as an orderly listener."""
