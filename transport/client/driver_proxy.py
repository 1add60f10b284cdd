"""``DriverProxy``: the client's commands to the media driver, on the to-driver ring buffer.

Each command is encoded with :mod:`transport.command` into a scratch buffer and written to the
many-to-one ring buffer in cnc.dat that every client of the driver shares. A command that asks
for an answer takes a fresh correlation id from the ring's correlation counter (unique among all
clients of the driver); the driver echoes it in its response. A full ring is retried a bounded
number of times, yielding the CPU in between (as Aeron's C client); still full means the driver
is not consuming: :class:`~transport.DriverTimeoutError`. Each command that waits for an answer
then sends the driver's wake socket a datagram (:mod:`~transport.concurrent.wake_socket`), so a
driver parked until its next timer takes it at once; a keepalive does not.

Caller: the client conductor, under the client lock (not thread-safe on its own).
"""

from __future__ import annotations

import os
from typing import Final

from aeromq.transport._errors import DriverTimeoutError
from aeromq.transport.command import (
    ADD_COUNTER,
    ADD_EXCLUSIVE_PUBLICATION,
    ADD_PUBLICATION,
    ADD_SUBSCRIPTION,
    CLIENT_CLOSE,
    CLIENT_KEEPALIVE,
    REMOVE_COUNTER,
    REMOVE_PUBLICATION,
    REMOVE_SUBSCRIPTION,
    TERMINATE_DRIVER,
    encode_correlated_message,
    encode_counter_message,
    encode_publication_message,
    encode_remove_message,
    encode_remove_publication_message,
    encode_subscription_message,
    encode_terminate_driver_message,
    type_name,
)
from aeromq.transport.concurrent import ManyToOneRingBuffer
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.wake_socket import WakeSender

__all__ = ["RING_BUFFER_FULL_RETRIES", "DriverProxy"]

RING_BUFFER_FULL_RETRIES: Final = 10
"""Attempts to write a command to a full to-driver ring buffer before giving up."""

_NULL_VALUE: Final = -1
_SCRATCH_LENGTH: Final = 4096


class DriverProxy:
    """Writes commands for client ``client_id`` to ``to_driver`` (see module)."""

    __slots__ = ("_aeron_dir", "_scratch", "_to_driver", "_waker", "client_id")

    def __init__(self, to_driver: ManyToOneRingBuffer, client_id: int, aeron_dir: str) -> None:
        self._to_driver = to_driver
        self._aeron_dir = aeron_dir
        self._waker = WakeSender(aeron_dir)
        self._scratch = AtomicBuffer(bytearray(_SCRATCH_LENGTH))
        self.client_id = client_id

    @property
    def to_driver(self) -> ManyToOneRingBuffer:
        return self._to_driver

    def time_of_last_driver_keepalive_ms(self) -> int:
        """The driver's heartbeat (epoch ms) in the ring buffer; -1 once it shut down."""
        return self._to_driver.consumer_heartbeat_time

    def next_correlation_id(self) -> int:
        return self._to_driver.next_correlation_id()

    def add_publication(self, channel: str, stream_id: int) -> int:
        return self._add_publication(ADD_PUBLICATION, channel, stream_id)

    def add_exclusive_publication(self, channel: str, stream_id: int) -> int:
        return self._add_publication(ADD_EXCLUSIVE_PUBLICATION, channel, stream_id)

    def remove_publication(self, registration_id: int, revoke: bool = False) -> int:
        correlation_id = self.next_correlation_id()
        length = encode_remove_publication_message(
            self._scratch,
            0,
            client_id=self.client_id,
            correlation_id=correlation_id,
            registration_id=registration_id,
            flags=1 if revoke else 0,
        )
        self._write(REMOVE_PUBLICATION, length)
        return correlation_id

    def add_subscription(self, channel: str, stream_id: int) -> int:
        correlation_id = self.next_correlation_id()
        scratch = self._ensure_scratch(4 * len(channel) + 64)
        length = encode_subscription_message(
            scratch,
            0,
            client_id=self.client_id,
            correlation_id=correlation_id,
            registration_correlation_id=_NULL_VALUE,
            stream_id=stream_id,
            channel=channel,
        )
        self._write(ADD_SUBSCRIPTION, length)
        return correlation_id

    def remove_subscription(self, registration_id: int) -> int:
        return self._remove(REMOVE_SUBSCRIPTION, registration_id)

    def add_counter(self, type_id: int, key: bytes, label: str) -> int:
        correlation_id = self.next_correlation_id()
        scratch = self._ensure_scratch(len(key) + 4 * len(label) + 64)
        length = encode_counter_message(
            scratch,
            0,
            client_id=self.client_id,
            correlation_id=correlation_id,
            type_id=type_id,
            key=key,
            label=label,
        )
        self._write(ADD_COUNTER, length)
        return correlation_id

    def remove_counter(self, registration_id: int) -> int:
        return self._remove(REMOVE_COUNTER, registration_id)

    def send_client_keepalive(self) -> None:
        """CLIENT_KEEPALIVE: a correlated message with correlation id 0, as Aeron sends it."""
        length = encode_correlated_message(
            self._scratch, 0, client_id=self.client_id, correlation_id=0
        )
        self._write(CLIENT_KEEPALIVE, length, wake=False)

    def client_close(self) -> bool:
        """CLIENT_CLOSE; one attempt only (the client is going anyway): whether it was sent."""
        length = encode_correlated_message(
            self._scratch, 0, client_id=self.client_id, correlation_id=self.next_correlation_id()
        )
        return self._to_driver.write(CLIENT_CLOSE, self._scratch, 0, length)

    def terminate_driver(self, token: bytes = b"") -> int:
        """TERMINATE_DRIVER with ``token`` (the driver's termination validator judges it)."""
        correlation_id = self.next_correlation_id()
        scratch = self._ensure_scratch(len(token) + 64)
        length = encode_terminate_driver_message(
            scratch, 0, client_id=self.client_id, correlation_id=correlation_id, token=token
        )
        self._write(TERMINATE_DRIVER, length)
        return correlation_id

    def _add_publication(self, type_id: int, channel: str, stream_id: int) -> int:
        correlation_id = self.next_correlation_id()
        scratch = self._ensure_scratch(4 * len(channel) + 64)
        length = encode_publication_message(
            scratch,
            0,
            client_id=self.client_id,
            correlation_id=correlation_id,
            stream_id=stream_id,
            channel=channel,
        )
        self._write(type_id, length)
        return correlation_id

    def _remove(self, type_id: int, registration_id: int) -> int:
        correlation_id = self.next_correlation_id()
        length = encode_remove_message(
            self._scratch,
            0,
            client_id=self.client_id,
            correlation_id=correlation_id,
            registration_id=registration_id,
        )
        self._write(type_id, length)
        return correlation_id

    def _ensure_scratch(self, length: int) -> AtomicBuffer:
        if length > self._scratch.capacity:
            self._scratch = AtomicBuffer(bytearray(length))
        return self._scratch

    def _write(self, type_id: int, length: int, *, wake: bool = True) -> None:
        write = self._to_driver.write
        scratch = self._scratch
        for _ in range(RING_BUFFER_FULL_RETRIES):
            if write(type_id, scratch, 0, length):
                if wake:
                    self._waker.wake()
                return
            os.sched_yield()
        raise DriverTimeoutError(
            "to-driver ring buffer full: the media driver is not taking commands",
            command=type_name(type_id),
            aeron_dir=self._aeron_dir,
            retries=RING_BUFFER_FULL_RETRIES,
        )
