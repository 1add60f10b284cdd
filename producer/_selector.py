"""Queue selection: which of a topic's writable queues a send goes to.

A selector is any callable ``selector(queues, message, arg) -> MessageQueue`` (RocketMQ's
``MessageQueueSelector``); the queues come sorted (RocketMQ's ``MessageQueue`` order). The
producer uses :class:`RoundRobinSelector` unless told otherwise; on a retry it skips the
broker that just failed when another one serves the topic (RocketMQ's
``selectOneMessageQueue(lastBrokerName)``). A custom selector is never second-guessed: its
retries go where it says.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

from aeromq.client import IllegalArgumentError, Message, MessageQueue
from aeromq.common import hash_code

__all__ = [
    "KeyHashSelector",
    "QueueSelector",
    "RandomSelector",
    "RoundRobinSelector",
    "select_avoiding",
]

# the third argument is the send's ``arg``, of whatever type the application's selector takes
QueueSelector: TypeAlias = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]


class RoundRobinSelector:
    """Each call takes the next queue (one counter per selector, shared by all topics)."""

    def __init__(self, start: int | None = None) -> None:
        self.counter = itertools.count(random.randrange(1 << 16) if start is None else start)
        """The number of the next call (``QueueRouter.target`` takes it for a first try)."""

    def __call__(
        self, queues: Sequence[MessageQueue], message: Message, arg: object
    ) -> MessageQueue:
        return queues[next(self.counter) % len(queues)]


class KeyHashSelector:
    """The queue of the hash of ``arg`` when given, else of the message's first key (Java's
    ``String.hashCode``, as RocketMQ's ``SelectMessageQueueByHash``): messages with the same
    key go to the same queue, in order. A message with no key and no ``arg`` is an error."""

    def __call__(
        self, queues: Sequence[MessageQueue], message: Message, arg: object
    ) -> MessageQueue:
        if arg is None:
            keys = message.keys
            if not keys:
                raise IllegalArgumentError(
                    "hash selection needs a key or an arg", topic=message.topic
                )
            arg = keys[0]
        value = hash_code(arg) if isinstance(arg, str) else hash(arg)
        return queues[abs(value) % len(queues)]


class RandomSelector:
    """A random queue per send (RocketMQ's ``SelectMessageQueueByRandom``)."""

    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(seed)

    def __call__(
        self, queues: Sequence[MessageQueue], message: Message, arg: object
    ) -> MessageQueue:
        return queues[self._random.randrange(len(queues))]


def select_avoiding(
    selector: RoundRobinSelector,
    queues: Sequence[MessageQueue],
    message: Message,
    last_broker: str | None,
) -> MessageQueue:
    """Round robin, skipping ``last_broker`` (a retry) when another broker has a queue."""
    if last_broker is not None:
        others = [queue for queue in queues if queue.broker_name != last_broker]
        if others:
            return selector(others, message, None)
    return selector(queues, message, None)


class LeastSentSelector:
    """The queue that this producer has sent the fewest messages to (ties: the first listed),
    counting ``count`` more for it: for grouped sends (``producer/_coalesce.py``), whose groups
    differ in size, so that round robin by request would not give some queues many times the
    messages of others (a consumer reading the queues in turn would then wait on the short
    ones). A queue not seen before starts level with the least sent."""

    __slots__ = ("_sent",)

    def __init__(self) -> None:
        self._sent: dict[MessageQueue, int] = {}

    def pick(self, queues: Sequence[MessageQueue], count: int) -> MessageQueue:
        """The least sent to of ``queues``, counted ``count`` messages more."""
        sent = self._sent
        if any(queue not in sent for queue in queues):
            floor = min(sent.values(), default=0)
            for queue in queues:
                sent.setdefault(queue, floor)
        chosen = min(queues, key=sent.__getitem__)
        sent[chosen] += count
        return chosen
