"""aeromq's push consumer: RocketMQ's ``DefaultMQPushConsumer`` on the lite pull machinery
(``docs/push-consumer.md``): concurrent and orderly listeners, consume retry through
``%RETRY%<group>`` with RocketMQ's back-off, the dead-letter queue ``%DLQ%<group>``, and
orderly queues locked at the broker.

The modules, by role:

- ``push_consumer``: :class:`DefaultMQPushConsumer`, the façade, and its poll thread;
- ``config``: :class:`PushConsumerConfig`;
- ``listeners``: the listener classes, their answers and contexts;
- ``concurrently`` and ``orderly``: the two consume services;
- ``offsets``: :class:`InFlightOffsets`, the commit offset below the unfinished messages;
- ``queue_locks``: :class:`QueueLockKeeper`, the orderly consumer's broker locks;
- ``_runtime``: what the services share (commits, send-back, threads).
"""

from aeromq.consumer.push.concurrently import ConcurrentConsumeService
from aeromq.consumer.push.config import PushConsumerConfig
from aeromq.consumer.push.listeners import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    MessageListenerConcurrently,
    MessageListenerOrderly,
)
from aeromq.consumer.push.offsets import InFlightOffsets
from aeromq.consumer.push.orderly import OrderlyConsumeService
from aeromq.consumer.push.push_consumer import DefaultMQPushConsumer
from aeromq.consumer.push.queue_locks import QueueLockKeeper

__all__ = [
    "ConcurrentConsumeService",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "DefaultMQPushConsumer",
    "InFlightOffsets",
    "MessageListenerConcurrently",
    "MessageListenerOrderly",
    "OrderlyConsumeService",
    "PushConsumerConfig",
    "QueueLockKeeper",
]
