"""``FakeConductor``: the fake driver's commands, clients, images and publication limits.

The part of :class:`~transport.testing.fake_driver.FakeDriver` that speaks the protocol, as the
real driver's conductor does for IPC:

- **Commands** (:meth:`FakeConductor.on_command`, the to-driver ring buffer's handler):
  ADD_PUBLICATION / ADD_EXCLUSIVE_PUBLICATION (a log buffer file, concurrent publications of one
  channel and stream sharing it, and a pub-lmt counter), REMOVE_PUBLICATION, ADD_SUBSCRIPTION,
  REMOVE_SUBSCRIPTION, ADD_COUNTER, REMOVE_COUNTER, CLIENT_KEEPALIVE, CLIENT_CLOSE; every
  decoded command is kept in :attr:`FakeConductor.commands`; a scripted error answers the next
  command of its type instead.
- **Clients**: a ``client-heartbeat`` counter on a client's first command, and a time out
  (ON_CLIENT_TIMEOUT) when it is not stamped for the client liveness timeout.
- **Images**: a sub-pos counter and ON_AVAILABLE_IMAGE for every matching pair, in either
  order; ON_UNAVAILABLE_IMAGE once every subscriber has read up to a removed publication's end.
- **Limits**: each publication limit moves to the slowest subscriber position plus the term
  window, the terms a term length behind the slowest subscriber are zeroed, and the log is
  flagged connected while it has subscribers.

Caller: :class:`~transport.testing.fake_driver.FakeDriver`, always under its lock.
Affects: the counters in ``cnc.dat``, log buffer files in ``<aeron_dir>/publications``, and
(through :class:`~transport.testing.fake_client_proxy.FakeClientProxy`) the to-clients buffer.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path

from aeromq.transport._errors import ChannelUriError, MalformedCommandError
from aeromq.transport.channel_uri import ChannelUri
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
    ErrorCode,
    PublicationMessage,
    decode_correlated_message,
    decode_counter_message,
    decode_publication_message,
    decode_remove_message,
    decode_remove_publication_message,
    decode_subscription_message,
)
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.clock import EpochClock
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_TYPE_CONCURRENT,
    LOG_TYPE_EXCLUSIVE,
    fill_default_header,
    initialise_tails,
    set_end_of_stream_position,
    set_is_connected,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.testing.fake_client_proxy import FakeClientProxy
from aeromq.transport.testing.fake_resources import (
    HEARTBEAT_TYPE_ID,
    MAX_POSITION,
    PUBLISHER_LIMIT_TYPE_ID,
    SUBSCRIBER_POSITION_TYPE_ID,
    FakePublication,
    FakeSubscription,
    matches,
    same_channel,
    stream_key,
)

__all__ = ["FakeConductor"]


class FakeConductor:
    """The fake driver's protocol state and command handlers (see module)."""

    def __init__(
        self,
        counters: CountersManager,
        client_proxy: FakeClientProxy,
        epoch_clock: EpochClock,
        *,
        aeron_dir: Path,
        term_length: int,
        mtu_length: int,
        page_size: int,
        client_liveness_timeout_ns: int,
        term_window_length: int,
    ) -> None:
        self.counters = counters
        self.client_proxy = client_proxy
        self._clock = epoch_clock
        self._aeron_dir = aeron_dir
        self.term_length = term_length
        self.mtu_length = mtu_length
        self.page_size = page_size
        self.client_liveness_timeout_ns = client_liveness_timeout_ns
        self.term_window_length = term_window_length
        self._scripted_errors: dict[int, list[tuple[int, str]]] = {}
        self.commands: list[tuple[int, object]] = []
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
    # Scripting (FakeDriver's, under its lock)

    def fail_next(self, command_type_id: int, code: int, message: str) -> None:
        """Answer the next command of this type with ON_ERROR(code, message)."""
        self._scripted_errors.setdefault(command_type_id, []).append((code, message))

    def time_out(self, client_id: int) -> None:
        """Drop a client as its liveness timeout does: ON_CLIENT_TIMEOUT and cleanup."""
        self.timed_out_clients.append(client_id)
        self._remove_client(client_id)
        self.client_proxy.client_timeout(client_id)

    def unlink(self, publication: FakePublication, subscription_id: int, counter_id: int) -> None:
        """End one image: free its sub-pos counter and send ON_UNAVAILABLE_IMAGE."""
        del publication.images[subscription_id]
        self.counters.free(counter_id)
        self.client_proxy.unavailable_image(publication, subscription_id)

    def close(self) -> None:
        """Unmap every publication's log buffers."""
        for publication in list(self.publications.values()):
            publication.log_buffers.close()
        self.publications.clear()

    # ----------------------------------------------------------------------------------------
    # Commands

    def on_command(self, type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        """Handle one command from the to-driver ring buffer (its read handler)."""
        correlation_id = 0
        try:
            correlated = decode_correlated_message(buffer, index, length)
            correlation_id = correlated.correlation_id
            self._ensure_client(correlated.client_id)
            scripted = self._scripted_errors.get(type_id)
            if scripted:
                code, message = scripted.pop(0)
                self.commands.append((type_id, correlated))
                self.client_proxy.error(correlation_id, code, message)
                return
            handler = self._dispatch.get(type_id)
            if handler is None:
                self.commands.append((type_id, correlated))
                self.client_proxy.error(
                    correlation_id,
                    ErrorCode.UNKNOWN_COMMAND_TYPE_ID,
                    f"command type not supported: type_id={type_id}",
                )
                return
            handler(buffer, index, length)
        except MalformedCommandError as error:
            self.client_proxy.error(correlation_id, ErrorCode.MALFORMED_COMMAND, str(error))

    def _on_add_publication(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._add_publication(decode_publication_message(buffer, index, length), exclusive=False)

    def _on_add_exclusive_publication(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        self._add_publication(decode_publication_message(buffer, index, length), exclusive=True)

    def _add_publication(self, command: PublicationMessage, *, exclusive: bool) -> None:
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
                    and same_channel(p.channel, command.channel)
                ),
                None,
            )
        if publication is None:
            publication = self._new_publication(command, uri, exclusive)
        else:
            publication.ref_count += 1
        self.publication_links[command.correlation_id] = (command.client_id, publication)
        self.client_proxy.publication_ready(
            command.correlation_id, publication, exclusive=exclusive
        )
        for subscription in list(self.subscriptions.values()):
            if matches(publication, subscription):
                self._link(publication, subscription)

    def _new_publication(
        self, command: PublicationMessage, uri: ChannelUri, exclusive: bool
    ) -> FakePublication:
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
        path = self._aeron_dir / "publications" / f"{registration_id}.logbuffer"
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
            stream_key(registration_id, session_id, command.stream_id, command.channel),
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
            self.client_proxy.error(
                command.correlation_id,
                ErrorCode.UNKNOWN_PUBLICATION,
                f"unknown publication: registration_id={command.registration_id}",
            )
            return
        self._release_publication(link[1])
        self.client_proxy.operation_succeeded(command.correlation_id)

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
        self.client_proxy.subscription_ready(command.correlation_id)
        for publication in list(self.publications.values()):
            if matches(publication, subscription):
                self._link(publication, subscription)

    def _on_remove_subscription(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_remove_message(buffer, index, length)
        self.commands.append((REMOVE_SUBSCRIPTION, command))
        subscription = self.subscriptions.pop(command.registration_id, None)
        if subscription is None:
            self.client_proxy.error(
                command.correlation_id,
                ErrorCode.UNKNOWN_SUBSCRIPTION,
                f"unknown subscription: registration_id={command.registration_id}",
            )
            return
        self._drop_subscription(subscription)
        self.client_proxy.operation_succeeded(command.correlation_id)

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
        self.client_proxy.counter_ready(command.correlation_id, counter_id)

    def _on_remove_counter(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_remove_message(buffer, index, length)
        self.commands.append((REMOVE_COUNTER, command))
        entry = self.client_counters.pop(command.registration_id, None)
        if entry is None:
            self.client_proxy.error(
                command.correlation_id,
                ErrorCode.UNKNOWN_COUNTER,
                f"unknown counter: registration_id={command.registration_id}",
            )
            return
        self.counters.free(entry[1])
        self.client_proxy.operation_succeeded(command.correlation_id)
        self.client_proxy.unavailable_counter(command.registration_id, entry[1])

    def _on_client_keepalive(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_correlated_message(buffer, index, length)
        self.commands.append((CLIENT_KEEPALIVE, command))
        self.counters.set_counter_value(self.clients[command.client_id], self._clock.time_ms())

    def _on_client_close(self, buffer: AtomicBuffer, index: int, length: int) -> None:
        command = decode_correlated_message(buffer, index, length)
        self.commands.append((CLIENT_CLOSE, command))
        self._remove_client(command.client_id)

    def _parse_ipc(self, correlation_id: int, channel: str) -> ChannelUri | None:
        try:
            uri = ChannelUri.parse(channel)
        except ChannelUriError as error:
            self.client_proxy.error(correlation_id, ErrorCode.INVALID_CHANNEL, str(error))
            return None
        if not uri.is_ipc:
            self.client_proxy.error(
                correlation_id,
                ErrorCode.INVALID_CHANNEL,
                f"fake driver supports aeron:ipc only: channel={channel}",
            )
            return None
        return uri

    # ----------------------------------------------------------------------------------------
    # Clients, images, limits (each duty cycle)

    def check_client_liveness(self, now_ms: int) -> None:
        """Time out every client whose heartbeat is older than the client liveness timeout."""
        timeout_ms = self.client_liveness_timeout_ns // 1_000_000
        for client_id, counter_id in list(self.clients.items()):
            if self.counters.get_counter_value(counter_id) + timeout_ms < now_ms:
                self.time_out(client_id)

    def update_limits(self) -> None:
        """Move each publication's limit, clean behind its slowest subscriber, flag connected."""
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

    def drain_ended_publications(self) -> int:
        """End the images of removed publications every subscriber has read; how many ended."""
        work = 0
        get_value = self.counters.get_counter_value
        for registration_id, publication in list(self.publications.items()):
            eos = publication.end_of_stream_position
            if eos == MAX_POSITION:
                continue
            if all(get_value(counter_id) >= eos for counter_id in publication.images.values()):
                for subscription_id, counter_id in list(publication.images.items()):
                    self.unlink(publication, subscription_id, counter_id)
                self.counters.free(publication.limit_counter_id)
                del self.publications[registration_id]
                publication.log_buffers.close()
                publication.path.unlink(missing_ok=True)
                work += 1
        return work

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
            stream_key(
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
        self.client_proxy.available_image(publication, subscription.registration_id, counter_id)
