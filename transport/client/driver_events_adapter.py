"""``DriverEventsAdapter``: the driver's responses and notifications, filtered for this client.

The driver broadcasts every response to every client on the to-clients buffer; each client
picks its own out as Aeron's ``DriverEventsAdapter`` does:

- a response to a command (ON_PUBLICATION_READY, ON_EXCLUSIVE_PUBLICATION_READY,
  ON_SUBSCRIPTION_READY, ON_COUNTER_READY, ON_OPERATION_SUCCESS, ON_ERROR) is taken when its
  correlation id is the one a control call is waiting for, or one of this client's
  asynchronous commands (which is then no longer pending); others are other clients';
- ON_AVAILABLE_IMAGE / ON_UNAVAILABLE_IMAGE go to the conductor, which keeps only those for
  its own subscriptions (by subscription registration id);
- ON_COUNTER_READY for a counter this client did not ask for, and ON_UNAVAILABLE_COUNTER, are
  counter availability news for every client;
- ON_CLIENT_TIMEOUT is taken only when its client id is this client's;
- ON_ERROR with code CHANNEL_ENDPOINT_ERROR concerns a channel status indicator.

Messages are read through a :class:`~transport.concurrent.copy_broadcast_receiver.
CopyBroadcastReceiver`: falling a lap behind the driver raises
:class:`~transport.TransportStateError` (the client can no longer trust its view).
"""

from __future__ import annotations

from typing import Final, Protocol

from aeromq.transport._errors import TransportStateError
from aeromq.transport.command import (
    ON_AVAILABLE_IMAGE,
    ON_CLIENT_TIMEOUT,
    ON_COUNTER_READY,
    ON_ERROR,
    ON_EXCLUSIVE_PUBLICATION_READY,
    ON_OPERATION_SUCCESS,
    ON_PUBLICATION_READY,
    ON_SUBSCRIPTION_READY,
    ON_UNAVAILABLE_COUNTER,
    ON_UNAVAILABLE_IMAGE,
    ErrorCode,
    decode_client_timeout,
    decode_counter_update,
    decode_error_response,
    decode_image_buffers_ready,
    decode_image_message,
    decode_operation_succeeded,
    decode_publication_buffers_ready,
    decode_subscription_ready,
)
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.broadcast_receiver import BroadcastReceiver
from aeromq.transport.concurrent.copy_broadcast_receiver import CopyBroadcastReceiver

__all__ = ["NO_CORRELATION_ID", "DriverEventsAdapter", "DriverEventsListener"]

NO_CORRELATION_ID: Final = -1
"""Aeron's NULL_VALUE: no control call is waiting for a response."""

MESSAGES_PER_RECEIVE: Final = 64
"""Most driver messages handled by one :meth:`DriverEventsAdapter.receive`."""


class DriverEventsListener(Protocol):
    """What the adapter tells the client conductor."""

    def on_error(self, correlation_id: int, code: int, message: str) -> None: ...

    def on_async_error(self, correlation_id: int, code: int, message: str) -> None: ...

    def on_channel_endpoint_error(self, status_indicator_id: int, message: str) -> None: ...

    def on_new_publication(
        self,
        correlation_id: int,
        registration_id: int,
        stream_id: int,
        session_id: int,
        position_limit_id: int,
        channel_status_id: int,
        log_file_name: str,
        exclusive: bool,
    ) -> None: ...

    def on_new_subscription(self, correlation_id: int, channel_status_id: int) -> None: ...

    def on_available_image(
        self,
        correlation_id: int,
        session_id: int,
        subscription_registration_id: int,
        subscriber_position_id: int,
        log_file_name: str,
        source_identity: str,
    ) -> None: ...

    def on_unavailable_image(
        self, correlation_id: int, subscription_registration_id: int
    ) -> None: ...

    def on_new_counter(self, correlation_id: int, counter_id: int) -> None: ...

    def on_available_counter(self, registration_id: int, counter_id: int) -> None: ...

    def on_unavailable_counter(self, registration_id: int, counter_id: int) -> None: ...

    def on_client_timeout(self) -> None: ...


