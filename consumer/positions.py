"""``Positions``: where the consumer reads each queue, and the queues' bounds.

- :meth:`Positions.seek` moves an owned queue's next pull to an offset within its bounds: the
  queue's cached messages are discarded (its process queue is replaced, so a pull issued
  before is recognised and dropped), its consume offset becomes the offset and its pull task
  restarts at once. Seeking does not touch the offset store: the next commit commits it.
- :meth:`Positions.position` is the offset of the next message ``poll`` returns from a queue
  (kafka-python's ``position``): what was polled last + 1, a pending seek, the first cached
  message, else the start offset fixed when the queue was allocated or assigned.
- The bounds (min and max offset, the offset of a store time) of any queue, owned or not,
  straight from its broker.

Caller: the consumer façade. Affects: the owned queues' offsets (seek), the cache and the pull
tasks; the rest reads. Errors: IllegalStateError for a queue not owned,
:class:`~client.OffsetIllegalError` for a seek out of bounds, a ClientError when the broker
cannot say.
"""

from __future__ import annotations

from collections.abc import Iterable

from aeromq.client import IllegalStateError, MessageQueue, OffsetIllegalError
from aeromq.consumer.config import SubscriptionType
from aeromq.consumer.services import ConsumerServices
from aeromq.consumer.subscription_state import check_queue

__all__ = ["Positions"]


class Positions:
    """Seeks, positions and bounds of queues (see the module doc)."""

    def __init__(self, services: ConsumerServices) -> None:
        self._services = services
        self._subscription = services.subscription
        self._assigned = services.assigned
        self._cache = services.cache

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Caller: ``seek``, ``seek_to_begin``, ``seek_to_end``. Affects: see the module doc.
        Raises IllegalStateError if the queue is not owned, OffsetIllegalError out of range."""
        services = self._services
        services.check_running()
        with services.lock:
            if queue not in self._assigned:
                message = "the message queue is not in the assigned list"
                if self._subscription.type is SubscriptionType.SUBSCRIBE:
                    message += ", may be rebalancing"
                raise IllegalStateError(message, queue=str(queue))
            api = services.require_api()
            min_offset = api.min_offset(queue)
            max_offset = api.max_offset(queue)
            if not min_offset <= offset <= max_offset:
                raise OffsetIllegalError(
                    "seek offset illegal",
                    offset=offset,
                    min_offset=min_offset,
                    max_offset=max_offset,
                )
            if self._assigned.seek(queue, offset) is not None:
                self._cache.remove_queue(queue)
                assert services.tasks is not None
                services.tasks.restart(queue)

    def seek_to_begin(self, queue: MessageQueue) -> None:
        """Caller: ``seek_to_begin``. Affects: as :meth:`seek` to the queue's min offset."""
        self._services.check_running()
        self.seek(queue, self._services.require_api().min_offset(queue))

    def seek_to_end(self, queue: MessageQueue) -> None:
        """Caller: ``seek_to_end``. Affects: as :meth:`seek` to the queue's max offset."""
        self._services.check_running()
        self.seek(queue, self._services.require_api().max_offset(queue))

    def position(self, queue: MessageQueue) -> int:
        """Caller: ``position``. Affects: fixes the queue's start offset if it had none.
        Raises IllegalStateError when the queue is not owned, a ClientError when its start
        offset is not known yet and the broker cannot say."""
        self._services.check_running()
        state = self._assigned.state(queue)
        if state is None:
            raise IllegalStateError(
                "the message queue is not in the assigned list", queue=str(queue)
            )
        with state.lock:
            for offset in (state.consume_offset, state.seek_offset):
                if offset >= 0:
                    return offset
            first = state.process_queue.first_offset()
            if first >= 0:
                return first
            if state.pull_offset >= 0:
                return state.pull_offset
        offset = self._services.compute_start_offset(queue)
        with state.lock:
            if state.pull_offset < 0 and state.seek_offset == -1:
                state.pull_offset = offset
            return offset

    def beginning_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Caller: ``beginning_offsets``. Affects: nothing. Raises IllegalArgumentError for a
        malformed queue."""
        self._services.check_running()
        api = self._services.require_api()
        return {queue: api.min_offset(check_queue(queue)) for queue in queues}

    def end_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Caller: ``end_offsets``. Affects: nothing. Raises IllegalArgumentError for a
        malformed queue."""
        self._services.check_running()
        api = self._services.require_api()
        return {queue: api.max_offset(check_queue(queue)) for queue in queues}

    def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """Caller: ``offset_for_timestamp``. Affects: nothing."""
        self._services.check_running()
        return self._services.require_api().search_offset(queue, timestamp_ms)
