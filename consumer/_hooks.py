"""Consume hooks: the application's code around each poll that returns messages (RocketMQ's
``ConsumeMessageHook``, which its lite pull consumer runs in ``poll``; Kafka's
``ConsumerInterceptor.onConsume``), for tracing and auditing.

Both halves run on the polling thread, before ``poll`` returns: ``consume_message_before`` with
the messages, then ``consume_message_after`` with ``success`` set (the messages are handed to
the application). A tracer reads the trace context a send hook put in the messages' properties
(``message.get_property(name)``). ``poll()`` gives the messages; ``poll_batch()`` gives its
:class:`~consumer.MessageBatch` in ``batch`` (no object per message is made for the hooks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aeromq.client import MessageExt
    from aeromq.consumer.message_batch import MessageBatch

__all__ = ["ConsumeMessageContext", "ConsumeMessageHook"]


@dataclass(slots=True)
class ConsumeMessageContext:
    """One poll's delivery as its hooks see it: ``messages`` (``poll``) or ``batch``
    (``poll_batch``)."""

    consumer_group: str
    messages: Sequence[MessageExt] = ()
    batch: MessageBatch | None = None
    success: bool = False
    """False in ``consume_message_before``; True once the messages are handed over."""
    props: dict[str, Any] = field(default_factory=dict)
    """Free for the hooks: what one keeps from before to after."""


class ConsumeMessageHook(Protocol):
    """What :meth:`DefaultLitePullConsumer.register_consume_message_hook` takes."""

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        """Caller: ``poll`` and ``poll_batch``, on the polling thread, once a poll has messages
        and before they are handed over (``context.success`` False; ``value`` not yet
        deserialized). An exception raised here is logged and the next hook runs."""
        ...

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        """Caller: ``poll`` and ``poll_batch``, on the polling thread, after
        :meth:`consume_message_before`, with ``context.success`` True (the same ``context``,
        so ``props`` carries what the first half kept)."""
        ...
