"""``UdpPublications``: the conductor's network publications and the send endpoints they share.

Aeron's ``aeron_driver_conductor_get_or_add_network_publication`` and neighbours:

- a channel's :class:`~transport.driver.udp.send_channel_endpoint.SendChannelEndpoint` is
  found by canonical form or created (socket bound and connected, ``snd-channel`` status and
  ``snd-local-sockaddr`` counters) and handed to the sender;
- ADD_PUBLICATION joins the active concurrent publication of the stream on that endpoint, or a
  new one is set up (``transport/driver/publication_factory.py`` holds the rules, shared with
  IPC: session ids, initial term ids, pub-pos and pub-lmt, the log file
  ``<aeron_dir>/publications/<registration id>.logbuffer``); a publication holds its session id
  for the stream until it is DONE. A new one also gets snd-pos, snd-lmt, snd-bpe and
  snd-naks-received, the socket and receiver settings in its log metadata, a flow control
  strategy (a bad one refuses the channel first) and a retransmit handler, and is handed to the
  sender;
- on the duty cycle every publication's limit moves; on the timer each runs its life cycle, and
  one at its end of life is taken from the sender and, once the sender has let go, freed with
  its file. An endpoint with no publication left is taken from the sender and closed.

An endpoint being closed is revived if a new publication names its channel before the sender
let it go, so a publisher that restarts at once on a fixed ``control`` port finds it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent import AtomicCounter, Position
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.aeron_client import AeronClient, PublicationLink
from aeromq.transport.driver.client_proxy import ClientProxy
from aeromq.transport.driver.command_error import command_error
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.log_storage import LogStorage
from aeromq.transport.driver.publication_factory import PublicationFactory
from aeromq.transport.driver.session_ids import SessionIdAllocator
from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.udp.endpoint_factory import (
    allocate_endpoint_counters,
    open_transport,
    open_udp_channel,
)
from aeromq.transport.driver.udp.flow_control import create_flow_control
from aeromq.transport.driver.udp.network_counters import (
    CHANNEL_STATUS_ACTIVE,
    CHANNEL_STATUS_CLOSING,
    SEND_CHANNEL_STATUS_TYPE_ID,
    SENDER_BPE_TYPE_ID,
    SENDER_LIMIT_TYPE_ID,
    SENDER_NAKS_RECEIVED_TYPE_ID,
    SENDER_POSITION_TYPE_ID,
    allocate_stream_counter,
)
from aeromq.transport.driver.udp.network_proxies import SenderProxy
from aeromq.transport.driver.udp.network_publication import NetworkPublication
from aeromq.transport.driver.udp.retransmit_handler import RetransmitHandler
from aeromq.transport.driver.udp.send_channel_endpoint import SendChannelEndpoint
from aeromq.transport.driver.udp.udp_channel import UdpChannel
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.driver.uri_params import PublicationParams

__all__ = ["UdpPublications"]


class UdpPublications:
    """The network publications of the conductor (see module). Conductor thread only."""

    def __init__(
        self,
        context: MediaDriverContext,
        settings: UdpSettings,
        counters: CountersManager,
        system_counters: SystemCounters,
        client_proxy: ClientProxy,
        session_ids: SessionIdAllocator,
        sender_proxy: SenderProxy,
        on_error: Callable[[BaseException], object],
        storage: LogStorage | None = None,
    ) -> None:
        self._context = context
        self._settings = settings
        self._counters = counters
        self._system_counters = system_counters
        self._proxy = client_proxy
        self._factory = PublicationFactory(context, counters, session_ids, storage)
        self._sender_counters = [  # after pub-pos and pub-lmt, in Aeron's order
            partial(allocate_stream_counter, counters, type_id)
            for type_id in (
                SENDER_POSITION_TYPE_ID,
                SENDER_LIMIT_TYPE_ID,
                SENDER_BPE_TYPE_ID,
                SENDER_NAKS_RECEIVED_TYPE_ID,
            )
        ]
        self._sender = sender_proxy
        self._on_error = on_error
        self.endpoints: dict[str, SendChannelEndpoint] = {}
        self._closing_endpoints: list[SendChannelEndpoint] = []
        self.publications: list[NetworkPublication] = []
        self._releasing: list[NetworkPublication] = []

    # ----------------------------------------------------------------------------------------
    # Commands

    def add_publication(
        self,
        client: AeronClient,
        correlation_id: int,
        stream_id: int,
        channel: str,
        params: PublicationParams,
        is_exclusive: bool,
        now_ns: int,
    ) -> NetworkPublication:
        """Find or create the publication, link it to the client, answer."""
        udp_channel = open_udp_channel(channel, self._settings)
        endpoint = self._get_or_create_endpoint(udp_channel, correlation_id)
        try:
            publication = self._find_or_create(
                client, correlation_id, stream_id, channel, endpoint, params, is_exclusive, now_ns
            )
        except BaseException:
            self._close_endpoint_if_unused(endpoint)
            raise
        client.publication_links.append(PublicationLink(correlation_id, publication))
        self._proxy.on_publication_ready(
            correlation_id,
            publication.registration_id,
            publication.session_id,
            publication.stream_id,
            publication.pub_lmt.id,
            publication.log_file_name,
            is_exclusive,
            endpoint.status.id,
        )
        return publication

    def _get_or_create_endpoint(
        self, channel: UdpChannel, registration_id: int
    ) -> SendChannelEndpoint:
        endpoint = self.endpoints.get(channel.canonical_form)
        if endpoint is not None:
            if endpoint in self._closing_endpoints:
                self._closing_endpoints.remove(endpoint)
                endpoint.status.set_ordered(CHANNEL_STATUS_ACTIVE)
                self._sender.add_endpoint(endpoint)
            return endpoint
        transport = open_transport(
            channel,
            self._settings,
            bind_address=channel.remote_control if channel.is_multicast else channel.local_control,
            connect_address=None if channel.is_multicast else channel.remote_data,
            multicast_group=channel.remote_control if channel.is_multicast else None,
            errors=self._system_counters.get(SystemCounter.ERRORS),
            on_error=self._on_error,
        )
        status, local_sockaddr = allocate_endpoint_counters(
            self._counters, SEND_CHANNEL_STATUS_TYPE_ID, registration_id, channel, transport
        )
        endpoint = SendChannelEndpoint(
            channel,
            transport,
            status=status,
            local_sockaddr=local_sockaddr,
            invalid_packets=self._system_counters.get(SystemCounter.INVALID_PACKETS),
            status_messages_received=self._system_counters.get(
                SystemCounter.STATUS_MESSAGES_RECEIVED
            ),
            naks_received=self._system_counters.get(SystemCounter.NAK_MESSAGES_RECEIVED),
            error_frames_received=self._system_counters.get(SystemCounter.ERROR_FRAMES_RECEIVED),
        )
        status.set_ordered(CHANNEL_STATUS_ACTIVE)
        self.endpoints[channel.canonical_form] = endpoint
        self._sender.add_endpoint(endpoint)
        return endpoint

    def _find_or_create(
        self,
        client: AeronClient,
        correlation_id: int,
        stream_id: int,
        channel: str,
        endpoint: SendChannelEndpoint,
        params: PublicationParams,
        is_exclusive: bool,
        now_ns: int,
    ) -> NetworkPublication:
        factory = self._factory
        shared, session_ids_in_use = factory.find_shared(
            [p for p in self.publications if p.stream_id == stream_id and p.endpoint is endpoint],
            stream_id,
            channel,
            params,
            is_exclusive,
        )
        if shared is not None:
            return shared
        context = self._context
        settings = self._settings
        term_length = params.term_length
        try:
            flow_control = create_flow_control(endpoint.channel, settings, term_length)
        except Exception as exc:
            raise command_error(ErrorCode.INVALID_CHANNEL, str(exc), channel=channel) from exc
        new = factory.create(
            client.client_id,
            correlation_id,
            stream_id,
            channel,
            params,
            is_exclusive,
            session_ids_in_use,
            window_length=context.publication_term_window_length,
            spies_simulate_connection=False,
            media_counters=self._sender_counters,
        )
        counters = self._counters
        values = counters.values_buffer
        snd_pos_id, snd_lmt_id, snd_bpe_id, snd_naks_received_id = new.media_counter_ids
        snd_pos = Position(values, snd_pos_id, counters)
        snd_lmt = Position(values, snd_lmt_id, counters)
        snd_pos.set_ordered(new.position)
        snd_lmt.set_ordered(new.position)
        log = new.args["log"]
        metadata = log.metadata
        sndbuf, rcvbuf = endpoint.transport.socket_buffer_lengths()
        metadata.socket_sndbuf_length = sndbuf
        metadata.socket_rcvbuf_length = rcvbuf
        metadata.receiver_window_length = settings.receiver_window_length(term_length)
        metadata.max_resend = settings.max_resend
        metadata.group = endpoint.is_multicast

        system = self._system_counters
        publication = NetworkPublication(
            **new.args,
            endpoint=endpoint,
            snd_pos=snd_pos,
            snd_lmt=snd_lmt,
            snd_bpe=AtomicCounter(values, snd_bpe_id, counters),
            snd_naks_received=AtomicCounter(values, snd_naks_received_id, counters),
            flow_control=flow_control,
            retransmit_handler=RetransmitHandler(
                delay_ns=settings.retransmit_unicast_delay_ns,
                linger_ns=settings.retransmit_unicast_linger_ns,
                max_resend=settings.max_resend,
                invalid_packets=system.get(SystemCounter.INVALID_PACKETS),
                overflows=system.get(SystemCounter.RETRANSMIT_OVERFLOW),
            ),
            mtu_length=params.mtu_length,
            max_messages_per_send=settings.network_publication_max_messages_per_send,
            connection_timeout_ns=settings.publication_connection_timeout_ns,
            linger_timeout_ns=params.linger_timeout_ns,
            unblock_timeout_ns=context.publication_unblock_timeout_ns,
            multicast_ttl=endpoint.channel.multicast_ttl,
            signal_eos=params.signal_eos,
            short_sends=system.get(SystemCounter.SHORT_SENDS),
            heartbeats_sent=system.get(SystemCounter.HEARTBEATS_SENT),
            sender_flow_control_limits=system.get(SystemCounter.SENDER_FLOW_CONTROL_LIMITS),
            retransmits_sent=system.get(SystemCounter.RETRANSMITS_SENT),
            retransmitted_bytes=system.get(SystemCounter.RETRANSMITTED_BYTES),
            unblocked_publications=system.get(SystemCounter.UNBLOCKED_PUBLICATIONS),
            now_ns=now_ns,
        )
        factory.storage.track(publication)
        self.publications.append(publication)
        self._sender.add_publication(publication)
        return publication

    # ----------------------------------------------------------------------------------------
    # Duty cycle and timer

    def update_publisher_limits(self) -> int:
        work_count = 0
        for publication in self.publications:
            work_count += publication.update_pub_pos_and_lmt()
        return work_count

    def on_time_event(self, now_ns: int) -> None:
        """Each publication's timer; end of life, release and freeing; endpoint closing."""
        for publication in self.publications:
            publication.on_time_event(now_ns)
        for publication in [p for p in self.publications if p.has_reached_end_of_life]:
            self.publications.remove(publication)
            self._releasing.append(publication)
            self._sender.remove_publication(publication)
        for publication in [p for p in self._releasing if p.has_sender_released]:
            self._releasing.remove(publication)
            if not publication.close():
                self._system_counters.get(SystemCounter.FREE_FAILS).increment_ordered()
            self._close_endpoint_if_unused(publication.endpoint)
        for endpoint in [e for e in self._closing_endpoints if e.has_sender_released]:
            self._closing_endpoints.remove(endpoint)
            del self.endpoints[endpoint.channel.canonical_form]
            endpoint.close()

    def _close_endpoint_if_unused(self, endpoint: SendChannelEndpoint) -> None:
        if endpoint in self._closing_endpoints:
            return
        if any(p.endpoint is endpoint for p in self.publications) or any(
            p.endpoint is endpoint for p in self._releasing
        ):
            return
        endpoint.has_sender_released = False
        endpoint.status.set_ordered(CHANNEL_STATUS_CLOSING)
        self._closing_endpoints.append(endpoint)
        self._sender.remove_endpoint(endpoint)

    def close(self) -> None:
        """The driver is stopping (agents stopped): unmap every log, close every socket."""
        for publication in [*self.publications, *self._releasing]:
            publication.unmap()
        for endpoint in self.endpoints.values():
            endpoint.transport.close()
        self.publications.clear()
        self._releasing.clear()
        self.endpoints.clear()
        self._closing_endpoints.clear()
