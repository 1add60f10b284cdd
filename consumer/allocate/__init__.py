"""Queue allocation strategies: how a consumer group splits a topic's queues among its
consumers (RocketMQ's ``AllocateMessageQueueStrategy`` and its six implementations).

- AVERAGELY (the default): :class:`AllocateMessageQueueAveragely`, ``AVG``
- AVERAGELY_BY_CIRCLE: :class:`AllocateMessageQueueAveragelyByCircle`, ``AVG_BY_CIRCLE``
- CONSISTENT_HASH: :class:`AllocateMessageQueueConsistentHash`, ``CONSISTENT_HASH``
- BY_CONFIG: :class:`AllocateMessageQueueByConfig`, ``CONFIG``
- BY_MACHINE_ROOM: :class:`AllocateMessageQueueByMachineRoom`, ``MACHINE_ROOM``
- MACHINE_ROOM_NEARBY: :class:`AllocateMachineRoomNearby`, ``MACHINE_ROOM_NEARBY-<delegate>``

Each consumer of a group calls ``allocate(consumer_group, current_cid, mq_all, cid_all)`` with
the same queues and ids and keeps what it gets (see ``_strategy`` for the argument checks).
"""

from aeromq.consumer.allocate._strategy import AllocateMessageQueueStrategy
from aeromq.consumer.allocate.averagely import AllocateMessageQueueAveragely
from aeromq.consumer.allocate.averagely_by_circle import AllocateMessageQueueAveragelyByCircle
from aeromq.consumer.allocate.by_config import AllocateMessageQueueByConfig
from aeromq.consumer.allocate.by_machine_room import AllocateMessageQueueByMachineRoom
from aeromq.consumer.allocate.consistent_hash import AllocateMessageQueueConsistentHash
from aeromq.consumer.allocate.machine_room import MachineRoomResolver, PrefixMachineRoomResolver
from aeromq.consumer.allocate.machine_room_nearby import AllocateMachineRoomNearby

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
