"""BY_MACHINE_ROOM: only the queues of brokers in the consumers' machine rooms, spread over
all consumers.

A queue takes part when its broker is named ``room@broker`` (exactly two parts) and ``room``
is one of the consuming rooms; queues of other brokers get no owner. Of the ``n`` taking part
and ``c`` consumers, consumer ``i`` gets the block ``[i * (n // c), (i + 1) * (n // c))`` and,
when ``i < n % c``, the one queue ``i + (n // c) * c``. RocketMQ's
``AllocateMessageQueueByMachineRoom``.

The consuming rooms are given (RocketMQ's ``consumeridcs``) or, when not, read from the
consumer ids named ``room@id``.
"""

from __future__ import annotations

from collections.abc import Iterable

from aeromq.client import MessageQueue
from aeromq.consumer.allocate._strategy import CheckedAllocateStrategy
from aeromq.consumer.allocate.machine_room import java_split

__all__ = ["AllocateMessageQueueByMachineRoom"]

_SEPARATOR = "@"


def _room(name: str) -> str | None:
    parts = java_split(name, _SEPARATOR)
    return parts[0] if len(parts) == 2 else None


class AllocateMessageQueueByMachineRoom(CheckedAllocateStrategy):
    """``"MACHINE_ROOM"``: only the queues of brokers named ``room@broker`` with ``room`` in
    ``consumer_idcs``, spread over all consumers; other brokers' queues get no owner.

    ``consumer_idcs`` are the consuming rooms (RocketMQ's ``consumeridcs``); None reads them
    from the consumer ids named ``room@id``. Of ``n`` queues taking part and ``c`` consumers,
    consumer ``i`` gets the block ``[i * (n // c), (i + 1) * (n // c))`` and, when
    ``i < n % c``, queue ``i + (n // c) * c``. RocketMQ's
    ``AllocateMessageQueueByMachineRoom``.
    """

    __slots__ = ("_consumer_idcs",)

    def __init__(self, consumer_idcs: Iterable[str] | None = None) -> None:
        self._consumer_idcs = None if consumer_idcs is None else frozenset(consumer_idcs)

    @property
    def name(self) -> str:
        return "MACHINE_ROOM"

    @property
    def consumer_idcs(self) -> frozenset[str] | None:
        """The consuming rooms, or None to read them from the consumer ids."""
        return self._consumer_idcs

    def _allocate(
        self,
        consumer_group: str,
        current_cid: str,
        queues: list[MessageQueue],
        consumers: list[str],
    ) -> list[MessageQueue]:
        rooms = self._consumer_idcs
        if rooms is None:
            rooms = frozenset(room for cid in consumers if (room := _room(cid)) is not None)
        eligible = [queue for queue in queues if _room(queue.broker_name) in rooms]
        index = consumers.index(current_cid)
        block, remainder = divmod(len(eligible), len(consumers))
        owned = eligible[index * block : (index + 1) * block]
        if index < remainder:
            owned.append(eligible[index + block * len(consumers)])
        return owned
