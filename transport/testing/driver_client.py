"""``DriverClient``: a raw protocol client of a media driver, for tests and tools.

It speaks Aeron's client-driver protocol with nothing in between: it maps a driver's
``cnc.dat``, writes commands into the to-driver ring buffer through the client's own
:class:`~transport.client.driver_proxy.DriverProxy` (the same encoding, correlation ids and
retries on a full ring as a real client), and reads every response off the to-clients broadcast
buffer, decoded. No conductor, no keepalive thread, no log buffers: a test drives each step and
sees exact bytes, which is what a driver's tests (and a client's fake-driver tests in reverse)
need.

- ``add_publication``, ``add_subscription``, ``add_counter``, ``remove_*`` and
  ``terminate_driver`` write one command and return its correlation id; ``keepalive`` and
  ``client_close`` write theirs as a client does; ``send_raw`` writes any bytes as any command;
- ``poll()`` reads what the driver broadcast since (to every client) into ``responses``;
  ``await_response(type_id, predicate, timeout_s)`` polls until one matches (bounded), and
  ``await_correlated(correlation_id)`` waits for the answer to one command;
- ``heartbeat()`` stamps this client's ``client-heartbeat`` counter, as a real client's
  conductor does (``auto_heartbeat=True`` does it on every wait); ``driver_heartbeat_ms()``
  reads the driver's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from aeromq.transport._errors import DriverTimeoutError, TransportStateError
from aeromq.transport.client.driver_proxy import DriverProxy
from aeromq.transport.cnc import CncFile
from aeromq.transport.command import (
    CLIENT_CLOSE,
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
    REMOVE_PUBLICATION_FLAG_REVOKE,
    decode_client_timeout,
    decode_counter_update,
    decode_error_response,
    decode_image_buffers_ready,
    decode_image_message,
    decode_operation_succeeded,
    decode_publication_buffers_ready,
    decode_subscription_ready,
    type_name,
)
from aeromq.transport.concurrent import AtomicBuffer, ManyToOneRingBuffer
from aeromq.transport.concurrent.broadcast_receiver import BroadcastReceiver
from aeromq.transport.concurrent.copy_broadcast_receiver import CopyBroadcastReceiver
from aeromq.transport.concurrent.counters_descriptor import COUNTER_LENGTH, NULL_COUNTER_ID
from aeromq.transport.concurrent.counters_reader import CountersReader

__all__ = ["CLIENT_HEARTBEAT_TYPE_ID", "DriverClient", "DriverResponse"]

CLIENT_HEARTBEAT_TYPE_ID = 11

_DECODERS: dict[int, Callable[[AtomicBuffer, int, int], object]] = {
    ON_ERROR: decode_error_response,
    ON_AVAILABLE_IMAGE: decode_image_buffers_ready,
    ON_PUBLICATION_READY: decode_publication_buffers_ready,
    ON_EXCLUSIVE_PUBLICATION_READY: decode_publication_buffers_ready,
    ON_OPERATION_SUCCESS: decode_operation_succeeded,
    ON_UNAVAILABLE_IMAGE: decode_image_message,
    ON_SUBSCRIPTION_READY: decode_subscription_ready,
    ON_COUNTER_READY: decode_counter_update,
    ON_UNAVAILABLE_COUNTER: decode_counter_update,
    ON_CLIENT_TIMEOUT: decode_client_timeout,
}


@dataclass(frozen=True)
class DriverResponse:
    """One broadcast message: its type id and the decoded :mod:`transport.command` message."""

    type_id: int
    message: object

    @property
    def name(self) -> str:
        return type_name(self.type_id)

    @property
    def correlation_id(self) -> int | None:
        """The id it answers: the correlation id, the offending command's id for ON_ERROR."""
        message = self.message
        for attribute in ("correlation_id", "offending_command_correlation_id"):
            value = getattr(message, attribute, None)
            if value is not None:
                return int(value)
        return None


