"""AVERAGELY_BY_CIRCLE: queue ``i`` goes to consumer ``i % c``, dealing queues like cards.

With 10 queues and 4 consumers: ``[0 4 8] [1 5 9] [2 6] [3 7]``. RocketMQ's
``AllocateMessageQueueAveragelyByCircle``.
"""

from __future__ import annotations

from aeromq.client import MessageQueue
from aeromq.consumer.allocate._strategy import CheckedAllocateStrategy

__all__ = ["AllocateMessageQueueAveragelyByCircle"]


class AllocateMessageQueueAveragelyByCircle(CheckedAllocateStrategy):
    """``"AVG_BY_CIRCLE"``: sorted queue ``i`` goes to sorted consumer ``i % consumers``, dealt
    like cards.

    10 queues over 4 consumers: ``[0 4 8] [1 5 9] [2 6] [3 7]``. RocketMQ's
    ``AllocateMessageQueueAveragelyByCircle``.
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        return "AVG_BY_CIRCLE"

    def _allocate(
        self,
        consumer_group: str,
        current_cid: str,
        queues: list[MessageQueue],
        consumers: list[str],
    ) -> list[MessageQueue]:
        return queues[consumers.index(current_cid) :: len(consumers)]
