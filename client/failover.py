"""Following a broker group's leader: what a failed request says about where to go next.

A broker name may be a group of members (a leader and its followers, control on etcd): only the
leader stores and serves; a follower answers ``NOT_LEADER``, naming the leader when it knows it
(``Status.leader``); a leader that died is seen as :class:`~common.BrokerUnavailableError` (its
session failed, its media driver stopped, gRPC ``UNAVAILABLE``). A client that sees one of these
looks the broker's current member up again (:meth:`~client.RouteResolver.follow_leader`: the hint
at once, else one route query from any endpoint that answers, shared by every request that
failed on that member) and sends there, backing off between tries while no new leader is known
(:class:`Backoff`), all within the caller's deadline.

- :func:`is_failover_error`: the errors that mean "the leader moved, or is moving":
  :class:`~common.BrokerUnavailableError` and its subclasses (:class:`~common.NotLeaderError`,
  :class:`~common.NotEnoughReplicasError`) and :class:`~common.ReplicationTimeoutError` (stored
  on a leader that could not get it acknowledged: often a leader about to lose its lease).
- :func:`should_follow_leader`: those, and :class:`~common.TopicNotFoundError` from a member
  (its metadata may lag: a follower, or a leader just elected that has not applied the topic's
  record yet); the route query that follows it ends the wait when no endpoint knows the topic.
- :func:`leader_hint`: the leader a ``NOT_LEADER`` answer names, if any.
- :func:`error_for_status`: the error of a failed response's ``Status``, with the leader it
  names kept as ``values["leader"]`` (a ``common_pb2.BrokerEndpoints``) and its address in the
  message.
- :class:`Backoff`: bounded exponential back-off that never sleeps past a deadline.

Caller: the route resolver, the gRPC client, producers, consumers and the Spark connector.
No I/O here but :meth:`Backoff.sleep`.
"""

from __future__ import annotations

import time
from typing import Final

from aeromq.common import (
    BrokerUnavailableError,
    ClientError,
    NotLeaderError,
    ReplicationTimeoutError,
    ResponseCode,
    TopicNotFoundError,
    error_for_code,
)
from aeromq.proto import common_pb2

__all__ = [
    "FAILOVER_BACKOFF_FIRST_MS",
    "FAILOVER_BACKOFF_MAX_MS",
    "MIN_TRY_MS",
    "Backoff",
    "error_for_status",
    "is_failover_error",
    "leader_hint",
    "should_follow_leader",
]

FAILOVER_BACKOFF_FIRST_MS: Final = 25
"""The first wait before trying a broker again while its group has no new leader known."""
FAILOVER_BACKOFF_MAX_MS: Final = 400
"""The longest wait between two tries: an election takes a lease's time to start (2 s by
default) and a few hundred ms to finish, and a client should see the new leader soon after."""
MIN_TRY_MS: Final = 5
"""What a try needs of the deadline at least (a send takes well under a millisecond, a route
query about one): a back-off never leaves less."""


def is_failover_error(error: BaseException) -> bool:
    """Whether ``error`` says the broker's leader moved or is moving (see the module)."""
    return isinstance(error, BrokerUnavailableError | ReplicationTimeoutError)


def should_follow_leader(error: BaseException) -> bool:
    """Whether a request that failed with ``error`` on a broker's member asks for the broker's
    leader again (:meth:`~client.RouteResolver.follow_leader`): a failover error, or a topic
    the member does not know (a group's member learns a topic through the log, so it may lag
    the leader; the route query raises ``TopicNotFoundError`` when no endpoint knows it)."""
    return is_failover_error(error) or isinstance(error, TopicNotFoundError)


def leader_hint(error: BaseException) -> common_pb2.BrokerEndpoints | None:
    """The leader a :class:`~common.NotLeaderError` names (None: none named, or another error)."""
    if not isinstance(error, NotLeaderError):
        return None
    leader = error.values.get("leader")
    if isinstance(leader, common_pb2.BrokerEndpoints) and leader.grpc_address:
        return leader
    return None


def error_for_status(status: common_pb2.Status, **values: object) -> ClientError:
    """The error of a failed response's ``status`` (the caller raises it): the class of its code
    (:func:`~common.error_for_code`), with ``values``; a ``NOT_LEADER`` status's leader kept as
    ``values["leader"]`` (None when it names none) and named in the message as
    ``leader_address``."""
    code = status.code
    if code != ResponseCode.NOT_LEADER:
        return error_for_code(code, status.message, **values)
    leader = status.leader if status.HasField("leader") else None
    if leader is not None:
        values["leader_address"] = leader.grpc_address
    error = error_for_code(code, status.message or "not the leader of its group", **values)
    error.values["leader"] = leader  # kept, not printed: the message names its address
    setattr(error, "leader", leader)  # noqa: B010  (values are attributes too: ClientError)
    return error


class Backoff:
    """Bounded exponential back-off: ``first_ms``, doubling, at most ``max_ms``; never past the
    caller's deadline. One per retry loop (not thread-safe)."""

    __slots__ = ("_next_ms", "max_ms")

    def __init__(
        self, first_ms: int = FAILOVER_BACKOFF_FIRST_MS, max_ms: int = FAILOVER_BACKOFF_MAX_MS
    ) -> None:
        self._next_ms = first_ms
        self.max_ms = max_ms

    def next_delay_ms(self) -> int:
        """The next wait, and the one after it doubled (up to ``max_ms``)."""
        delay = self._next_ms
        self._next_ms = min(self.max_ms, delay * 2)
        return delay

    def sleep(self, deadline_ns: int) -> bool:
        """Wait the next delay, cut so that :data:`MIN_TRY_MS` remain for a try before the
        deadline (monotonic ns); False, without waiting, when not even that remains."""
        wait_ns = min(
            self.next_delay_ms() * 1_000_000,
            deadline_ns - time.monotonic_ns() - MIN_TRY_MS * 1_000_000,
        )
        if wait_ns <= 0:
            return False
        time.sleep(wait_ns / 1e9)
        return True
