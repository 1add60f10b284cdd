"""BY_CONFIG: a fixed list of queues, whatever the group looks like.

RocketMQ's ``AllocateMessageQueueByConfig``: it checks none of its arguments and returns the
configured list, so every consumer using it with the same list consumes the same queues.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from aeromq.client import MessageQueue
from aeromq.consumer.allocate._strategy import AllocateMessageQueueStrategy

__all__ = ["AllocateMessageQueueByConfig"]


class AllocateMessageQueueByConfig(AllocateMessageQueueStrategy):
    """``"CONFIG"``: always ``message_queues``, whatever the group and the topic's queues are;
    consumers given the same list consume the same queues. Its arguments are not checked.
    RocketMQ's ``AllocateMessageQueueByConfig``."""

    __slots__ = ("_queues",)

    def __init__(self, message_queues: Iterable[MessageQueue]) -> None:
        self._queues = tuple(message_queues)

    @property
    def name(self) -> str:
        return "CONFIG"

    @property
    def message_queues(self) -> tuple[MessageQueue, ...]:
        """The configured queues, in the order given."""
        return self._queues

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Collection[MessageQueue],
        cid_all: Collection[str],
    ) -> list[MessageQueue]:
        """The configured queues (a new list each call); the arguments are not looked at."""
        return list(self._queues)
