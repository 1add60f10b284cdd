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

An attempt waits for its answer at most ``request_timeout_ms`` (:func:`attempt_limit_ms`; Kafka's
``request.timeout.ms`` within ``delivery.timeout.ms``), an idempotent producer's only: one
unanswered past it (a leader paused, or cut off, under the send) is abandoned, its outcome
unknown (:func:`abandoned`: a failover error, so the member is looked up again as above), and
tried again within the send's timeout; the batch's sequence makes the retry safe (a broker that
stored it answers with its stored result). A producer that is not idempotent gives an attempt
the send's whole remaining time, as before: its retry could store the message twice.

A route source that cannot follow a leader (a :class:`~producer.StaticRoute`), or a route query
that no endpoint answers (a single broker that is down, given as the only endpoint), leaves the
send to RocketMQ's rules as before: a single broker behaves as it always did.

The async sends that wait (3.) wait on one scheduler thread of the producer
(``SendPath.retry_later``, :class:`~client.scheduler.TaskScheduler`): no thread sleeps for a send.

Caller: ``SendPath.retry_delay_ms`` (sync and async sends). Affects: the attempt's
``retry_queue``, ``attempts_left`` and ``backoff``; the route source's members.
"""

from __future__ import annotations

import logging
import time
from typing import Final

from aeromq.client import (
    BrokerUnavailableError,
    ClientError,
    MessageQueue,
    ReplicationTimeoutError,
    RequestTimeoutError,
)
from aeromq.client.failover import MIN_TRY_MS, Backoff, leader_hint
from aeromq.client.route import BrokerRoute, RouteResolver, TopicRoute
from aeromq.producer._attempt import Attempt
from aeromq.producer._route import RouteSource

__all__ = ["ELSEWHERE", "GIVE_UP", "abandoned", "attempt_limit_ms", "fail_over", "next_member"]

_log = logging.getLogger(__name__)

GIVE_UP: Final = -1
""":func:`fail_over`: the send is not tried again (out of time)."""
ELSEWHERE: Final = -2
""":func:`fail_over`: RocketMQ's rules decide (another broker, or the source cannot follow)."""


def attempt_limit_ms(request_timeout_ms: int, remaining_ms: int, *, idempotent: bool) -> int:
    """How long one attempt of a send waits for its answer: ``request_timeout_ms`` for an
    idempotent producer, never past the send's ``remaining_ms``; ``remaining_ms`` otherwise."""
    return min(request_timeout_ms, remaining_ms) if idempotent else remaining_ms


def abandoned(error: ClientError, limit_ms: int, remaining_ms: int) -> ClientError:
    """``error``, an attempt's failure; when it is the attempt's own limit that ran out
    (``limit_ms`` short of the send's ``remaining_ms``), a :class:`BrokerUnavailableError`
    instead (the caller raises it from ``error``): the attempt is abandoned, its outcome
    unknown, and its broker's member looked up again (:func:`fail_over`)."""
    if (
        limit_ms >= remaining_ms
        or not isinstance(error, RequestTimeoutError)
        or isinstance(error, ReplicationTimeoutError)
    ):
        return error
    return BrokerUnavailableError(
        "send attempt unanswered, abandoned (its outcome unknown)", request_timeout_ms=limit_ms
    )


def next_member(
    source: RouteSource,
    topic: str,
    member: BrokerRoute,
    error: ClientError,
    deadline_ns: int,
    query_timeout_ms: int,
) -> BrokerRoute | None:
    """The member of ``member``'s broker to send to next (``member`` itself: none other known
    yet); None when ``source`` cannot follow a leader or no endpoint answers its query (each
    endpoint asked for ``query_timeout_ms`` at most: a paused member answers nothing)."""
    if not isinstance(source, RouteResolver):
        return None
    remaining_s = (deadline_ns - time.monotonic_ns()) / 1e9
    if remaining_s <= 0:
        return None
    timeout_s = min(remaining_s, query_timeout_ms / 1000)
    try:
        return source.follow_leader(topic, member, leader_hint(error), timeout_s=timeout_s)
    except ClientError as lookup:
        _log.info("no route to follow broker=%s: %s", member.broker_name, lookup)
        return None


def fail_over(
    source: RouteSource,
    error: ClientError,
    route: TopicRoute,
    target: MessageQueue,
    attempt: Attempt,
    query_timeout_ms: int,
) -> int:
    """The next step of ``attempt`` after ``error`` (a failover error) on ``target``: a delay in
    ms before trying ``target`` again (0: at once), :data:`ELSEWHERE` or :data:`GIVE_UP` (see
    the module); each endpoint's route query bounded by ``query_timeout_ms`` (the producer's
    ``request_timeout_ms``)."""
    member = route.brokers.get(target.broker_name)
    if member is None:
        return ELSEWHERE
    moved = next_member(source, target.topic, member, error, attempt.deadline_ns, query_timeout_ms)
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
