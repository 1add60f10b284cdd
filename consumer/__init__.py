"""aeromq's consumer: RocketMQ's ``DefaultLitePullConsumer`` and its internals
(``shared/spec/lite-pull-consumer.md``). So far: the queue allocation strategies.
"""

from consumer.allocate import (
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

__all__ = [
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "MachineRoomResolver",
    "PrefixMachineRoomResolver",
]
