"""In-process UDP nodes for the tests: a driver's UDP side without the conductor or clients.

A :class:`Node` is what a media driver holds for UDP (counters, system counters, a client proxy
whose broadcasts the test reads, :class:`~transport.driver.udp.udp_streams.UdpStreams` with its
sender and receiver) over a fresh directory; :meth:`Node.pump` runs one duty cycle of every
part, as a driver in INVOKER mode does. :class:`LogWriter` appends messages to a publication's
log as an exclusive publication would (respecting pub-lmt), :class:`LogReader` reads an image's
log and moves its sub-pos as a subscription would. Real sockets on 127.0.0.1, port 0 where the
test can use it.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aeromq.transport.command import (
    ON_AVAILABLE_IMAGE,
    ON_UNAVAILABLE_IMAGE,
    decode_image_buffers_ready,
    decode_image_message,
)
from aeromq.transport.concurrent import AtomicBuffer, AtomicCounter, Position
from aeromq.transport.concurrent.broadcast_receiver import BroadcastReceiver
from aeromq.transport.concurrent.broadcast_transmitter import BroadcastTransmitter
from aeromq.transport.concurrent.copy_broadcast_receiver import CopyBroadcastReceiver
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.aeron_client import AeronClient
from aeromq.transport.driver.client_proxy import ClientProxy
from aeromq.transport.driver.context import MediaDriverContext, ThreadingMode
from aeromq.transport.driver.session_ids import SessionIdAllocator
from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.udp.network_publication import NetworkPublication
from aeromq.transport.driver.udp.publication_image import PublicationImage
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.driver.udp.udp_streams import UdpStreams
from aeromq.transport.driver.uri_params import (
    parse_channel,
    publication_params,
    subscription_params,
)
from aeromq.transport.logbuffer.exclusive_term_appender import FAILED, ExclusiveTermAppender
from aeromq.transport.logbuffer.header import Header, HeaderWriter
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    PARTITION_COUNT,
    active_term_count,
    default_frame_header,
    raw_tail_volatile,
    rotate_log,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.logbuffer.term_reader import read

TERM_LENGTH = 64 * 1024
_CLIENT_IDS = itertools.count(1000)


def small_context(aeron_dir: Path, **overrides: Any) -> MediaDriverContext:
    values: dict[str, Any] = {
        "aeron_dir": str(aeron_dir),
        "term_buffer_length": TERM_LENGTH,
        "ipc_term_buffer_length": TERM_LENGTH,
        "timer_interval_ns": 10_000_000,
        "publication_linger_timeout_ns": 50_000_000,
        "counter_free_to_reuse_timeout_ns": 0,
        "threading_mode": ThreadingMode.INVOKER,
    }
    values.update(overrides)
    return MediaDriverContext(**values)


class Node:
    """A driver's UDP side in this process (see module)."""

    def __init__(
        self, aeron_dir: Path, settings: UdpSettings | None = None, **context: Any
    ) -> None:
        self.context = small_context(aeron_dir, **context)
        os.makedirs(self.context.publications_dir(), exist_ok=True)
        os.makedirs(self.context.images_dir(), exist_ok=True)
        self.settings = settings if settings is not None else UdpSettings()
        self.values = AtomicBuffer.allocate(128 * 1024)
        self.counters = CountersManager(AtomicBuffer.allocate(512 * 1024), self.values)
        self.system = SystemCounters(self.counters, "INVOKER", 1_000_000_000)
        broadcast = AtomicBuffer.allocate(256 * 1024 + 128)
        self.client_proxy = ClientProxy(BroadcastTransmitter(broadcast))
        self._responses = CopyBroadcastReceiver(BroadcastReceiver(broadcast))
        self.errors: list[BaseException] = []
        self._correlation_ids = itertools.count(1)
        self.streams = UdpStreams(
            self.context,
            self.settings,
            self.counters,
            self.system,
            self.client_proxy,
            SessionIdAllocator(-1, 1000),
            lambda: next(self._correlation_ids),
            self.errors.append,
        )
        client_id = next(_CLIENT_IDS)
        heartbeat = self.counters.new_counter(f"client-heartbeat: {client_id}", 11)
        self.client = AeronClient(client_id, heartbeat, 10_000, int(time.time() * 1000))
        self.available_images: list[Any] = []
        self.unavailable_images: list[Any] = []
        self._timer_deadline_ns = 0

    def add_publication(
        self, channel: str, stream_id: int = 1001, *, exclusive: bool = True
    ) -> NetworkPublication:
        uri = parse_channel(channel)
        params = publication_params(channel, uri, self.context)
        return self.streams.add_publication(
            self.client, next(self._correlation_ids), stream_id, channel, params, exclusive, _now()
        )

    def add_subscription(self, channel: str, stream_id: int = 1001) -> int:
        uri = parse_channel(channel)
        params = subscription_params(channel, uri, self.context)
        registration_id = next(self._correlation_ids)
        self.streams.add_subscription(
            self.client.client_id, registration_id, stream_id, channel, params, _now()
        )
        return registration_id

    def counter(self, counter: SystemCounter) -> int:
        return self.system.get(counter).get()

    def pump(self) -> int:
        """One duty cycle of the conductor's UDP work, the sender and the receiver."""
        now_ns = _now()
        work = self.streams.do_work(now_ns)
        if now_ns >= self._timer_deadline_ns:
            self._timer_deadline_ns = now_ns + self.context.timer_interval_ns
            self.streams.on_time_event(now_ns)
        work += self.streams.sender.do_work()
        work += self.streams.receiver.do_work()
        self._poll_responses()
        return work

    def _poll_responses(self) -> None:
        def on_message(type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
            if type_id == ON_AVAILABLE_IMAGE:
                self.available_images.append(decode_image_buffers_ready(buffer, index, length))
            elif type_id == ON_UNAVAILABLE_IMAGE:
                self.unavailable_images.append(decode_image_message(buffer, index, length))

        while self._responses.receive(on_message):
            pass

    def images(self) -> list[PublicationImage]:
        return list(self.streams.subscriptions.images)

    def sub_pos(self, counter_id: int) -> Position:
        return Position(self.values, counter_id)

    def system_counter(self, counter: SystemCounter) -> AtomicCounter:
        return self.system.get(counter)

    def close(self) -> None:
        self.streams.close()


def _now() -> int:
    return time.monotonic_ns()


def pump_until(
    nodes: Iterable[Node],
    predicate: Callable[[], object],
    timeout_s: float = 5.0,
    what: str = "",
    between: Callable[[], object] | None = None,
) -> None:
    """Pump every node until ``predicate`` holds; AssertionError after ``timeout_s``."""
    nodes = tuple(nodes)
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what or predicate}")
        for node in nodes:
            node.pump()
        if between is not None:
            between()


