"""``ClientCommandAdapter``: reads client commands off the to-driver ring buffer and routes them.

Aeron's ``ClientCommandAdapter``: each record is decoded with its :mod:`transport.command` codec
and handed to the conductor. Nothing a client writes can crash the conductor: every command is
handled inside a guard, and a failure becomes

- an ON_ERROR to the command's correlation id (read from its correlated header when the record
  is long enough; 0 otherwise) with Aeron's error code and a text naming the offending values:
  the handler's code for a refused command, ``MALFORMED_COMMAND`` for a record too short or
  inconsistent to decode, ``UNKNOWN_COMMAND_TYPE_ID`` for a type id that is not a command,
  ``NOT_SUPPORTED`` for a command this driver does not implement, and ``GENERIC_ERROR`` with the
  exception for anything else;
- one more on the ``Errors`` system counter, and an entry in the cnc error log.

(Aeron's C driver only logs a malformed or unknown command; answering as well costs nothing and
lets a client fail fast.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Protocol

from aeromq.transport._errors import MalformedCommandError, RegistrationError
from aeromq.transport.command import (
    ADD_COUNTER,
    ADD_DESTINATION,
    ADD_EXCLUSIVE_PUBLICATION,
    ADD_PUBLICATION,
    ADD_RCV_DESTINATION,
    ADD_STATIC_COUNTER,
    ADD_SUBSCRIPTION,
    CLIENT_CLOSE,
    CLIENT_KEEPALIVE,
    CORRELATED_MESSAGE_LENGTH,
    CORRELATION_ID_OFFSET,
    REMOVE_COUNTER,
    REMOVE_DESTINATION,
    REMOVE_PUBLICATION,
    REMOVE_PUBLICATION_MESSAGE_LENGTH,
    REMOVE_RCV_DESTINATION,
    REMOVE_SUBSCRIPTION,
    TERMINATE_DRIVER,
    CorrelatedMessage,
    CounterMessage,
    ErrorCode,
    PublicationMessage,
    RemoveMessage,
    RemovePublicationMessage,
    SubscriptionMessage,
    TerminateDriverMessage,
    decode_correlated_message,
    decode_counter_message,
    decode_publication_message,
    decode_remove_message,
    decode_remove_publication_message,
    decode_subscription_message,
    decode_terminate_driver_message,
    type_name,
)
from aeromq.transport.concurrent import AtomicBuffer, ManyToOneRingBuffer
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.driver.client_proxy import ClientProxy
from aeromq.transport.driver.command_error import command_error

__all__ = ["COMMAND_DRAIN_LIMIT", "ClientCommandAdapter", "CommandHandler"]

COMMAND_DRAIN_LIMIT = 10
"""Commands read per duty cycle (Aeron's ``COMMAND_DRAIN_LIMIT``)."""

_UNSUPPORTED = (
    ADD_DESTINATION,
    REMOVE_DESTINATION,
    ADD_RCV_DESTINATION,
    REMOVE_RCV_DESTINATION,
    ADD_STATIC_COUNTER,
)


class CommandHandler(Protocol):
    """What the conductor does with each decoded command."""

    def on_add_publication(self, command: PublicationMessage, is_exclusive: bool) -> None: ...

    def on_remove_publication(self, command: RemovePublicationMessage) -> None: ...

    def on_add_subscription(self, command: SubscriptionMessage) -> None: ...

    def on_remove_subscription(self, command: RemoveMessage) -> None: ...

    def on_client_keepalive(self, command: CorrelatedMessage) -> None: ...

    def on_add_counter(self, command: CounterMessage) -> None: ...

    def on_remove_counter(self, command: RemoveMessage) -> None: ...

    def on_client_close(self, command: CorrelatedMessage) -> None: ...

    def on_terminate_driver(self, command: TerminateDriverMessage) -> None: ...


Route = Callable[[AtomicBuffer, int, int], None]


class ClientCommandAdapter:
    """Drains the to-driver ring into ``handler`` (see module). Conductor thread only."""

    __slots__ = (
        "_errors",
        "_handler",
        "_on_message",
        "_proxy",
        "_record_error",
        "_ring",
        "_routes",
    )

    def __init__(
        self,
        ring: ManyToOneRingBuffer,
        handler: CommandHandler,
        client_proxy: ClientProxy,
        errors_counter: AtomicCounter,
        record_error: Callable[[BaseException], object],
    ) -> None:
        self._ring = ring
        self._handler = handler
        self._proxy = client_proxy
        self._errors = errors_counter
        self._record_error = record_error
        self._routes: dict[int, Route] = {
            ADD_PUBLICATION: self._add_publication,
            ADD_EXCLUSIVE_PUBLICATION: self._add_exclusive_publication,
            REMOVE_PUBLICATION: self._remove_publication,
            ADD_SUBSCRIPTION: self._add_subscription,
            REMOVE_SUBSCRIPTION: self._remove_subscription,
            CLIENT_KEEPALIVE: self._client_keepalive,
            ADD_COUNTER: self._add_counter,
            REMOVE_COUNTER: self._remove_counter,
            CLIENT_CLOSE: self._client_close,
            TERMINATE_DRIVER: self._terminate_driver,
        }
        self._on_message = self.on_message

    def receive_commands(self) -> Callable[[], int]:
        """The conductor's receive: a call that handles up to ``COMMAND_DRAIN_LIMIT`` commands
        and returns how many (a partial of the ring's read: one Python call a duty cycle)."""
        return functools.partial(self._ring.read, self._on_message, COMMAND_DRAIN_LIMIT)

    def on_message(self, msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        """Handle one record of the ring (the ring buffer's handler); never raises."""
        correlation_id = 0
        try:
            if length >= CORRELATED_MESSAGE_LENGTH:
                correlation_id = buffer.get_int64(index + CORRELATION_ID_OFFSET)
            route = self._routes.get(msg_type_id)
            if route is None:
                raise _unrouted(msg_type_id, length)
            route(buffer, index, length)
        except RegistrationError as error:
            self._fail(correlation_id, error.code, str(error), error)
        except MalformedCommandError as error:
            self._fail(correlation_id, ErrorCode.MALFORMED_COMMAND, str(error), error)
        except Exception as error:
            text = f"{type(error).__name__}: {error}"
            self._fail(correlation_id, ErrorCode.GENERIC_ERROR, text, error)

    def _fail(self, correlation_id: int, code: int, text: str, error: Exception) -> None:
        self._errors.increment_ordered()
        self._record_error(error)
        try:
            self._proxy.on_error(correlation_id, code, text)
        except Exception as send_error:
            self._errors.increment_ordered()
            self._record_error(send_error)

    # ----------------------------------------------------------------------------------------
    # Routes: decode, then hand to the conductor

    def _add_publication(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._handler.on_add_publication(decode_publication_message(buffer, index, length), False)

    def _add_exclusive_publication(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._handler.on_add_publication(decode_publication_message(buffer, index, length), True)

    def _remove_publication(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        if length >= REMOVE_PUBLICATION_MESSAGE_LENGTH:
            command = decode_remove_publication_message(buffer, index, length)
        else:  # clients before Aeron 1.48 send no flags
            plain = decode_remove_message(buffer, index, length)
            command = RemovePublicationMessage(
                plain.client_id, plain.correlation_id, plain.registration_id, 0
            )
        self._handler.on_remove_publication(command)

    def _add_subscription(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._handler.on_add_subscription(decode_subscription_message(buffer, index, length))

    def _remove_subscription(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._handler.on_remove_subscription(decode_remove_message(buffer, index, length))

    def _client_keepalive(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._handler.on_client_keepalive(decode_correlated_message(buffer, index, length))

    def _add_counter(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._handler.on_add_counter(decode_counter_message(buffer, index, length))

    def _remove_counter(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._handler.on_remove_counter(decode_remove_message(buffer, index, length))

    def _client_close(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._handler.on_client_close(decode_correlated_message(buffer, index, length))

    def _terminate_driver(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._handler.on_terminate_driver(decode_terminate_driver_message(buffer, index, length))


def _unrouted(msg_type_id: int, length: int) -> RegistrationError:
    if msg_type_id in _UNSUPPORTED:
        return command_error(
            ErrorCode.NOT_SUPPORTED,
            "command not supported by this driver",
            command=type_name(msg_type_id),
        )
    return command_error(
        ErrorCode.UNKNOWN_COMMAND_TYPE_ID,
        "unknown command type",
        msg_type_id=msg_type_id,
        length=length,
    )
