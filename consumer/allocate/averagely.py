"""AVERAGELY: contiguous blocks of queues, the first ``q % c`` consumers getting one more.

With 10 queues and 4 consumers: ``[0 1 2] [3 4 5] [6 7] [8 9]``. With more consumers than
queues, the last consumers get nothing. RocketMQ's ``AllocateMessageQueueAveragely``.
"""

from __future__ import annotations

from aeromq.client import MessageQueue
from aeromq.consumer.allocate._strategy import CheckedAllocateStrategy

__all__ = ["AllocateMessageQueueAveragely"]


class AllocateMessageQueueAveragely(CheckedAllocateStrategy):
    """The default strategy (``"AVG"``): each consumer, in sorted id order, gets a contiguous
    block of the sorted queues; the first ``queues % consumers`` consumers get one more.

    10 queues over 4 consumers: ``[0 1 2] [3 4 5] [6 7] [8 9]``; with more consumers than
    queues the last consumers get none. RocketMQ's ``AllocateMessageQueueAveragely``.
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        return "AVG"

    def _allocate(
        self,
        consumer_group: str,
        current_cid: str,
        queues: list[MessageQueue],
        consumers: list[str],
    ) -> list[MessageQueue]:
        index = consumers.index(current_cid)
        base, extra = divmod(len(queues), len(consumers))
        if index < extra:
            start, size = index * (base + 1), base + 1
        else:
            start, size = index * base + extra, base
        return queues[start : start + size]
