"""``ImageFactory``: a publication image built over its log, with its counters and metadata.

Aeron's ``aeron_driver_conductor_on_create_publication_image`` once the log exists: rcv-hwm,
rcv-pos and rcv-naks-sent counters (keyed by the image's correlation id, session, stream and
channel, owned by the oldest subscribing client as in Aeron 1.53), the log's metadata (initial
term id and MTU from the SETUP; the receiver window; the oldest subscription's ``sparse``,
``reliable``, ``rejoin`` and ``tether``; the socket buffers) and default header, and the
:class:`~transport.driver.udp.publication_image.PublicationImage` with the NAK delay generator
of its channel (unicast: static; multicast: Aeron's optimal multicast back-off).

Caller: ``UdpSubscriptions`` (``udp_subscriptions.py``), on the conductor thread, after the
SETUP was admitted and its log made; it links the subscriptions and hands the image to the
receiver.
"""

from __future__ import annotations

from collections.abc import Sequence

from aeromq.transport._errors import TransportStateError
from aeromq.transport.concurrent import AtomicCounter, Position
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.udp.loss_detector import (
    FeedbackDelayGenerator,
    OptimalMulticastDelayGenerator,
    StaticDelayGenerator,
)
from aeromq.transport.driver.udp.network_counters import (
    RECEIVER_HWM_TYPE_ID,
    RECEIVER_NAKS_SENT_TYPE_ID,
    RECEIVER_POSITION_TYPE_ID,
    allocate_stream_counter,
)
from aeromq.transport.driver.udp.network_proxies import ImageRequest
from aeromq.transport.driver.udp.network_subscription_link import NetworkSubscriptionLink
from aeromq.transport.driver.udp.publication_image import PublicationImage
from aeromq.transport.driver.udp.udp_channel import UdpChannel
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_TYPE_IMAGE,
    fill_default_header,
    set_end_of_stream_position,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers

__all__ = ["ImageFactory"]

_MAX_POSITION = 2**63 - 1


class ImageFactory:
    """Builds the driver's images (see module). Conductor thread only."""

    __slots__ = ("_context", "_counters", "_settings", "_system_counters")

    def __init__(
        self,
        context: MediaDriverContext,
        settings: UdpSettings,
        counters: CountersManager,
        system_counters: SystemCounters,
    ) -> None:
        self._context = context
        self._settings = settings
        self._counters = counters
        self._system_counters = system_counters

    def build(
        self,
        request: ImageRequest,
        links: Sequence[NetworkSubscriptionLink],
        correlation_id: int,
        log: LogBuffers,
        now_ns: int,
    ) -> PublicationImage:
        """The image of ``request`` over ``log`` (made for it), serving ``links`` (the oldest
        first: its flags are the image's, as Aeron's), with its counters; a failure frees what
        it allocated (the caller deletes the log)."""
        context = self._context
        settings = self._settings
        endpoint = request.endpoint
        channel = endpoint.channel
        term_length = request.term_length
        counters = self._counters
        owner_id = links[0].client_id  # as Aeron 1.53: the subscribing client owns them
        allocated: list[int] = []
        try:
            for type_id in (
                RECEIVER_HWM_TYPE_ID,
                RECEIVER_POSITION_TYPE_ID,
                RECEIVER_NAKS_SENT_TYPE_ID,
            ):
                allocated.append(
                    allocate_stream_counter(
                        counters,
                        type_id,
                        correlation_id,
                        request.session_id,
                        request.stream_id,
                        channel.original_uri,
                        owner_id,
                    )
                )
        except TransportStateError:
            for counter_id in allocated:
                counters.free(counter_id)
            raise
        hwm_id, pos_id, naks_sent_id = allocated
        rcv_hwm = Position(counters.values_buffer, hwm_id, counters)
        rcv_pos = Position(counters.values_buffer, pos_id, counters)
        rcv_naks_sent = AtomicCounter(counters.values_buffer, naks_sent_id, counters)
        is_sparse = links[0].is_sparse
        window = settings.receiver_window_length(term_length, channel.receiver_window_length)
        metadata = log.metadata
        metadata.initial_term_id = request.initial_term_id
        metadata.mtu_length = request.mtu_length
        metadata.correlation_id = correlation_id
        metadata.receiver_window_length = window
        metadata.sparse = is_sparse
        metadata.reliable = links[0].is_reliable
        metadata.rejoin = links[0].is_rejoin
        metadata.tether = links[0].is_tether
        metadata.group = channel.is_multicast
        metadata.log_type = LOG_TYPE_IMAGE
        sndbuf, rcvbuf = endpoint.transport.socket_buffer_lengths()
        metadata.socket_sndbuf_length = sndbuf
        metadata.socket_rcvbuf_length = rcvbuf
        fill_default_header(
            log.meta_data_buffer, request.session_id, request.stream_id, request.initial_term_id
        )
        set_end_of_stream_position(log.meta_data_buffer, _MAX_POSITION)

        system = self._system_counters
        return PublicationImage(
            log=log,
            endpoint=endpoint,
            correlation_id=correlation_id,
            session_id=request.session_id,
            stream_id=request.stream_id,
            initial_term_id=request.initial_term_id,
            active_term_id=request.active_term_id,
            initial_term_offset=request.term_offset,
            rcv_hwm=rcv_hwm,
            rcv_pos=rcv_pos,
            control_address=request.control_address,
            source_address=request.source_address,
            delay_generator=self._delay_generator(channel),
            is_reliable=links[0].is_reliable,
            receiver_window_length=window,
            status_message_timeout_ns=settings.status_message_timeout_ns,
            image_liveness_timeout_ns=settings.image_liveness_timeout_ns,
            untethered_window_limit_timeout_ns=context.untethered_window_limit_timeout_ns,
            untethered_resting_timeout_ns=context.untethered_resting_timeout_ns,
            heartbeats_received=system.get(SystemCounter.HEARTBEATS_RECEIVED),
            flow_control_under_runs=system.get(SystemCounter.FLOW_CONTROL_UNDER_RUNS),
            flow_control_over_runs=system.get(SystemCounter.FLOW_CONTROL_OVER_RUNS),
            status_messages_sent=system.get(SystemCounter.STATUS_MESSAGES_SENT),
            naks_sent=system.get(SystemCounter.NAK_MESSAGES_SENT),
            rcv_naks_sent=rcv_naks_sent,
            loss_gap_fills=system.get(SystemCounter.LOSS_GAP_FILLS),
            now_ns=now_ns,
        )

    def _delay_generator(self, channel: UdpChannel) -> FeedbackDelayGenerator:
        settings = self._settings
        if channel.is_multicast:
            return OptimalMulticastDelayGenerator(
                settings.nak_multicast_max_backoff_ns, settings.nak_multicast_group_size
            )
        delay_ns = (
            channel.nak_delay_ns
            if channel.nak_delay_ns is not None
            else settings.nak_unicast_delay_ns
        )
        return StaticDelayGenerator(delay_ns, delay_ns * settings.nak_unicast_retry_delay_ratio)
