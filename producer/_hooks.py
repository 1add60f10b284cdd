"""Send hooks: the application's code around each send (RocketMQ's ``SendMessageHook``, Kafka's
``ProducerInterceptor``), for tracing and auditing.

A hook's ``send_message_before`` runs before the messages are encoded, so it may add a user
property to them (a trace context, as OpenTelemetry's propagators inject one); its
``send_message_after`` runs once the send is settled, with the results or the exception, on the
thread that settled it (the caller's for a sync send, a transport thread for an async one:
keep it short). ``context.props`` carries a hook's own state from before to after (a span).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aeromq.client import Message
    from aeromq.producer._send_result import SendResult

__all__ = ["SendMessageContext", "SendMessageHook", "SendMode"]


class SendMode(enum.Enum):
    """How a send waits for its answer (RocketMQ's ``CommunicationMode``)."""

    SYNC = "sync"
    ASYNC = "async"
    ONEWAY = "oneway"


@dataclass(slots=True)
class SendMessageContext:
    """One send as its hooks see it. ``results`` (one per message) or ``exception`` is set
    before ``send_message_after``; neither for a oneway send, which has no answer."""

    producer_group: str
    topic: str
    messages: Sequence[Message]
    mode: SendMode
    started_ns: int
    """``time.monotonic_ns()`` when the send began (before ``send_message_before``)."""
    results: Sequence[SendResult] | None = None
    exception: BaseException | None = None
    elapsed_ns: int = 0
    """From ``started_ns`` to the answer (set before ``send_message_after``)."""
    props: dict[str, Any] = field(default_factory=dict)
    """Free for the hooks: what one keeps from before to after."""


class SendMessageHook(Protocol):
    """What :meth:`Producer.register_send_message_hook` takes."""

    def send_message_before(self, context: SendMessageContext) -> None:
        """Before the send's messages are encoded (it may add user properties to them)."""
        ...

    def send_message_after(self, context: SendMessageContext) -> None:
        """Once the send is settled: ``context.results`` or ``context.exception`` is set."""
        ...
