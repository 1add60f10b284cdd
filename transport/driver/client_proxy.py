"""``ClientProxy``: the driver's responses and notices on the to-clients broadcast buffer.

Aeron's ``ClientProxy`` / ``aeron_driver_conductor_on_*`` response functions. Each method
encodes one message of :mod:`transport.command` into a scratch buffer (sized to the broadcast
buffer's largest message) and transmits it to every client; clients filter by correlation id
or client id. The text of an ON_ERROR is cut to fit; any other message too long for the buffer
(a channel or file name of thousands of bytes) raises, and the caller records the error.
"""

from __future__ import annotations

from aeromq.transport.command import (
    ERROR_RESPONSE_LENGTH,
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
    encode_client_timeout,
    encode_counter_update,
    encode_error_response,
    encode_image_buffers_ready,
    encode_image_message,
    encode_operation_succeeded,
    encode_publication_buffers_ready,
    encode_subscription_ready,
)
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.broadcast_transmitter import BroadcastTransmitter

__all__ = ["CHANNEL_STATUS_INDICATOR_NOT_ALLOCATED", "IPC_SOURCE_IDENTITY", "ClientProxy"]

CHANNEL_STATUS_INDICATOR_NOT_ALLOCATED = -1
"""IPC streams have no channel endpoint, so no status indicator counter."""
IPC_SOURCE_IDENTITY = "aeron:ipc"
"""The source identity of every IPC image."""


class ClientProxy:
    """Sends responses through ``transmitter`` (one per driver, conductor thread only)."""

    __slots__ = ("_buffer", "_transmitter", "transmitted")

    def __init__(self, transmitter: BroadcastTransmitter) -> None:
        self._transmitter = transmitter
        self._buffer = AtomicBuffer.allocate(transmitter.max_msg_length)
        self.transmitted = 0
        """Messages transmitted so far (the conductor rings in-process clients after a cycle
        that transmitted: ``DriverConductor.notice_bells``)."""

    def on_error(self, correlation_id: int, error_code: int, message: str) -> None:
        """ON_ERROR for the command ``correlation_id`` (text cut to fit the buffer)."""
        room = self._transmitter.max_msg_length - ERROR_RESPONSE_LENGTH
        text = message.encode("utf-8", "replace")[:room].decode("utf-8", "ignore")
        length = encode_error_response(
            self._buffer,
            0,
            offending_command_correlation_id=correlation_id,
            error_code=error_code,
            error_message=text,
        )
        self._transmit(ON_ERROR, length)

    def on_publication_ready(
        self,
        correlation_id: int,
        registration_id: int,
        session_id: int,
        stream_id: int,
        position_limit_counter_id: int,
        log_file_name: str,
        is_exclusive: bool,
        channel_status_indicator_id: int = CHANNEL_STATUS_INDICATOR_NOT_ALLOCATED,
    ) -> None:
        length = encode_publication_buffers_ready(
            self._buffer,
            0,
            correlation_id=correlation_id,
            registration_id=registration_id,
            session_id=session_id,
            stream_id=stream_id,
            position_limit_counter_id=position_limit_counter_id,
            channel_status_indicator_id=channel_status_indicator_id,
            log_file_name=log_file_name,
        )
        self._transmit(
            ON_EXCLUSIVE_PUBLICATION_READY if is_exclusive else ON_PUBLICATION_READY, length
        )

    def on_subscription_ready(
        self,
        correlation_id: int,
        channel_status_indicator_id: int = CHANNEL_STATUS_INDICATOR_NOT_ALLOCATED,
    ) -> None:
        length = encode_subscription_ready(
            self._buffer,
            0,
            correlation_id=correlation_id,
            channel_status_indicator_id=channel_status_indicator_id,
        )
        self._transmit(ON_SUBSCRIPTION_READY, length)

    def on_available_image(
        self,
        correlation_id: int,
        session_id: int,
        stream_id: int,
        subscriber_registration_id: int,
        subscriber_position_id: int,
        log_file_name: str,
        source_identity: str = IPC_SOURCE_IDENTITY,
    ) -> None:
        """A subscription gains an image: ``correlation_id`` is the publication's id."""
        length = encode_image_buffers_ready(
            self._buffer,
            0,
            correlation_id=correlation_id,
            session_id=session_id,
            stream_id=stream_id,
            subscriber_registration_id=subscriber_registration_id,
            subscriber_position_id=subscriber_position_id,
            log_file_name=log_file_name,
            source_identity=source_identity,
        )
        self._transmit(ON_AVAILABLE_IMAGE, length)

    def on_unavailable_image(
        self, correlation_id: int, subscription_registration_id: int, stream_id: int, channel: str
    ) -> None:
        length = encode_image_message(
            self._buffer,
            0,
            correlation_id=correlation_id,
            subscription_registration_id=subscription_registration_id,
            stream_id=stream_id,
            channel=channel,
        )
        self._transmit(ON_UNAVAILABLE_IMAGE, length)

    def on_operation_succeeded(self, correlation_id: int) -> None:
        length = encode_operation_succeeded(self._buffer, 0, correlation_id=correlation_id)
        self._transmit(ON_OPERATION_SUCCESS, length)

    def on_counter_ready(self, correlation_id: int, counter_id: int) -> None:
        length = encode_counter_update(
            self._buffer, 0, correlation_id=correlation_id, counter_id=counter_id
        )
        self._transmit(ON_COUNTER_READY, length)

    def on_unavailable_counter(self, registration_id: int, counter_id: int) -> None:
        length = encode_counter_update(
            self._buffer, 0, correlation_id=registration_id, counter_id=counter_id
        )
        self._transmit(ON_UNAVAILABLE_COUNTER, length)

    def on_client_timeout(self, client_id: int) -> None:
        length = encode_client_timeout(self._buffer, 0, client_id=client_id)
        self._transmit(ON_CLIENT_TIMEOUT, length)

    def _transmit(self, msg_type_id: int, length: int) -> None:
        self._transmitter.transmit(msg_type_id, self._buffer, 0, length)
        self.transmitted += 1
