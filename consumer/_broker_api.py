"""``BrokerApi``: exactly the broker calls the lite pull consumer makes, behind one Protocol.

The consumer's state machines (rebalance, pull tasks, offset stores) talk to brokers only
through this interface, so they can be driven in tests by :class:`consumer.testing.InMemoryBroker`
and in production by the implementation over the gRPC control plane and the transport session.

Calls and their threads:

- Control calls (routes, offsets, consumer ids, heartbeats) block the calling thread for at
  most the implementation's request timeout and raise a :class:`~client.ClientError` on
  failure (:class:`~client.RequestTimeoutError`, :class:`~client.BrokerUnavailableError`, ...).
- :meth:`BrokerApi.pull_async` returns at once; the implementation calls ``callback`` exactly
  once, from any thread, with a :class:`PullResult` or the error. Callbacks must be quick: the
  consumer only caches the messages and schedules the next pull.
- Membership changes pushed by a broker reach the ``MembershipListener`` given to
  :meth:`BrokerApi.start_heartbeat`, from the implementation's thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from aeromq.client import MessageExt, MessageQueue, SubscriptionData
from aeromq.consumer.config import ConsumeFromWhere, MessageModel

__all__ = [
    "BrokerApi",
    "ConsumerHeartbeat",
    "MembershipListener",
    "PullCallback",
    "PullResult",
    "PullStatus",
    "QueueGrant",
]


class PullStatus(IntEnum):
    """RocketMQ's ``PullStatus`` (same ordinals as the wire enum)."""

    FOUND = 0
    NO_NEW_MSG = 1
    NO_MATCHED_MSG = 2
    OFFSET_ILLEGAL = 3


@dataclass(frozen=True, slots=True)
class PullResult:
    """One pull's answer: where to pull next, the queue's bounds, and the messages found."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: Sequence[MessageExt] = ()


@dataclass(frozen=True, slots=True)
class QueueGrant:
    """The broker's answer to :meth:`BrokerApi.acquire_queue`: granted (``holder`` empty) with
    the group's committed offset (-1: none), or refused while ``holder``, a live member of
    the group, still holds the queue."""

    holder: str
    committed_offset: int = -1

    @property
    def granted(self) -> bool:
        """Whether the queue is the asker's now (no other member holds it)."""
        return not self.holder


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeat:
    """What a consumer tells brokers about itself: id, group and subscriptions."""

    client_id: str
    consumer_group: str
    message_model: MessageModel
    consume_from_where: ConsumeFromWhere
    subscriptions: tuple[SubscriptionData, ...] = field(default=())


PullCallback = Callable[[PullResult | None, BaseException | None], None]
"""``callback(result, None)`` on an answer, ``callback(None, error)`` on a failure."""

MembershipListener = Callable[[str, Sequence[str]], None]
"""``listener(consumer_group, consumer_ids)``: a broker pushed the group's members."""


class BrokerApi(Protocol):
    """The broker calls of the lite pull consumer (see the module doc for threads and errors)."""

    def fetch_subscribe_queues(self, topic: str) -> set[MessageQueue]:
        """Every readable queue of ``topic`` over all brokers of its route."""
        ...

    def pull_async(
        self,
        queue: MessageQueue,
        subscription: SubscriptionData,
        consumer_group: str,
        offset: int,
        max_nums: int,
        suspend_timeout_ms: int,
        timeout_ms: int,
        callback: PullCallback,
        *,
        nonblocking: bool = False,
        lazy: bool = False,
    ) -> bool:
        """Pull up to ``max_nums`` messages from ``offset``; a NO_NEW_MSG answer may be held
        by the broker up to ``suspend_timeout_ms`` (long polling); fail after ``timeout_ms``.
        True. With ``nonblocking`` (a thread that must not block, such as the one that read
        the last answer), False, with nothing sent nor called back, when the pull cannot be
        sent at once (no fresh route or open session at hand, a back-pressured channel).
        ``lazy`` (with ``nonblocking``): the pull need not wake the broker, which reads it
        when something else does, or within its idle park (a caught-up queue's next pull,
        which would only be held until the next arrival)."""
        ...

    def query_offset(self, consumer_group: str, queue: MessageQueue) -> int:
        """The group's committed offset of ``queue``, or -1 when it never committed one."""
        ...

    def commit_offset(self, consumer_group: str, queue: MessageQueue, offset: int) -> None:
        """Commit ``offset`` (the next offset to consume) for the group."""
        ...

    def acquire_queue(
        self, consumer_group: str, queue: MessageQueue, client_id: str, *, force: bool = False
    ) -> QueueGrant:
        """Take ``queue`` over for ``client_id`` before pulling it: granted unless another
        live member of the group holds it (``force``: granted anyway)."""
        ...

    def release_queue(
        self, consumer_group: str, queue: MessageQueue, offset: int, *, client_id: str
    ) -> None:
        """Commit ``offset`` (-1: nothing to commit), then ``client_id`` lets go of ``queue``:
        the member it moved to is granted it next."""
        ...

    def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message stored at or after ``timestamp_ms``."""
        ...

    def min_offset(self, queue: MessageQueue) -> int:
        """The queue's first offset still stored."""
        ...

    def max_offset(self, queue: MessageQueue) -> int:
        """The offset the queue's next message will get."""
        ...

    def consumer_ids(self, consumer_group: str, topic: str) -> list[str]:
        """The group's live members, as the broker serving ``topic`` knows them."""
        ...

    def start_heartbeat(self, heartbeat: ConsumerHeartbeat, listener: MembershipListener) -> None:
        """Register with the brokers now (this raises if none answers) and keep the membership
        stream open; pushes of the group's members go to ``listener``."""
        ...

    def send_heartbeat(self, heartbeat: ConsumerHeartbeat) -> None:
        """Send the consumer's current subscriptions now (after subscribe or unsubscribe), and
        renew its registration (the periodic heartbeat)."""
        ...

    def unregister(self, client_id: str, consumer_group: str) -> None:
        """Leave the group at once (clean shutdown): brokers push the change to the others."""
        ...

    def update_endpoints(self, endpoints: Sequence[str]) -> None:
        """Use these name server or broker addresses from now on."""
        ...

    def close(self) -> None:
        """Release connections and threads; pending pulls fail or are dropped."""
        ...
