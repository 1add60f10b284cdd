"""A send's failover: where a send that failed on a broker group's member goes next.

RocketMQ's retry rules (``SendPath.retry_delay_ms``, ``_send_path.py``), extended for broker
groups (``client.failover``). A send that failed with a failover error (a follower's
``NOT_LEADER``, ``NOT_ENOUGH_REPLICAS``, ``REPLICATION_TIMEOUT``, or its broker unreachable)
looks its broker's current member up (:func:`next_member`: the leader a ``NOT_LEADER`` answer
names at once, else the member another send already moved to, else one route query shared with
every send that failed on that member), then:

1. another member serves the broker now: the send goes there at once, to the same queue, and
   the attempt is not counted (a ``NOT_LEADER`` retry is not "another broker");
2. none yet, and RocketMQ's rule can go elsewhere (attempts left, a send to no queue in
   particular, another broker of the route with writable queues): the next attempt goes there,
   counted, as RocketMQ's producer does;
3. otherwise the send waits for the group's election: the same queue again after a bounded
   back-off (:class:`~client.failover.Backoff`), not counted, until its deadline.

A route source that cannot follow a leader (a :class:`~producer.StaticRoute`), or a route query
that no endpoint answers (a single broker that is down, given as the only endpoint), leaves the
send to RocketMQ's rules as before: a single broker behaves as it always did.

:class:`RetryTimer` holds the async sends that wait (3.) and hands each to the producer's retry
thread when its wait is over: no thread sleeps for a send.

Caller: ``SendPath.retry_delay_ms`` (sync and async sends). Affects: the attempt's
``retry_queue``, ``attempts_left`` and ``backoff``; the route source's members.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from aeromq.client import ClientError, MessageQueue
from aeromq.client.failover import MIN_TRY_MS, Backoff, leader_hint
from aeromq.client.route import BrokerRoute, RouteResolver, TopicRoute
from aeromq.producer._attempt import Attempt
from aeromq.producer._route import RouteSource

__all__ = ["ELSEWHERE", "GIVE_UP", "RetryTimer", "fail_over", "next_member"]

_log = logging.getLogger(__name__)

GIVE_UP: Final = -1
""":func:`fail_over`: the send is not tried again (out of time)."""
ELSEWHERE: Final = -2
""":func:`fail_over`: RocketMQ's rules decide (another broker, or the source cannot follow)."""


def next_member(
    source: RouteSource, topic: str, member: BrokerRoute, error: ClientError, deadline_ns: int
) -> BrokerRoute | None:
    """The member of ``member``'s broker to send to next (``member`` itself: none other known
    yet); None when ``source`` cannot follow a leader or no endpoint answers its query."""
    if not isinstance(source, RouteResolver):
        return None
    remaining_s = (deadline_ns - time.monotonic_ns()) / 1e9
    if remaining_s <= 0:
        return None
    try:
        return source.follow_leader(topic, member, leader_hint(error), timeout_s=remaining_s)
    except ClientError as lookup:
        _log.info("no route to follow broker=%s: %s", member.broker_name, lookup)
        return None


def fail_over(
    source: RouteSource,
    error: ClientError,
    route: TopicRoute,
    target: MessageQueue,
    attempt: Attempt,
) -> int:
    """The next step of ``attempt`` after ``error`` (a failover error) on ``target``: a delay in
    ms before trying ``target`` again (0: at once), :data:`ELSEWHERE` or :data:`GIVE_UP` (see
    the module)."""
    member = route.brokers.get(target.broker_name)
    if member is None:
        return ELSEWHERE
    moved = next_member(source, target.topic, member, error, attempt.deadline_ns)
    if moved is None:
        return ELSEWHERE
    if moved != member:
        attempt.retry_queue = target
        attempt.attempts_left += 1  # not counted: the same broker, at its new leader
        return 0
    if attempt.attempts_left > 0 and not attempt.pinned and _other_broker(route, target):
        return ELSEWHERE
    backoff = attempt.backoff
    if backoff is None:
        backoff = attempt.backoff = Backoff()
    remaining_ms = (attempt.deadline_ns - time.monotonic_ns()) // 1_000_000 - MIN_TRY_MS
    delay_ms = min(backoff.next_delay_ms(), remaining_ms)
    if delay_ms <= 0:
        return GIVE_UP
    attempt.retry_queue = target
    attempt.attempts_left += 1  # not counted: waiting for the group's election
    return delay_ms


def _other_broker(route: TopicRoute, target: MessageQueue) -> bool:
    """Whether another broker of ``route`` has writable queues of the topic."""
    name = target.broker_name
    return any(
        spec.broker_name != name and spec.write_queue_nums > 0 and spec.broker_name in route.brokers
        for spec in route.queues
    )


class RetryTimer:
    """Runs each action given to :meth:`schedule` once its delay is over, by handing it to
    ``run`` (the producer's retry thread): one waiting thread, started on first use, for every
    send that waits. Thread-safe; :meth:`close` drops what waits."""

    __slots__ = ("_condition", "_heap", "_run", "_running", "_sequence", "_thread")

    def __init__(self, run: Callable[[Callable[[], None]], object]) -> None:
        self._run = run
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._sequence = itertools.count()
        self._condition = threading.Condition(threading.Lock())
        self._running = True
        self._thread: threading.Thread | None = None

    def schedule(self, delay_ms: int, action: Callable[[], None]) -> bool:
        """Hand ``action`` to ``run`` in ``delay_ms``; False once closed (nothing scheduled)."""
        due_ns = time.monotonic_ns() + delay_ms * 1_000_000
        with self._condition:
            if not self._running:
                return False
            heapq.heappush(self._heap, (due_ns, next(self._sequence), action))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._wait, name="aeromq-producer-retry-timer", daemon=True
                )
                self._thread.start()
            self._condition.notify()
        return True

    def close(self) -> list[Callable[[], None]]:
        """Stop; the actions that were waiting, not run (the caller fails their sends)."""
        with self._condition:
            self._running = False
            dropped = [entry[2] for entry in self._heap]
            self._heap.clear()
            self._condition.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)
        return dropped

    def _wait(self) -> None:
        condition, heap = self._condition, self._heap
        while True:
            with condition:
                while True:
                    if not self._running:
                        return
                    if heap:
                        wait_ns = heap[0][0] - time.monotonic_ns()
                        if wait_ns <= 0:
                            action = heapq.heappop(heap)[2]
                            break
                        condition.wait(wait_ns / 1e9)
                    else:
                        condition.wait()
            try:
                self._run(action)
            except RuntimeError:  # the retry thread shut down: the action fails its send
                action()
