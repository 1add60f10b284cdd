r"""aeromq's consumer: RocketMQ's ``DefaultLitePullConsumer`` and its internals
(``docs/lite-pull-consumer.md``): the consumer, its configuration, offset stores and
the queue allocation strategies. Pulled messages arrive as :class:`MessageBatch`\ es over the
stored record batches: ``poll()`` gives them as messages, ``poll_batch()`` as columns;
:func:`read_pulled_batches` reads a raw pull answer into one (the Spark connector's reads).

The modules, by role (as aiokafka splits its consumer):

- ``lite_pull_consumer``: :class:`DefaultLitePullConsumer`, the façade (the public API);
- ``subscription_state``: subscribe or assign, the subscriptions, the assign expressions;
- ``subscription_changes``: ``subscribe``, ``unsubscribe`` and ``assign`` applied;
- ``services``: start and shutdown of the running parts, the :class:`ServiceState`, the
  heartbeats and timers;
- ``route_check``: the periodic look at the topics' routes, queue change listeners;
- ``positions``: ``seek``, ``position``, the queues' bounds;
- ``commits``: ``commit``, auto commit, ``committed``;
- ``poller``: ``poll`` and ``poll_batch`` over the consume-request cache, the hooks;
- ``rebalance`` (queue ownership, start offsets, take-overs), ``allocate`` (strategies),
  ``pull_task`` (one pull loop per queue), ``assigned_queues`` and ``process_queue`` (the
  owned queues' state), ``consume_request_cache``, ``scheduler``,
  ``offset_store``, ``config``; ``_broker_api`` (the broker calls, :class:`BrokerApi`) and
  ``_grpc_broker_api`` (over gRPC and the transport); ``testing`` (an in-memory broker);
- ``retry``: ``send_back`` to the group's retry topic (or its dead-letter queue), the retry
  calls (:class:`RetryBrokerApi`), retried messages' first topic restored;
- ``push``: :class:`DefaultMQPushConsumer`, RocketMQ's push consumer on this machinery, with
  concurrent and orderly listeners (``docs/push-consumer.md``).
"""

from aeromq.consumer._batch_message import BatchMessageExt
from aeromq.consumer._broker_api import BrokerApi, PullResult, PullStatus, QueueGrant
from aeromq.consumer._hooks import ConsumeMessageContext, ConsumeMessageHook
from aeromq.consumer._metrics import ConsumerMetrics
from aeromq.consumer.allocate import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
    MachineRoomResolver,
    PrefixMachineRoomResolver,
)
from aeromq.consumer.config import (
    ConsumeFromWhere,
    LitePullConsumerConfig,
    MessageModel,
    SubscriptionType,
)
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.consumer.message_batch import MessageBatch, read_pulled_batches
from aeromq.consumer.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from aeromq.consumer.poller import DeliveryListener, ValueDeserializer
from aeromq.consumer.pull_task import FlowControlCounters
from aeromq.consumer.push import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    DefaultMQPushConsumer,
    MessageListenerConcurrently,
    MessageListenerOrderly,
    PushConsumerConfig,
)
from aeromq.consumer.retry import RetryBrokerApi
from aeromq.consumer.route_check import TopicMessageQueueChangeListener
from aeromq.consumer.services import ServiceState

__all__ = [
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "BatchMessageExt",
    "BrokerApi",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeMessageContext",
    "ConsumeMessageHook",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ConsumerMetrics",
    "DefaultLitePullConsumer",
    "DefaultMQPushConsumer",
    "DeliveryListener",
    "FlowControlCounters",
    "LitePullConsumerConfig",
    "LocalFileOffsetStore",
    "MachineRoomResolver",
    "MessageBatch",
    "MessageListenerConcurrently",
    "MessageListenerOrderly",
    "MessageModel",
    "OffsetStore",
    "PrefixMachineRoomResolver",
    "PullResult",
    "PullStatus",
    "PushConsumerConfig",
    "QueueGrant",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
    "RetryBrokerApi",
    "ServiceState",
    "SubscriptionType",
    "TopicMessageQueueChangeListener",
    "ValueDeserializer",
    "read_pulled_batches",
]
