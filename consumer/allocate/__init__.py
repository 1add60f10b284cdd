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

from consumer.allocate._strategy import AllocateMessageQueueStrategy
from consumer.allocate.averagely import AllocateMessageQueueAveragely
from consumer.allocate.averagely_by_circle import AllocateMessageQueueAveragelyByCircle
from consumer.allocate.by_config import AllocateMessageQueueByConfig
from consumer.allocate.by_machine_room import AllocateMessageQueueByMachineRoom
from consumer.allocate.consistent_hash import AllocateMessageQueueConsistentHash
from consumer.allocate.machine_room import MachineRoomResolver, PrefixMachineRoomResolver
from consumer.allocate.machine_room_nearby import AllocateMachineRoomNearby

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
