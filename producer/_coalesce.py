"""``SendCoalescer``: which async sends wait, and which go together as one request.

An async send (``send_async``, ``send_batch_async``) to no queue in particular goes at once while
fewer than ``limit`` such requests of its topic are in flight (the producer's setting times the
brokers of the topic's route); past that it waits, and when one
of them is answered the sends waiting go as one request: their record batches merged into one
(:func:`~common.merge_batches`), as Kafka's record accumulator does while its in-flight requests
are full (``ProducerConfig.async_requests_in_flight``, 1 by default; 0 turns it off). A request,
whatever it carries, costs the broker's session agent and this client's poller one wake-up and
one envelope each; with pipelined sends these are most of the CPU of a send.

Nothing waits on a timer: a send waits only while ``limit`` requests of its topic are in flight,
each of which is answered (or failed, or timed out) and then sends what waits. A group holds
sends of up to ``max_group_bytes`` of record batches (the first always), the rest wait for the
next answer, and at most :data:`MAX_GROUP_SENDS` sends. This class only keeps the counts and the
waiting sends; the producer sends.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Final, Generic, TypeVar

__all__ = ["MAX_GROUP_SENDS", "SendCoalescer"]

MAX_GROUP_SENDS: Final = 4096
"""The most sends one group holds: the most batches ``merge_batches`` joins (its C pass refuses
more; small sends piled up behind a slow answer reached it before the byte bound)."""

T = TypeVar("T")


class SendCoalescer(Generic[T]):
    """In-flight request counts and waiting sends, by topic (see module). Thread-safe.

    ``size_of(item)`` is the record batch bytes of a waiting send."""

    __slots__ = ("_in_flight", "_lock", "_size_of", "_waiting", "max_group_bytes")

    def __init__(self, max_group_bytes: int, size_of: Callable[[T], int]) -> None:
        self.max_group_bytes = max_group_bytes
        self._size_of = size_of
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._waiting: dict[str, deque[T]] = {}

    def admit(self, topic: str, item: T, limit: int) -> bool:
        """True: send ``item`` now, as a request of its own (counted in flight until
        :meth:`answered`), for fewer than ``limit`` are. False: it waits (a later
        :meth:`answered` returns it)."""
        with self._lock:
            waiting = self._waiting.get(topic)
            in_flight = self._in_flight.get(topic, 0)
            if in_flight < limit and not waiting:
                self._in_flight[topic] = in_flight + 1
                return True
            if waiting is None:
                waiting = self._waiting[topic] = deque()
            waiting.append(item)
            return False

    def answered(self, topic: str) -> list[T]:
        """A request of ``topic`` is over (answered, failed or never sent): the sends to go
        next, as one request (counted in flight), or none."""
        with self._lock:
            waiting = self._waiting.get(topic)
            if not waiting:
                self._in_flight[topic] -= 1
                return []
            group = [waiting.popleft()]
            size = self._size_of(group[0])
            size_of = self._size_of
            while (
                waiting
                and size + size_of(waiting[0]) <= self.max_group_bytes
                and len(group) < MAX_GROUP_SENDS
            ):
                item = waiting.popleft()
                size += size_of(item)
                group.append(item)
            return group  # takes the place of the request that ended: in flight stays

    def waiting_count(self, topic: str) -> int:
        """How many sends of ``topic`` wait for a request to be answered."""
        with self._lock:
            return len(self._waiting.get(topic, ()))