class DriverClient:
    """A raw client of the driver in ``aeron_dir`` (see module). One thread at a time."""

    def __init__(
        self, aeron_dir: str, *, timeout_s: float = 5.0, auto_heartbeat: bool = False
    ) -> None:
        self.timeout_s = timeout_s
        self.auto_heartbeat = auto_heartbeat
        self._heartbeat_counter_id = NULL_COUNTER_ID
        self.cnc = CncFile.map(aeron_dir, timeout_ms=int(timeout_s * 1000))
        self.to_driver = ManyToOneRingBuffer(self.cnc.to_driver_buffer)
        receiver = BroadcastReceiver(self.cnc.to_clients_buffer)
        self._receiver = CopyBroadcastReceiver(receiver, receiver.capacity // 8)
        self.counters = CountersReader(
            self.cnc.counters_metadata_buffer, self.cnc.counters_values_buffer
        )
        self.client_id = self.to_driver.next_correlation_id()
        self._proxy = DriverProxy(self.to_driver, self.client_id, aeron_dir)
        self.responses: list[DriverResponse] = []
        self._closed = False

    # ----------------------------------------------------------------------------------------
    # Commands (each returns the correlation id it used)

    def next_correlation_id(self) -> int:
        return self.to_driver.next_correlation_id()

    def add_publication(self, channel: str, stream_id: int, *, exclusive: bool = False) -> int:
        if exclusive:
            return self._proxy.add_exclusive_publication(channel, stream_id)
        return self._proxy.add_publication(channel, stream_id)

    def remove_publication(self, registration_id: int, flags: int = 0) -> int:
        revoke = bool(flags & REMOVE_PUBLICATION_FLAG_REVOKE)
        return self._proxy.remove_publication(registration_id, revoke)

    def add_subscription(self, channel: str, stream_id: int) -> int:
        return self._proxy.add_subscription(channel, stream_id)

    def remove_subscription(self, registration_id: int) -> int:
        return self._proxy.remove_subscription(registration_id)

    def add_counter(self, type_id: int, key: bytes, label: str) -> int:
        return self._proxy.add_counter(type_id, key, label)

    def remove_counter(self, registration_id: int) -> int:
        return self._proxy.remove_counter(registration_id)

    def keepalive(self) -> None:
        """CLIENT_KEEPALIVE, correlation id 0 as Aeron's clients send it."""
        self._proxy.send_client_keepalive()

    def client_close(self) -> None:
        """CLIENT_CLOSE (one attempt, as a client closing sends it)."""
        if not self._proxy.client_close():
            raise TransportStateError("to-driver ring buffer is full", msg_type_id=CLIENT_CLOSE)

    def terminate_driver(self, token: bytes = b"") -> int:
        return self._proxy.terminate_driver(token)

    def send_raw(self, msg_type_id: int, payload: bytes) -> None:
        """Write any bytes as a record of any type (for malformed-command tests)."""
        if not self.to_driver.write(msg_type_id, payload):
            raise TransportStateError("to-driver ring buffer is full", msg_type_id=msg_type_id)

    # ----------------------------------------------------------------------------------------
    # Responses

    def poll(self) -> list[DriverResponse]:
        """Read everything broadcast since the last poll; returns (and keeps) the new ones."""
        fresh: list[DriverResponse] = []

        def on_message(type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
            decoder = _DECODERS.get(type_id)
            message = decoder(buffer, index, length) if decoder else buffer.get_bytes(index, length)
            fresh.append(DriverResponse(type_id, message))

        while self._receiver.receive(on_message):
            pass
        self.responses.extend(fresh)
        return fresh

    def await_response(
        self,
        type_id: int | None = None,
        predicate: Callable[[DriverResponse], bool] | None = None,
        timeout_s: float | None = None,
    ) -> DriverResponse:
        """The first response (seen before or arriving within the timeout) that matches."""

        def matches(response: DriverResponse) -> bool:
            return (type_id is None or response.type_id == type_id) and (
                predicate is None or predicate(response)
            )

        for response in self.responses:
            if matches(response):
                return response
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while True:
            if self.auto_heartbeat and self.heartbeat_counter_id() >= 0:
                self.heartbeat()
            for response in self.poll():
                if matches(response):
                    return response
            if time.monotonic() > deadline:
                raise DriverTimeoutError(
                    "no matching response from the driver",
                    type_id=type_name(type_id) if type_id is not None else None,
                    seen=[response.name for response in self.responses[-10:]],
                )
            time.sleep(0.0005)

    def await_correlated(
        self, correlation_id: int, type_id: int | None = None, timeout_s: float | None = None
    ) -> DriverResponse:
        """The response to the command ``correlation_id`` (ON_ERROR included)."""
        return self.await_response(
            type_id, lambda response: response.correlation_id == correlation_id, timeout_s
        )

    def responses_of(self, type_id: int) -> list[DriverResponse]:
        """Every response of this type seen so far (call ``poll()`` first for the latest)."""
        return [response for response in self.responses if response.type_id == type_id]

    # ----------------------------------------------------------------------------------------
    # Liveness

    def heartbeat_counter_id(self) -> int:
        """This client's ``client-heartbeat`` counter (the driver allocates it on a command).

        ``NULL_COUNTER_ID`` (-1) until the driver has; then the id, found once and kept.
        """
        if self._heartbeat_counter_id < 0:
            self._heartbeat_counter_id = self.counters.find_by_type_id_and_registration_id(
                CLIENT_HEARTBEAT_TYPE_ID, self.client_id
            )
        return self._heartbeat_counter_id

    def heartbeat(self, now_ms: int | None = None) -> None:
        """Stamp this client's heartbeat counter with the epoch time (ms), as a client does.

        With ``auto_heartbeat`` the waits do this on every poll, as a live client's conductor
        would; a test of client liveness leaves it off for the client that is to go silent.
        """
        counter_id = self.heartbeat_counter_id()
        if counter_id < 0:
            raise TransportStateError(
                "no heartbeat counter for this client", client_id=self.client_id
            )
        value = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        self.cnc.counters_values_buffer.put_int64_ordered(counter_id * COUNTER_LENGTH, value)

    def driver_heartbeat_ms(self) -> int:
        return self.cnc.driver_heartbeat_ms()

    def close(self) -> None:
        """Unmap cnc.dat (sends nothing: call ``client_close()`` first to say goodbye)."""
        if not self._closed:
            self._closed = True
            self.cnc.close()

    def __enter__(self) -> DriverClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