class DriverEventsAdapter:
    """Reads the to-clients broadcast for client ``client_id`` (see module).

    Caller: the client conductor, under the client lock.
    """

    __slots__ = (
        "_active_correlation_id",
        "_async_command_ids",
        "_in_handler",
        "_listener",
        "_on_message",
        "_received_correlation_id",
        "_receiver",
        "client_id",
        "is_invalid",
    )

    def __init__(
        self,
        client_id: int,
        to_clients_buffer: AtomicBuffer,
        listener: DriverEventsListener,
        async_command_ids: set[int],
    ) -> None:
        receiver = BroadcastReceiver(to_clients_buffer)
        scratch_length = max(4096, receiver.capacity // 8)
        self._receiver = CopyBroadcastReceiver(receiver, scratch_length)
        self._listener = listener
        self._async_command_ids = async_command_ids
        self._active_correlation_id = NO_CORRELATION_ID
        self._received_correlation_id = NO_CORRELATION_ID
        self._on_message = self._guarded_on_message
        self._in_handler = False
        self.client_id = client_id
        self.is_invalid = False
        """True once the broadcast lapped this client (responses were lost): it must stop."""

    @property
    def received_correlation_id(self) -> int:
        """The awaited correlation id if the last :meth:`receive` got its response, else -1."""
        return self._received_correlation_id

    def receive(self, active_correlation_id: int) -> int:
        """Handle the messages waiting (up to ``MESSAGES_PER_RECEIVE``); return how many.

        ``active_correlation_id`` is the command a control call is waiting for (or
        ``NO_CORRELATION_ID``); :attr:`received_correlation_id` says if its answer came.
        """
        self._active_correlation_id = active_correlation_id
        self._received_correlation_id = NO_CORRELATION_ID
        receive = self._receiver.receive
        on_message = self._on_message
        count = 0
        try:
            while count < MESSAGES_PER_RECEIVE and receive(on_message):
                count += 1
        except TransportStateError:
            if not self._in_handler:  # the receiver's: lapped, or a message overwritten
                self.is_invalid = True
            raise
        finally:
            self._in_handler = False
        return count

    def _guarded_on_message(
        self, msg_type_id: int, buffer: AtomicBuffer, index: int, length: int
    ) -> None:
        self._in_handler = True
        self.on_message(msg_type_id, buffer, index, length)
        self._in_handler = False

    def _is_mine(self, correlation_id: int) -> bool:
        if correlation_id == self._active_correlation_id:
            self._received_correlation_id = correlation_id
            return True
        if correlation_id in self._async_command_ids:
            self._async_command_ids.discard(correlation_id)
            return True
        return False

    def on_message(self, msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        listener = self._listener
        if msg_type_id == ON_AVAILABLE_IMAGE:
            image = decode_image_buffers_ready(buffer, index, length)
            listener.on_available_image(
                image.correlation_id,
                image.session_id,
                image.subscriber_registration_id,
                image.subscriber_position_id,
                image.log_file_name,
                image.source_identity,
            )
        elif msg_type_id == ON_UNAVAILABLE_IMAGE:
            gone = decode_image_message(buffer, index, length)
            listener.on_unavailable_image(gone.correlation_id, gone.subscription_registration_id)
        elif msg_type_id in (ON_PUBLICATION_READY, ON_EXCLUSIVE_PUBLICATION_READY):
            ready = decode_publication_buffers_ready(buffer, index, length)
            if self._is_mine(ready.correlation_id):
                listener.on_new_publication(
                    ready.correlation_id,
                    ready.registration_id,
                    ready.stream_id,
                    ready.session_id,
                    ready.position_limit_counter_id,
                    ready.channel_status_indicator_id,
                    ready.log_file_name,
                    msg_type_id == ON_EXCLUSIVE_PUBLICATION_READY,
                )
        elif msg_type_id == ON_SUBSCRIPTION_READY:
            subscription = decode_subscription_ready(buffer, index, length)
            if self._is_mine(subscription.correlation_id):
                listener.on_new_subscription(
                    subscription.correlation_id, subscription.channel_status_indicator_id
                )
        elif msg_type_id == ON_OPERATION_SUCCESS:
            self._is_mine(decode_operation_succeeded(buffer, index, length).correlation_id)
        elif msg_type_id == ON_COUNTER_READY:
            update = decode_counter_update(buffer, index, length)
            if self._is_mine(update.correlation_id):
                listener.on_new_counter(update.correlation_id, update.counter_id)
            else:
                listener.on_available_counter(update.correlation_id, update.counter_id)
        elif msg_type_id == ON_UNAVAILABLE_COUNTER:
            update = decode_counter_update(buffer, index, length)
            listener.on_unavailable_counter(update.correlation_id, update.counter_id)
        elif msg_type_id == ON_ERROR:
            error = decode_error_response(buffer, index, length)
            correlation_id = error.offending_command_correlation_id
            if error.error_code == ErrorCode.CHANNEL_ENDPOINT_ERROR:
                listener.on_channel_endpoint_error(correlation_id, error.error_message)
            elif correlation_id == self._active_correlation_id:
                self._received_correlation_id = correlation_id
                listener.on_error(correlation_id, error.error_code, error.error_message)
            elif correlation_id in self._async_command_ids:
                self._async_command_ids.discard(correlation_id)
                listener.on_async_error(correlation_id, error.error_code, error.error_message)
        elif (
            msg_type_id == ON_CLIENT_TIMEOUT
            and decode_client_timeout(buffer, index, length).client_id == self.client_id
        ):
            listener.on_client_timeout()
