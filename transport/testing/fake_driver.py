"""``FakeDriver``: a small, scriptable media driver that speaks the raw protocol, for client tests.

It does what a client can observe of a media driver and nothing more, built only on the shared
protocol modules (``aeromq.transport.cnc``, ``aeromq.transport.command``, ``aeromq.transport.logbuffer``,
``aeromq.transport.concurrent``), so a client is tested against the protocol rather than against the
real driver's internals:

- creates ``cnc.dat`` in ``aeron_dir`` (small buffers) and stamps its heartbeat in the
  to-driver ring buffer on every duty cycle (unless told to stop: a dead driver);
- answers ADD_PUBLICATION / ADD_EXCLUSIVE_PUBLICATION with a log buffer file in
  ``publications/`` (concurrent publications of one channel and stream share it), a pub-lmt
  counter and ON_(EXCLUSIVE_)PUBLICATION_READY; ADD_SUBSCRIPTION with ON_SUBSCRIPTION_READY;
  a sub-pos counter and ON_AVAILABLE_IMAGE for every matching (IPC) pair, in either order;
  ADD_COUNTER / REMOVE_COUNTER; REMOVE_PUBLICATION (end of stream: the images go unavailable
  once every subscriber has read up to it); REMOVE_SUBSCRIPTION; CLIENT_KEEPALIVE;
  CLIENT_CLOSE;
- allocates a client's ``client-heartbeat`` counter (type 11, key = client id) on its first
  command and times the client out (ON_CLIENT_TIMEOUT) when it is not stamped for the client
  liveness timeout;
- moves each publication limit to the slowest subscriber position plus the term window, zeroes
  the terms a term length behind the slowest subscriber, and flags the log connected while it
  has subscribers.

Scripting: :meth:`FakeDriver.fail_next` (ON_ERROR for the next command of a type),
:meth:`stop_heartbeat` / :meth:`resume_heartbeat`, :meth:`time_out_client`,
:meth:`freeze_limit`, :meth:`make_image_unavailable`; every decoded command is kept in
:attr:`commands`. Channels honour ``term-length``, ``mtu``, ``session-id`` and
``init-term-id`` / ``term-id`` / ``term-offset``. Run it on a thread (:meth:`start`) or call
:meth:`do_work` by hand.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aeromq.transport._errors import ChannelUriError, MalformedCommandError
from aeromq.transport.channel_uri import ChannelUri
from aeromq.transport.cnc import CncFile
from aeromq.transport.command import (
    ADD_COUNTER,
    ADD_EXCLUSIVE_PUBLICATION,
    ADD_PUBLICATION,
    ADD_SUBSCRIPTION,
    CLIENT_CLOSE,
    CLIENT_KEEPALIVE,
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
    REMOVE_COUNTER,
    REMOVE_PUBLICATION,
    REMOVE_SUBSCRIPTION,
    ErrorCode,
    decode_correlated_message,
    decode_counter_message,
    decode_publication_message,
    decode_remove_message,
    decode_remove_publication_message,
    decode_subscription_message,
    encode_client_timeout,
    encode_counter_update,
    encode_error_response,
    encode_image_buffers_ready,
    encode_image_message,
    encode_operation_succeeded,
    encode_publication_buffers_ready,
    encode_subscription_ready,
)
from aeromq.transport.concurrent import ManyToOneRingBuffer
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.broadcast_transmitter import BroadcastTransmitter
from aeromq.transport.concurrent.clock import EpochClock, SystemEpochClock
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_TYPE_CONCURRENT,
    LOG_TYPE_EXCLUSIVE,
    TERM_MIN_LENGTH,
    active_raw_tail_volatile,
    compute_position,
    fill_default_header,
    initialise_tails,
    position_bits_to_shift,
    set_end_of_stream_position,
    set_is_connected,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers

__all__ = ["FakeDriver", "FakePublication", "FakeSubscription"]

HEARTBEAT_TYPE_ID: Final = 11
PUBLISHER_LIMIT_TYPE_ID: Final = 1
SUBSCRIBER_POSITION_TYPE_ID: Final = 4
NO_ID_ALLOCATED: Final = -1
"""Channel status indicator of an IPC channel (Aeron's ``ChannelEndpointStatus``)."""
MAX_POSITION: Final = 2**63 - 1
IPC_SOURCE_IDENTITY: Final = "aeron:ipc"

_SMALL_RING: Final = 64 * 1024
_KEY: Final = struct.Struct("<qiii")


@dataclass
class FakePublication:
    """A log buffer the fake driver made for one or more publication commands."""

    registration_id: int
    channel: str
    stream_id: int
    session_id: int
    exclusive: bool
    log_buffers: LogBuffers
    path: Path
    limit_counter_id: int
    term_window_length: int
    ref_count: int = 1
    limit_frozen: bool = False
    end_of_stream_position: int = MAX_POSITION
    clean_position: int = 0
    images: dict[int, int] = field(default_factory=dict)
    """Subscription registration id -> sub-pos counter id."""

    def clean_to(self, position: int) -> None:
        """Zero the terms up to ``position`` (behind the slowest subscriber), as Aeron's
        ``cleanBufferTo``, so appenders always write over zeroed memory."""
        term_length = self.log_buffers.term_length
        bits = position_bits_to_shift(term_length)
        while position > self.clean_position:
            clean_position = self.clean_position
            term = self.log_buffers.term_buffers[(clean_position >> bits) % 3]
            term_offset = clean_position & (term_length - 1)
            length = min(position - clean_position, term_length - term_offset)
            term.set_memory(term_offset + 8, length - 8, 0)
            term.put_int64_ordered(term_offset, 0)
            self.clean_position = clean_position + length

    def producer_position(self) -> int:
        meta = self.log_buffers.meta_data_buffer
        metadata = self.log_buffers.metadata
        raw_tail = active_raw_tail_volatile(meta)
        term_length = self.log_buffers.term_length
        return compute_position(
            raw_tail >> 32,
            min(raw_tail & 0xFFFF_FFFF, term_length),
            position_bits_to_shift(term_length),
            metadata.initial_term_id,
        )


@dataclass
class FakeSubscription:
    registration_id: int
    client_id: int
    channel: str
    stream_id: int


class FakeDriver:
    """See module. ``close()`` stops the thread, unmaps and removes ``aeron_dir``."""

    def __init__(
        self,
        aeron_dir: str | os.PathLike[str],
        *,
        term_length: int = TERM_MIN_LENGTH,
        mtu_length: int = 1408,
        page_size: int = 4096,
        client_liveness_timeout_ns: int = 10_000_000_000,
        term_window_length: int = 0,
        epoch_clock: EpochClock | None = None,
        delete_dir_on_close: bool = True,
    ) -> None:
        self.aeron_dir = Path(aeron_dir)
        self.term_length = term_length
        self.mtu_length = mtu_length
        self.page_size = page_size
        self.client_liveness_timeout_ns = client_liveness_timeout_ns
        self.term_window_length = term_window_length
        self._clock: EpochClock = epoch_clock or SystemEpochClock()
        self._delete_dir_on_close = delete_dir_on_close
        (self.aeron_dir / "publications").mkdir(parents=True, exist_ok=True)
        self.cnc = CncFile.create(
            self.aeron_dir,
            to_driver_buffer_length=_SMALL_RING + 768,
            to_clients_buffer_length=_SMALL_RING + 128,
            counters_values_buffer_length=32 * 1024,
            error_log_buffer_length=8 * 1024,
            client_liveness_timeout_ns=client_liveness_timeout_ns,
            start_timestamp_ms=self._clock.time_ms(),
            pid=os.getpid(),
        )
        self.to_driver = ManyToOneRingBuffer(self.cnc.to_driver_buffer)
        self.to_clients = BroadcastTransmitter(self.cnc.to_clients_buffer)
        self.counters = CountersManager(
            self.cnc.counters_metadata_buffer, self.cnc.counters_values_buffer, self._clock
        )
        self.to_driver.consumer_heartbeat_time = self._clock.time_ms()
        self._scratch = AtomicBuffer(bytearray(8192))
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._running = False
        self._closed = False
        self._heartbeat_enabled = True
        self._scripted_errors: dict[int, list[tuple[int, str]]] = {}
        self.commands: list[tuple[int, Any]] = []
        self.clients: dict[int, int] = {}
        """Client id -> heartbeat counter id."""
        self.publications: dict[int, FakePublication] = {}
        self.publication_links: dict[int, tuple[int, FakePublication]] = {}
        """ADD command correlation id -> (client id, publication)."""
        self.subscriptions: dict[int, FakeSubscription] = {}
        self.client_counters: dict[int, tuple[int, int]] = {}
        """Counter registration id -> (client id, counter id)."""
        self.timed_out_clients: list[int] = []
        self._dispatch: dict[int, Callable[[AtomicBuffer, int, int], None]] = {
            ADD_PUBLICATION: self._on_add_publication,
            ADD_EXCLUSIVE_PUBLICATION: self._on_add_exclusive_publication,
            REMOVE_PUBLICATION: self._on_remove_publication,
            ADD_SUBSCRIPTION: self._on_add_subscription,
            REMOVE_SUBSCRIPTION: self._on_remove_subscription,
            ADD_COUNTER: self._on_add_counter,
            REMOVE_COUNTER: self._on_remove_counter,
            CLIENT_KEEPALIVE: self._on_client_keepalive,
            CLIENT_CLOSE: self._on_client_close,
        }

    # ----------------------------------------------------------------------------------------
    # Running

    def start(self) -> FakeDriver:
        """Run :meth:`do_work` on a daemon thread until :meth:`close`."""
        self._running = True
        self._thread = threading.Thread(target=self._run, name="fake-driver", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while self._running:
            if self.do_work() == 0:
                time.sleep(0.0005)

    def do_work(self) -> int:
        """One duty cycle: heartbeat, commands, limits, draining, client liveness."""
        with self._lock:
            now_ms = self._clock.time_ms()
            if self._heartbeat_enabled:
                self.to_driver.consumer_heartbeat_time = now_ms
            work = self.to_driver.read(self._on_command, 16)
            self._update_limits()
            work += self._drain_ended_publications()
            self._check_client_liveness(now_ms)
            return work

    def close(self) -> None:
        """Stop, mark the driver gone (heartbeat -1), unmap everything; idempotent."""
        self._running = False
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)
        self._thread = None
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for publication in list(self.publications.values()):
                publication.log_buffers.close()
            self.publications.clear()
            self.to_driver.consumer_heartbeat_time = -1
            self.cnc.close()
        if self._delete_dir_on_close:
            shutil.rmtree(self.aeron_dir, ignore_errors=True)

    def __enter__(self) -> FakeDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------
    # Scripting

    def fail_next(self, command_type_id: int, code: int, message: str) -> None:
        """Answer the next command of this type with ON_ERROR(code, message)."""
        with self._lock:
            self._scripted_errors.setdefault(command_type_id, []).append((code, message))

    def stop_heartbeat(self) -> None:
        """Stop stamping the driver heartbeat: clients see a dead driver."""
        with self._lock:
            self._heartbeat_enabled = False

    def resume_heartbeat(self) -> None:
        with self._lock:
            self._heartbeat_enabled = True

    def set_driver_heartbeat_ms(self, value_ms: int) -> None:
        """Stop the heartbeat and set its value (e.g. -1: a driver that shut down)."""
        with self._lock:
            self._heartbeat_enabled = False
            self.to_driver.consumer_heartbeat_time = value_ms

    def time_out_client(self, client_id: int) -> None:
        """Drop a client as its liveness timeout would: ON_CLIENT_TIMEOUT and cleanup."""
        with self._lock:
            self._time_out(client_id)

    def freeze_limit(self, registration_id: int, value: int) -> None:
        """Set a publication's limit and stop moving it."""
        with self._lock:
            publication = self.publications[registration_id]
            publication.limit_frozen = True
            self.counters.set_counter_value(publication.limit_counter_id, value)

    def unfreeze_limit(self, registration_id: int) -> None:
        with self._lock:
            self.publications[registration_id].limit_frozen = False

    def make_image_unavailable(self, registration_id: int) -> None:
        """Send ON_UNAVAILABLE_IMAGE for every image of a publication (it stays, unlinked)."""
        with self._lock:
            publication = self.publications[registration_id]
            for subscription_id, counter_id in list(publication.images.items()):
                self._unlink(publication, subscription_id, counter_id)

    def publication_for(self, correlation_id: int) -> FakePublication:
        """The publication an ADD_*PUBLICATION command with this correlation id got."""
        with self._lock:
            return self.publication_links[correlation_id][1]

    def heartbeat_counter_id(self, client_id: int) -> int | None:
        with self._lock:
            return self.clients.get(client_id)

    def counter_value(self, counter_id: int) -> int:
        return self.counters.get_counter_value(counter_id)

    def command_types(self) -> list[int]:
        with self._lock:
            return [type_id for type_id, _ in self.commands]

    def wait_until(
        self, condition: Callable[[], bool], timeout_s: float = 5.0, message: str = "condition"
    ) -> None:
        """Poll ``condition`` (bounded); raise ``AssertionError`` naming it on timeout."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s}s waiting for {message}")
            if self._thread is None:
                self.do_work()
            time.sleep(0.001)

    # ----------------------------------------------------------------------------------------
    # Commands

    def _on_command(self, type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        correlation_id = 0
        try:
            correlated = decode_correlated_message(buffer, index, length)
            correlation_id = correlated.correlation_id
            self._ensure_client(correlated.client_id)
            scripted = self._scripted_errors.get(type_id)
            if scripted:
                code, message = scripted.pop(0)
                self.commands.append((type_id, correlated))
                self._error(correlation_id, code, message)
                return
            handler = self._dispatch.get(type_id)
            if handler is None:
                self.commands.append((type_id, correlated))
                self._error(
                    correlation_id,
                    ErrorCode.UNKNOWN_COMMAND_TYPE_ID,
                    f"command type not supported: type_id={type_id}",
                )
                return
            handler(buffer, index, length)
        except MalformedCommandError as error:
            self._error(correlation_id, ErrorCode.MALFORMED_COMMAND, str(error))

    def _on_add_publication(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._add_publication(decode_publication_message(buffer, index, length), exclusive=False)

    def _on_add_exclusive_publication(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._add_publication(decode_publication_message(buffer, index, length), exclusive=True)

    def _add_publication(self, command: Any, *, exclusive: bool) -> None:
        self.commands.append((ADD_EXCLUSIVE_PUBLICATION if exclusive else ADD_PUBLICATION, command))
        uri = self._parse_ipc(command.correlation_id, command.channel)
        if uri is None:
            return
        publication = None
        if not exclusive:
            publication = next(
                (
                    p
                    for p in self.publications.values()
                    if not p.exclusive
                    and p.stream_id == command.stream_id
                    and p.end_of_stream_position == MAX_POSITION
                    and _same_channel(p.channel, command.channel)
                ),
                None,
            )
        if publication is None:
            publication = self._new_publication(command, uri, exclusive)
        else:
            publication.ref_count += 1
        self.publication_links[command.correlation_id] = (command.client_id, publication)
        length = encode_publication_buffers_ready(
            self._scratch,
            0,
            correlation_id=command.correlation_id,
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
        for subscription in list(self.subscriptions.values()):
            if _matches(publication, subscription):
                self._link(publication, subscription)

    def _new_publication(self, command: Any, uri: ChannelUri, exclusive: bool) -> FakePublication:
        registration_id = command.correlation_id
        term_length = uri.get_size("term-length") or self.term_length
        mtu_length = uri.get_size("mtu") or self.mtu_length
        session_text = uri.get("session-id")
        session_id = int(session_text) if session_text else random.randint(-(2**31), 2**31 - 1)
        init_term_id_text = uri.get("init-term-id")
        if init_term_id_text is not None:
            initial_term_id = int(init_term_id_text)
            term_id = int(uri.get("term-id") or init_term_id_text)
            term_offset = int(uri.get("term-offset") or 0)
        else:
            initial_term_id = random.randint(-(2**31), 2**31 - 1)
            term_id = initial_term_id
            term_offset = 0
        path = self.aeron_dir / "publications" / f"{registration_id}.logbuffer"
        log = LogBuffers.create(path, term_length, self.page_size)
        meta = log.meta_data_buffer
        metadata = log.metadata
        window = self.term_window_length or term_length // 2
        metadata.correlation_id = registration_id
        metadata.initial_term_id = initial_term_id
        metadata.mtu_length = mtu_length
        metadata.publication_window_length = window
        metadata.signal_eos = True
        metadata.tether = True
        metadata.log_type = LOG_TYPE_EXCLUSIVE if exclusive else LOG_TYPE_CONCURRENT
        set_end_of_stream_position(meta, MAX_POSITION)
        fill_default_header(meta, session_id, command.stream_id, initial_term_id)
        initialise_tails(meta, initial_term_id, term_id, term_offset)
        label = f"pub-lmt: {registration_id} {session_id} {command.stream_id} {command.channel}"
        limit_counter_id = self.counters.allocate(
            label,
            PUBLISHER_LIMIT_TYPE_ID,
            _stream_key(registration_id, session_id, command.stream_id, command.channel),
            registration_id=registration_id,
            owner_id=command.client_id,
        )
        publication = FakePublication(
            registration_id,
            command.channel,
            command.stream_id,
            session_id,
            exclusive,
            log,
            path,
            limit_counter_id,
            window,
        )
        self.counters.set_counter_value(limit_counter_id, publication.producer_position())
        publication.clean_position = publication.producer_position()
        self.publications[registration_id] = publication
        return publication

    def _on_remove_publication(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_remove_publication_message(buffer, index, length)
        self.commands.append((REMOVE_PUBLICATION, command))
        link = self.publication_links.pop(command.registration_id, None)
        if link is None:
            self._error(
                command.correlation_id,
                ErrorCode.UNKNOWN_PUBLICATION,
                f"unknown publication: registration_id={command.registration_id}",
            )
            return
        self._release_publication(link[1])
        self._success(command.correlation_id)

    def _release_publication(self, publication: FakePublication) -> None:
        publication.ref_count -= 1
        if publication.ref_count <= 0:
            position = publication.producer_position()
            publication.end_of_stream_position = position
            set_end_of_stream_position(publication.log_buffers.meta_data_buffer, position)

    def _on_add_subscription(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_subscription_message(buffer, index, length)
        self.commands.append((ADD_SUBSCRIPTION, command))
        if self._parse_ipc(command.correlation_id, command.channel) is None:
            return
        subscription = FakeSubscription(
            command.correlation_id, command.client_id, command.channel, command.stream_id
        )
        self.subscriptions[command.correlation_id] = subscription
        length = encode_subscription_ready(
            self._scratch,
            0,
            correlation_id=command.correlation_id,
            channel_status_indicator_id=NO_ID_ALLOCATED,
        )
        self._transmit(ON_SUBSCRIPTION_READY, length)
        for publication in list(self.publications.values()):
            if _matches(publication, subscription):
                self._link(publication, subscription)

    def _on_remove_subscription(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_remove_message(buffer, index, length)
        self.commands.append((REMOVE_SUBSCRIPTION, command))
        subscription = self.subscriptions.pop(command.registration_id, None)
        if subscription is None:
            self._error(
                command.correlation_id,
                ErrorCode.UNKNOWN_SUBSCRIPTION,
                f"unknown subscription: registration_id={command.registration_id}",
            )
            return
        self._drop_subscription(subscription)
        self._success(command.correlation_id)

    def _drop_subscription(self, subscription: FakeSubscription) -> None:
        for publication in self.publications.values():
            counter_id = publication.images.pop(subscription.registration_id, None)
            if counter_id is not None:
                self.counters.free(counter_id)

    def _on_add_counter(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_counter_message(buffer, index, length)
        self.commands.append((ADD_COUNTER, command))
        counter_id = self.counters.allocate(
            command.label,
            command.type_id,
            command.key,
            registration_id=command.correlation_id,
            owner_id=command.client_id,
        )
        self.client_counters[command.correlation_id] = (command.client_id, counter_id)
        length = encode_counter_update(
            self._scratch, 0, correlation_id=command.correlation_id, counter_id=counter_id
        )
        self._transmit(ON_COUNTER_READY, length)

    def _on_remove_counter(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_remove_message(buffer, index, length)
        self.commands.append((REMOVE_COUNTER, command))
        entry = self.client_counters.pop(command.registration_id, None)
        if entry is None:
            self._error(
                command.correlation_id,
                ErrorCode.UNKNOWN_COUNTER,
                f"unknown counter: registration_id={command.registration_id}",
            )
            return
        self.counters.free(entry[1])
        self._success(command.correlation_id)
        length = encode_counter_update(
            self._scratch, 0, correlation_id=command.registration_id, counter_id=entry[1]
        )
        self._transmit(ON_UNAVAILABLE_COUNTER, length)

    def _on_client_keepalive(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_correlated_message(buffer, index, length)
        self.commands.append((CLIENT_KEEPALIVE, command))
        self.counters.set_counter_value(self.clients[command.client_id], self._clock.time_ms())

    def _on_client_close(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_correlated_message(buffer, index, length)
        self.commands.append((CLIENT_CLOSE, command))
        self._remove_client(command.client_id)

    # ----------------------------------------------------------------------------------------
    # Clients, images, limits

    def _ensure_client(self, client_id: int) -> None:
        if client_id not in self.clients:
            counter_id = self.counters.allocate(
                f"client-heartbeat: {client_id}",
                HEARTBEAT_TYPE_ID,
                struct.pack("<q", client_id),
                registration_id=client_id,
            )
            self.counters.set_counter_value(counter_id, self._clock.time_ms())
            self.clients[client_id] = counter_id

    def _check_client_liveness(self, now_ms: int) -> None:
        timeout_ms = self.client_liveness_timeout_ns // 1_000_000
        for client_id, counter_id in list(self.clients.items()):
            if self.counters.get_counter_value(counter_id) + timeout_ms < now_ms:
                self._time_out(client_id)

    def _time_out(self, client_id: int) -> None:
        self.timed_out_clients.append(client_id)
        self._remove_client(client_id)
        length = encode_client_timeout(self._scratch, 0, client_id=client_id)
        self._transmit(ON_CLIENT_TIMEOUT, length)

    def _remove_client(self, client_id: int) -> None:
        counter_id = self.clients.pop(client_id, None)
        if counter_id is not None:
            self.counters.free(counter_id)
        for correlation_id, (owner, publication) in list(self.publication_links.items()):
            if owner == client_id:
                del self.publication_links[correlation_id]
                self._release_publication(publication)
        for registration_id, subscription in list(self.subscriptions.items()):
            if subscription.client_id == client_id:
                del self.subscriptions[registration_id]
                self._drop_subscription(subscription)
        for registration_id, (owner, counter_id) in list(self.client_counters.items()):
            if owner == client_id:
                del self.client_counters[registration_id]
                self.counters.free(counter_id)

    def _link(self, publication: FakePublication, subscription: FakeSubscription) -> None:
        if subscription.registration_id in publication.images:
            return
        join_position = publication.producer_position()
        label = (
            f"sub-pos: {subscription.registration_id} {publication.session_id} "
            f"{publication.stream_id} {publication.channel} @{join_position}"
        )
        counter_id = self.counters.allocate(
            label,
            SUBSCRIBER_POSITION_TYPE_ID,
            _stream_key(
                subscription.registration_id,
                publication.session_id,
                publication.stream_id,
                publication.channel,
            ),
            registration_id=subscription.registration_id,
            owner_id=subscription.client_id,
        )
        self.counters.set_counter_value(counter_id, join_position)
        publication.images[subscription.registration_id] = counter_id
        length = encode_image_buffers_ready(
            self._scratch,
            0,
            correlation_id=publication.registration_id,
            session_id=publication.session_id,
            stream_id=publication.stream_id,
            subscriber_registration_id=subscription.registration_id,
            subscriber_position_id=counter_id,
            log_file_name=str(publication.path),
            source_identity=IPC_SOURCE_IDENTITY,
        )
        self._transmit(ON_AVAILABLE_IMAGE, length)

    def _unlink(self, publication: FakePublication, subscription_id: int, counter_id: int) -> None:
        del publication.images[subscription_id]
        self.counters.free(counter_id)
        length = encode_image_message(
            self._scratch,
            0,
            correlation_id=publication.registration_id,
            subscription_registration_id=subscription_id,
            stream_id=publication.stream_id,
            channel=publication.channel,
        )
        self._transmit(ON_UNAVAILABLE_IMAGE, length)

    def _update_limits(self) -> None:
        get_value = self.counters.get_counter_value
        for publication in self.publications.values():
            meta = publication.log_buffers.meta_data_buffer
            if not publication.images:
                set_is_connected(meta, False)
                continue
            set_is_connected(meta, True)
            slowest = min(get_value(counter_id) for counter_id in publication.images.values())
            publication.clean_to(slowest - publication.log_buffers.term_length)
            if publication.limit_frozen:
                continue
            limit = slowest + publication.term_window_length
            if limit > get_value(publication.limit_counter_id):
                self.counters.set_counter_value(publication.limit_counter_id, limit)

    def _drain_ended_publications(self) -> int:
        work = 0
        get_value = self.counters.get_counter_value
        for registration_id, publication in list(self.publications.items()):
            eos = publication.end_of_stream_position
            if eos == MAX_POSITION:
                continue
            if all(get_value(counter_id) >= eos for counter_id in publication.images.values()):
                for subscription_id, counter_id in list(publication.images.items()):
                    self._unlink(publication, subscription_id, counter_id)
                self.counters.free(publication.limit_counter_id)
                del self.publications[registration_id]
                publication.log_buffers.close()
                publication.path.unlink(missing_ok=True)
                work += 1
        return work

    # ----------------------------------------------------------------------------------------
    # Responses

    def _parse_ipc(self, correlation_id: int, channel: str) -> ChannelUri | None:
        try:
            uri = ChannelUri.parse(channel)
        except ChannelUriError as error:
            self._error(correlation_id, ErrorCode.INVALID_CHANNEL, str(error))
            return None
        if not uri.is_ipc:
            self._error(
                correlation_id,
                ErrorCode.INVALID_CHANNEL,
                f"fake driver supports aeron:ipc only: channel={channel}",
            )
            return None
        return uri

    def _error(self, correlation_id: int, code: int, message: str) -> None:
        length = encode_error_response(
            self._scratch,
            0,
            offending_command_correlation_id=correlation_id,
            error_code=int(code),
            error_message=message,
        )
        self._transmit(ON_ERROR, length)

    def _success(self, correlation_id: int) -> None:
        length = encode_operation_succeeded(self._scratch, 0, correlation_id=correlation_id)
        self._transmit(ON_OPERATION_SUCCESS, length)

    def _transmit(self, type_id: int, length: int) -> None:
        self.to_clients.transmit(type_id, self._scratch, 0, length)


def _same_channel(a: str, b: str) -> bool:
    return a.split("?", 1)[0] == b.split("?", 1)[0]


def _matches(publication: FakePublication, subscription: FakeSubscription) -> bool:
    return (
        publication.stream_id == subscription.stream_id
        and publication.end_of_stream_position == MAX_POSITION
        and _same_channel(publication.channel, subscription.channel)
    )


def _stream_key(registration_id: int, session_id: int, stream_id: int, channel: str) -> bytes:
    encoded = channel.encode("ascii", "replace")[: 112 - _KEY.size]
    return _KEY.pack(registration_id, session_id, stream_id, len(encoded)) + encoded
