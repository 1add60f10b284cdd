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

**A deferred cut.** An answer settles its sends' futures first. When that woke a thread blocked
on one of them (``AsyncSendFuture.result``), the next group is not cut at once: the request's
place stays taken (*owed*) while the woken thread adds its next sends, and the group is cut when
that thread (or any) is about to block on a send's future again (:meth:`SendCoalescer.on_wait`),
or by the producer's fallback a millisecond later. So a window of ``n`` pipelined sends goes as
one request of ``n`` a round trip, not as requests of 1 and ``n - 1`` (``docs/guides/producer.md``).
A lone async send, with nothing in flight and nothing owed, still goes at once.

A deferral pays while the woken thread refills its window in less than a round trip: a window
goes every round trip plus refill, against every two round trips, or every refill when the
application is the slower (a single broker answering in half a millisecond). So the cut is
deferred only when the answer's round trip was no shorter than the refills measured (the time
from a deferral to its cut, averaged), and every :data:`PROBE_EVERY` th answer anyway, to
measure the refill again.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Final, Generic, TypeVar

__all__ = ["MAX_GROUP_SENDS", "SendCoalescer"]

PROBE_EVERY: Final = 16
"""One answer in this many that woke a thread defers its cut whatever the round trip, so that
the refill time is measured again."""

MAX_GROUP_SENDS: Final = 4096
"""The most sends one group holds: the most batches ``merge_batches`` joins (its C pass refuses
more; small sends piled up behind a slow answer reached it before the byte bound)."""

T = TypeVar("T")


class SendCoalescer(Generic[T]):
    """In-flight request counts and waiting sends, by topic (see module). Thread-safe.

    ``size_of(item)`` is the record batch bytes of a waiting send."""

    __slots__ = (
        "_answers",
        "_deferred_ns",
        "_in_flight",
        "_lock",
        "_owed",
        "_refill_ns",
        "_size_of",
        "_waiting",
        "max_group_bytes",
        "owed",
        "waits",
    )

    def __init__(self, max_group_bytes: int, size_of: Callable[[T], int]) -> None:
        self.max_group_bytes = max_group_bytes
        self._size_of = size_of
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._waiting: dict[str, deque[T]] = {}
        self._owed: dict[str, int] = {}
        self.owed = 0
        """Requests' places held for a deferred cut, all topics (read without the lock)."""
        self.waits = 0
        """How often a thread was about to block on a send's future (:meth:`on_wait`)."""
        self._answers = 0
        self._deferred_ns = 0  # when the oldest owed place was deferred (0: none)
        self._refill_ns = 0  # the refills measured, averaged (1/4 the newest)

    def admit(self, topic: str, item: T, limit: int) -> bool:
        """True: send ``item`` now, as a request of its own (counted in flight until
        :meth:`answered`), for fewer than ``limit`` are. False: it waits (a later
        :meth:`answered` returns it)."""
        with self._lock:
            waiting = self._waiting.get(topic)
            in_flight = self._in_flight.get(topic, 0)
            if in_flight < limit and not waiting and not self._owed.get(topic):
                self._in_flight[topic] = in_flight + 1
                return True
            if waiting is None:
                waiting = self._waiting[topic] = deque()
            waiting.append(item)
            return False

    def answered(
        self, topic: str, woken_at: int | None = None, round_trip_ns: int = 0, now_ns: int = 0
    ) -> list[T]:
        """A request of ``topic`` is over (answered, failed or never sent): the sends to go
        next, as one request (counted in flight), or none. ``woken_at``: its answer woke a
        thread blocked on a send, and :attr:`waits` was this before: unless a thread blocked
        again since, or the refills measured are longer than ``round_trip_ns`` (the
        request's, answered at ``now_ns``), the cut is deferred (its place owed, none
        returned; see module)."""
        with self._lock:
            if woken_at is not None and woken_at == self.waits:
                self._answers += 1
                if round_trip_ns >= self._refill_ns or not self._answers % PROBE_EVERY:
                    self._owed[topic] = self._owed.get(topic, 0) + 1
                    self.owed += 1
                    if not self._deferred_ns:
                        self._deferred_ns = now_ns or 1
                    return []
            return self._cut(topic)

    def on_wait(self, now_ns: int = 0) -> list[tuple[str, list[T]]]:
        """A thread is about to block on a send's future (or the fallback's time came, at
        ``now_ns``): the owed cuts, each topic's group to send now (counted in flight), none
        when none is owed."""
        with self._lock:
            self.waits += 1
            if not self.owed:
                return []
            owed, self._owed = self._owed, {}
            self.owed = 0
            if self._deferred_ns and now_ns:
                refill_ns = now_ns - self._deferred_ns
                self._refill_ns += (refill_ns - self._refill_ns) // 4
            self._deferred_ns = 0
            groups = []
            for topic, count in owed.items():
                for _ in range(count):
                    group = self._cut(topic)  # none waiting: its place freed
                    if group:
                        groups.append((topic, group))
            return groups

    def _cut(self, topic: str) -> list[T]:
        """One place of ``topic`` freed: the group that takes it, or none (under the lock)."""
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

    @property
    def refill_ns(self) -> int:
        """The refills measured, averaged: how long a woken thread took to add its next sends."""
        return self._refill_ns

    def waiting_count(self, topic: str) -> int:
        """How many sends of ``topic`` wait for a request to be answered."""
        with self._lock:
            return len(self._waiting.get(topic, ()))
