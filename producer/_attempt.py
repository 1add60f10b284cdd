"""``Attempt``: one send's retry state, and the response codes RocketMQ's producer tries again.

An :class:`Attempt` is made once per send by ``SendPath.prepare`` (``_send_path.py``), with the
send's record batch encoded once: every attempt sends the same bytes. The sync attempts
(``SendPath.attempt_sync``) and the async sends (``_async_sends.py``) count its attempts down and
``SendPath.retry_delay_ms`` sets the broker that failed, which the queue choice
(``QueueRouter.target``, ``_routing.py``) then avoids, or, when a broker group's leader moved or
is being elected (``_failover.py``), the queue to try again (``retry_queue``) and the back-off.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

from aeromq.client import Message, MessageQueue, ResponseCode
from aeromq.client.failover import Backoff

__all__ = ["RETRY_CODES", "RETRY_ELSEWHERE_CODES", "Attempt", "QueueChooser", "Stamp"]

RETRY_CODES: Final = frozenset((ResponseCode.SYSTEM_ERROR, ResponseCode.SERVICE_NOT_AVAILABLE))
"""Broker-side failures tried again on the next queue (besides the client's retriable errors)."""
RETRY_ELSEWHERE_CODES: Final = frozenset((ResponseCode.TOPIC_NOT_EXIST, ResponseCode.NO_PERMISSION))
"""Refusals tried again only when another broker serves the topic."""


class Stamp(NamedTuple):
    """Where and how a batch was stamped: its queue, producer id, epoch, first sequence and its
    place in its queue's stamping order (``serial``)."""

    queue: MessageQueue
    producer_id: int
    epoch: int
    base_sequence: int
    serial: int


QueueChooser = Callable[[Sequence[MessageQueue]], MessageQueue]
"""A send's selector with its message and ``arg`` bound: the queue of the writable queues."""


class Attempt:
    """One send's retry state (sync or async), with its record batch, encoded once.

    Caller: ``SendPath.prepare`` makes it. Affects: ``attempts_left`` (counted down per attempt),
    ``last_broker``, ``retry_queue`` and ``backoff`` (set by ``SendPath.retry_delay_ms``) change
    as the send goes on."""

    __slots__ = (
        "attempts_left",
        "backoff",
        "batch",
        "deadline_ns",
        "last_broker",
        "maybe_stored",
        "messages",
        "queue",
        "restamps",
        "retry_queue",
        "selector",
        "stamp",
        "unique_ids",
    )

    def __init__(
        self,
        messages: Sequence[Message],
        batch: bytes,
        unique_ids: list[str],
        deadline_ns: int,
        attempts: int,
        queue: MessageQueue | None,
        selector: QueueChooser | None,
    ) -> None:
        self.messages = messages
        self.batch = batch
        self.unique_ids = unique_ids
        self.deadline_ns = deadline_ns
        self.attempts_left = attempts
        self.queue = queue
        self.selector = selector
        self.last_broker: str | None = None
        self.retry_queue: MessageQueue | None = None
        """The queue of the next try, once (its broker's leader moved, or is being elected)."""
        self.backoff: Backoff | None = None
        """The waits between tries while the broker's group elects a leader (made when
        needed)."""
        self.stamp: Stamp | None = None
        """An idempotent producer's: the queue and sequences its batch is sent with, stamped
        into it by the session's encoding of each try (``_sequences.py``)."""
        self.restamps = 0
        """How many times it was stamped anew after ``OUT_OF_ORDER_SEQUENCE``."""
        self.maybe_stored = False
        """Whether a try may have been stored (it went out, and no answer said it was not):
        an idempotent producer's retries then stay on its queue."""

    @property
    def pinned(self) -> bool:
        """Whether the send was given its queue (a queue, or a selector): never elsewhere."""
        return self.queue is not None or self.selector is not None