class LogWriter:
    """Appends unfragmented messages to a publication's log, as an exclusive publication."""

    def __init__(self, publication: NetworkPublication) -> None:
        log = publication.log
        self.publication = publication
        self._meta = log.meta_data_buffer
        self._appenders = [
            ExclusiveTermAppender(term, self._meta, index)
            for index, term in enumerate(log.term_buffers)
        ]
        self._header = HeaderWriter(default_frame_header(self._meta))
        self._term_length = log.term_length
        self._bits = log.term_length.bit_length() - 1
        self._initial_term_id = publication.initial_term_id
        term_count = active_term_count(self._meta)
        raw_tail = raw_tail_volatile(self._meta, term_count % PARTITION_COUNT)
        self._term_count = term_count
        self._term_id = raw_tail >> 32
        self._term_offset = raw_tail & 0xFFFF_FFFF

    @property
    def position(self) -> int:
        return (self._term_count << self._bits) + self._term_offset

    def offer(self, payload: bytes) -> bool:
        """Append ``payload``; False when pub-lmt or a term rotation holds it back."""
        if self.position + len(payload) + 32 > self.publication.pub_lmt.get_volatile():
            return False
        appender = self._appenders[self._term_count % PARTITION_COUNT]
        result = appender.append_unfragmented_message(
            self._term_id, self._term_offset, self._header, payload, 0, len(payload), None
        )
        if result == FAILED:
            rotate_log(self._meta, self._term_count, self._term_id)
            self._term_count += 1
            self._term_id += 1
            self._term_offset = 0
            return False
        self._term_offset = result
        return True


class LogReader:
    """Reads an image's log from its sub-pos and moves the sub-pos, as a subscription does."""

    def __init__(self, log: LogBuffers, position: Position) -> None:
        self._log = log
        self._position = position
        self._bits = log.term_length.bit_length() - 1
        self._mask = log.term_length - 1
        self._header = Header(log.metadata.initial_term_id, self._bits)
        self.messages: list[bytes] = []

    def poll(self, limit: int = 100) -> int:
        position = self._position.get()
        term = self._log.term_buffers[(position >> self._bits) % PARTITION_COUNT]
        messages = self.messages

        def on_fragment(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
            messages.append(buffer.get_bytes(offset, length))

        count, offset = read(
            term, position & self._mask, on_fragment, limit, self._header, self._raise
        )
        new_position = position - (position & self._mask) + offset
        if new_position != position:
            self._position.set_ordered(new_position)
        return count

    @staticmethod
    def _raise(error: BaseException) -> None:
        raise error
