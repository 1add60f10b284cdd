"""``AllocateMessageQueueStrategy``: how a consumer group splits a topic's queues.

Every consumer of a group runs the same strategy on the same inputs (all queues, all consumer
ids) and keeps the queues it returns for its own id; a strategy is a pure function, so the
group agrees without talking. Caller: the rebalance service, once per subscribed topic.

Like RocketMQ's ``AbstractAllocateMessageQueueStrategy.check``: an empty ``current_cid``,
``mq_all`` or ``cid_all`` raises :class:`~client.IllegalArgumentError`; a ``current_cid`` that
is not in ``cid_all`` (this consumer is not registered yet, or was just dropped) is logged at
INFO and gets no queue, since it is a passing state of the group rather than a bug.

Unlike RocketMQ, whose strategies use the inputs' order and rely on the caller having sorted
them, the inputs are sorted here (queues by ``MessageQueue`` order, ids by Java string order)
and duplicates dropped, so the result does not depend on the order given, and equals
RocketMQ's for its sorted input.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Collection

from aeromq.client import IllegalArgumentError, MessageQueue
from aeromq.common import compare_key

__all__ = ["AllocateMessageQueueStrategy", "CheckedAllocateStrategy"]

_log = logging.getLogger(__name__)


class AllocateMessageQueueStrategy(ABC):
    """A queue allocation strategy: :meth:`allocate` and a :attr:`name` (RocketMQ's names)."""

    __slots__ = ()

    @property
    @abstractmethod
    def name(self) -> str:
        """The strategy's name, as RocketMQ's ``getName`` (e.g. ``"AVG"``)."""

    @abstractmethod
    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Collection[MessageQueue],
        cid_all: Collection[str],
    ) -> list[MessageQueue]:
        """The queues of ``mq_all`` that consumer ``current_cid`` of ``cid_all`` should own."""


class CheckedAllocateStrategy(AllocateMessageQueueStrategy):
    """A strategy that checks its arguments as RocketMQ does and allocates on sorted inputs."""

    __slots__ = ()

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Collection[MessageQueue],
        cid_all: Collection[str],
    ) -> list[MessageQueue]:
        """Check, sort and de-duplicate the inputs, then allocate (see the module doc)."""
        if not current_cid:
            raise IllegalArgumentError("current_cid is empty", consumer_group=consumer_group)
        if not mq_all:
            raise IllegalArgumentError("mq_all is empty", consumer_group=consumer_group)
        if not cid_all:
            raise IllegalArgumentError("cid_all is empty", consumer_group=consumer_group)
        if current_cid not in cid_all:
            _log.info(
                "[BUG] consumer_group=%s current_cid=%s not in cid_all=%s: allocating nothing",
                consumer_group,
                current_cid,
                cid_all,
            )
            return []
        queues = sorted(set(mq_all), key=MessageQueue.order_key)
        consumers = sorted(set(cid_all), key=compare_key)
        return self._allocate(consumer_group, current_cid, queues, consumers)

    @abstractmethod
    def _allocate(
        self,
        consumer_group: str,
        current_cid: str,
        queues: list[MessageQueue],
        consumers: list[str],
    ) -> list[MessageQueue]:
        """The allocation proper, on checked, sorted, distinct, non-empty inputs."""
