"""``FakeClientProxy``: the fake driver's responses and notifications, broadcast to clients.

As Aeron's driver-side ``ClientProxy``: each method encodes one message of the protocol
(:mod:`aeromq.transport.command`) into a scratch buffer and transmits it on the to-clients
broadcast buffer of ``cnc.dat``, where every client sees it and picks out its own.

Caller: :class:`~transport.testing.fake_conductor.FakeConductor`, under the fake driver's lock.
"""

from __future__ import annotations

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
    encode_client_timeout,
    encode_counter_update,
    encode_error_response,
    encode_image_buffers_ready,
    encode_image_message,
    encode_operation_succeeded,
    encode_publication_buffers_ready,
    encode_subscription_ready,
)
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.broadcast_transmitter import BroadcastTransmitter
from aeromq.transport.testing.fake_resources import (
    IPC_SOURCE_IDENTITY,
    NO_ID_ALLOCATED,
    FakePublication,
)

__all__ = ["FakeClientProxy"]


class FakeClientProxy:
    """Encodes and broadcasts what the fake driver tells its clients (see module)."""

    __slots__ = ("_scratch", "_to_clients")

    def __init__(self, to_clients: BroadcastTransmitter) -> None:
        self._to_clients = to_clients
        self._scratch = AtomicBuffer(bytearray(8192))

    def error(self, correlation_id: int, code: int, message: str) -> None:
        """ON_ERROR for the command with ``correlation_id``."""
        length = encode_error_response(
            self._scratch,
            0,
            offending_command_correlation_id=correlation_id,
            error_code=int(code),
            error_message=message,
        )
        self._transmit(ON_ERROR, length)

    def operation_succeeded(self, correlation_id: int) -> None:
        """ON_OPERATION_SUCCESS for a REMOVE_* command."""
        length = encode_operation_succeeded(self._scratch, 0, correlation_id=correlation_id)
        self._transmit(ON_OPERATION_SUCCESS, length)

    def publication_ready(
        self, correlation_id: int, publication: FakePublication, *, exclusive: bool
    ) -> None:
        """ON_PUBLICATION_READY (ON_EXCLUSIVE_PUBLICATION_READY) naming the log buffer file."""
        length = encode_publication_buffers_ready(
            self._scratch,
            0,
            correlation_id=correlation_id,
            registration_id=publication.registration_id,
            session_id=publication.session_id,
            stream_id=publication.stream_id,
            position_limit_counter_id=publication.limit_counter_id,
            channel_status_indicator_id=NO_ID_ALLOCATED,
            log_file_name=str(publication.path),
        )
        self._transmit(
            ON_EXCLUSIVE_PUBLICATION_READY if exclusive else ON_PUBLICATION_READY, length
        )

    def subscription_ready(self, correlation_id: int) -> None:
        """ON_SUBSCRIPTION_READY (an IPC channel: no channel status indicator)."""
        length = encode_subscription_ready(
            self._scratch,
            0,
            correlation_id=correlation_id,
            channel_status_indicator_id=NO_ID_ALLOCATED,
        )
        self._transmit(ON_SUBSCRIPTION_READY, length)

    def available_image(
        self, publication: FakePublication, subscription_id: int, position_counter_id: int
    ) -> None:
        """ON_AVAILABLE_IMAGE of ``publication`` for the subscription ``subscription_id``."""
        length = encode_image_buffers_ready(
            self._scratch,
            0,
            correlation_id=publication.registration_id,
            session_id=publication.session_id,
            stream_id=publication.stream_id,
            subscriber_registration_id=subscription_id,
            subscriber_position_id=position_counter_id,
            log_file_name=str(publication.path),
            source_identity=IPC_SOURCE_IDENTITY,
        )
        self._transmit(ON_AVAILABLE_IMAGE, length)

    def unavailable_image(self, publication: FakePublication, subscription_id: int) -> None:
        """ON_UNAVAILABLE_IMAGE of ``publication`` for the subscription ``subscription_id``."""
        length = encode_image_message(
            self._scratch,
            0,
            correlation_id=publication.registration_id,
            subscription_registration_id=subscription_id,
            stream_id=publication.stream_id,
            channel=publication.channel,
        )
        self._transmit(ON_UNAVAILABLE_IMAGE, length)

    def counter_ready(self, correlation_id: int, counter_id: int) -> None:
        """ON_COUNTER_READY for an ADD_COUNTER."""
        length = encode_counter_update(
            self._scratch, 0, correlation_id=correlation_id, counter_id=counter_id
        )
        self._transmit(ON_COUNTER_READY, length)

    def unavailable_counter(self, registration_id: int, counter_id: int) -> None:
        """ON_UNAVAILABLE_COUNTER for a removed counter."""
        length = encode_counter_update(
            self._scratch, 0, correlation_id=registration_id, counter_id=counter_id
        )
        self._transmit(ON_UNAVAILABLE_COUNTER, length)

    def client_timeout(self, client_id: int) -> None:
        """ON_CLIENT_TIMEOUT: the driver dropped this client."""
        length = encode_client_timeout(self._scratch, 0, client_id=client_id)
        self._transmit(ON_CLIENT_TIMEOUT, length)

    def _transmit(self, type_id: int, length: int) -> None:
        self._to_clients.transmit(type_id, self._scratch, 0, length)
