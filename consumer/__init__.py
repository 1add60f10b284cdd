r"""aeromq's consumer: RocketMQ's ``DefaultLitePullConsumer`` and its internals
(``docs/lite-pull-consumer.md``): the consumer, its configuration, offset stores and
the queue allocation strategies. Pulled messages arrive as :class:`MessageBatch`\ es over the
stored record batches: ``poll()`` gives them as messages, ``poll_batch()`` as columns;
:func:`read_pulled_batches` reads a raw pull answer into one (the Spark connector's reads).
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
from aeromq.consumer.lite_pull_consumer import (
    DefaultLitePullConsumer,
    DeliveryListener,
    ServiceState,
    TopicMessageQueueChangeListener,
    ValueDeserializer,
)
from aeromq.consumer.message_batch import MessageBatch, read_pulled_batches
from aeromq.consumer.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from aeromq.consumer.pull_task import FlowControlCounters

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
    "ConsumeFromWhere",
    "ConsumeMessageContext",
    "ConsumeMessageHook",
    "ConsumerMetrics",
    "DefaultLitePullConsumer",
    "DeliveryListener",
    "FlowControlCounters",
    "LitePullConsumerConfig",
    "LocalFileOffsetStore",
    "MachineRoomResolver",
    "MessageBatch",
    "MessageModel",
    "OffsetStore",
    "PrefixMachineRoomResolver",
    "PullResult",
    "PullStatus",
    "QueueGrant",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
    "ServiceState",
    "SubscriptionType",
    "TopicMessageQueueChangeListener",
    "ValueDeserializer",
    "read_pulled_batches",
]
