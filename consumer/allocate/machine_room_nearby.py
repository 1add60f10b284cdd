"""MACHINE_ROOM_NEARBY: queues stay in their machine room when a consumer is there.

The queues of each room go, by the delegate strategy, to the consumers of the same room; the
queues of a room with no consumer are shared, by the delegate, among all consumers. Rooms come
from a :class:`~consumer.allocate.machine_room.MachineRoomResolver` (by default the part of
the name before ``@``); an empty room is an error. RocketMQ's ``AllocateMachineRoomNearby``.
"""

from __future__ import annotations

from aeromq.client import IllegalArgumentError, MessageQueue
from aeromq.common import compare_key
from aeromq.consumer.allocate._strategy import AllocateMessageQueueStrategy, CheckedAllocateStrategy
from aeromq.consumer.allocate.machine_room import MachineRoomResolver, PrefixMachineRoomResolver

__all__ = ["AllocateMachineRoomNearby"]


class AllocateMachineRoomNearby(CheckedAllocateStrategy):
    """``"MACHINE_ROOM_NEARBY-<delegate>"``: each room's queues go, by ``delegate``, to the
    consumers in the same room; the queues of a room with no consumer are shared, by
    ``delegate``, among all consumers.

    ``resolver`` tells the rooms (default :class:`PrefixMachineRoomResolver`: the part of a
    name before ``@``). A queue or consumer whose room is empty raises
    :class:`~client.IllegalArgumentError`. RocketMQ's ``AllocateMachineRoomNearby``.
    """

    __slots__ = ("_delegate", "_resolver")

    def __init__(
        self,
        delegate: AllocateMessageQueueStrategy,
        resolver: MachineRoomResolver | None = None,
    ) -> None:
        self._delegate = delegate
        self._resolver = resolver if resolver is not None else PrefixMachineRoomResolver()

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self._delegate.name}"

    def _allocate(
        self,
        consumer_group: str,
        current_cid: str,
        queues: list[MessageQueue],
        consumers: list[str],
    ) -> list[MessageQueue]:
        resolver = self._resolver
        queues_by_room: dict[str, list[MessageQueue]] = {}
        for queue in queues:
            room = resolver.broker_deploy_in(queue)
            if not room:
                raise IllegalArgumentError("the machine room of a queue is empty", queue=queue)
            queues_by_room.setdefault(room, []).append(queue)
        consumers_by_room: dict[str, list[str]] = {}
        for cid in consumers:
            room = resolver.consumer_deploy_in(cid)
            if not room:
                raise IllegalArgumentError("the machine room of a consumer is empty", cid=cid)
            consumers_by_room.setdefault(room, []).append(cid)

        allocate = self._delegate.allocate
        current_room = resolver.consumer_deploy_in(current_cid)
        owned: list[MessageQueue] = []
        local_queues = queues_by_room.pop(current_room, None)
        if local_queues:
            owned += allocate(
                consumer_group, current_cid, local_queues, consumers_by_room[current_room]
            )
        for room in sorted(queues_by_room, key=compare_key):
            if room not in consumers_by_room:
                owned += allocate(consumer_group, current_cid, queues_by_room[room], consumers)
        return owned
