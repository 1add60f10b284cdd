"""``UdpSubscriptions``: the conductor's UDP subscriptions, receive endpoints and images.

Aeron's ``aeron_driver_conductor_on_add_network_subscription``,
``aeron_driver_conductor_on_create_publication_image`` and neighbours:

- a subscription's channel finds its :class:`ReceiveChannelEndpoint` by canonical form or
  creates it (``endpoint_factory.py``: socket bound to the endpoint, ``rcv-channel`` status and
  ``rcv-local-sockaddr`` counters), and the receiver is told the endpoint now wants the stream
  (or one session of it);
  the subscription is linked at once to every image of that stream on the endpoint;
- a SETUP for a wanted session reaches the conductor as an image request (through the
  :class:`~transport.driver.udp.network_proxies.DriverConductorProxy`); it must pass the
  admission rules first (``image_admission.py``: the term length cap, the bound per source
  address) and the storage check (``log_storage.py``), or nothing is made. The image gets a new
  correlation id, its log ``<aeron_dir>/images/<correlation id>.logbuffer`` (term length and MTU
  from the SETUP; sparse as the oldest matching subscription's ``sparse`` says, as Aeron's; a
  large log allocated up front is made by the allocator, ``log_allocator.py``, and the image
  finished on a later duty cycle), rcv-hwm and rcv-pos counters and metadata
  (``image_factory.py``), and a sub-pos per matching subscription, each announced with
  ON_AVAILABLE_IMAGE (source identity ``host:port`` of the sender); then the receiver gets the
  image;
- on the timer each image runs its life cycle: entering LINGER it leaves the receiver,
  subscribers get ON_UNAVAILABLE_IMAGE and (with ``rejoin``, the default) the session's
  cool-down ends; at DONE (no subscriber linked any more, or the liveness timeout later, and
  once the receiver has let go) its sub-pos counters, counters and file are freed;
- REMOVE_SUBSCRIPTION (or the client's end) unlinks it; an endpoint with no subscription and no
  image left is taken from the receiver and closed once the receiver has let go (revived if a
  subscription names it again before then, so a subscriber that restarts at once finds its port);
- a subscription whose channel names a ``doorbell`` (a counter of this driver holding one)
  hands it to each image it is linked to, which the receiver rings after each duty cycle that
  brought the image new data (``receiver.py``); a counter that holds no doorbell is refused
  (``INVALID_CHANNEL``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.concurrent.doorbell import Doorbell
from aeromq.transport.driver.client_proxy import ClientProxy
from aeromq.transport.driver.command_error import command_error
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.log_allocator import LogAllocator, LogRequest
from aeromq.transport.driver.log_factory import create_log, delete_log
from aeromq.transport.driver.log_storage import LogStorage
from aeromq.transport.driver.subscriber_position import SubscriberPosition
from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.udp.data_packet_dispatcher import DataPacketDispatcher
from aeromq.transport.driver.udp.endpoint_factory import (
    allocate_endpoint_counters,
    open_transport,
    open_udp_channel,
)
from aeromq.transport.driver.udp.image_admission import ImageAdmission
from aeromq.transport.driver.udp.image_factory import ImageFactory
from aeromq.transport.driver.udp.network_counters import (
    CHANNEL_STATUS_ACTIVE,
    CHANNEL_STATUS_CLOSING,
    RECEIVE_CHANNEL_STATUS_TYPE_ID,
)
from aeromq.transport.driver.udp.network_proxies import (
    DriverConductorProxy,
    ImageRequest,
    ReceiverProxy,
)
from aeromq.transport.driver.udp.network_subscription_link import NetworkSubscriptionLink
from aeromq.transport.driver.udp.publication_image import ImageState, PublicationImage
from aeromq.transport.driver.udp.receive_channel_endpoint import ReceiveChannelEndpoint
from aeromq.transport.driver.udp.udp_channel import UdpChannel, format_sockaddr
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.driver.uri_params import SubscriptionParams
from aeromq.transport.logbuffer.log_buffers import LogBuffers

__all__ = ["INLINE_LOG_BYTES", "UdpSubscriptions"]

_MAX_POSITION = 2**63 - 1
INLINE_LOG_BYTES = 4 * 1024 * 1024
"""An image log allocated up front and longer than this is made by the allocator, off the
conductor's duty cycle (``transport/driver/log_allocator.py``); a shorter one (a few ms at
most) or a sparse one is made at once."""


class UdpSubscriptions:
    """The UDP subscriptions and images of the conductor (see module). Conductor thread only."""

    def __init__(
        self,
        context: MediaDriverContext,
        settings: UdpSettings,
        counters: CountersManager,
        system_counters: SystemCounters,
        client_proxy: ClientProxy,
        receiver_proxy: ReceiverProxy,
        next_correlation_id: Callable[[], int],
        on_error: Callable[[BaseException], object],
        storage: LogStorage | None = None,
    ) -> None:
        self._context = context
        self._settings = settings
        self._counters = counters
        self._system_counters = system_counters
        self._proxy = client_proxy
        self._receiver = receiver_proxy
        self._next_correlation_id = next_correlation_id
        self._on_error = on_error
        self.conductor_proxy = DriverConductorProxy(self._on_create_image)
        self.endpoints: dict[str, ReceiveChannelEndpoint] = {}
        self._closing_endpoints: list[ReceiveChannelEndpoint] = []
        self.subscriptions: list[NetworkSubscriptionLink] = []
        self.images: list[PublicationImage] = []
        self._now_ns = context.nano_clock.time_ns()
        self._storage = storage if storage is not None else LogStorage()
        self._admission = ImageAdmission(
            context, system_counters.get(SystemCounter.IMAGES_REJECTED)
        )
        self._allocator: LogAllocator[tuple[ImageRequest, int]] = LogAllocator()
        self._images = ImageFactory(context, settings, counters, system_counters)

    # ----------------------------------------------------------------------------------------
    # Subscriptions

    def add_subscription(
        self,
        client_id: int,
        registration_id: int,
        stream_id: int,
        channel: str,
        params: SubscriptionParams,
        now_ns: int,
    ) -> NetworkSubscriptionLink:
        """Register the subscription, answer, and link it to the images it matches."""
        doorbell = self._doorbell(channel, params.doorbell_counter_id)
        udp_channel = open_udp_channel(channel, self._settings)
        endpoint = self._get_or_create_endpoint(udp_channel, registration_id)
        link = NetworkSubscriptionLink(
            registration_id, client_id, stream_id, channel, endpoint, params, doorbell
        )
        self.subscriptions.append(link)
        session_id = params.session_id
        if session_id is None:
            first = endpoint.incref_to_stream(stream_id) == 1
        else:
            first = endpoint.incref_to_stream_and_session(stream_id, session_id) == 1
        if first:
            self._receiver.add_subscription(endpoint, stream_id, session_id)
        self._proxy.on_subscription_ready(registration_id, endpoint.status.id)
        for image in self.images:
            if (
                image.endpoint is endpoint
                and link.matches(image.stream_id, image.session_id)
                and image.is_accepting_subscriptions()
            ):
                self._link(link, image, now_ns)
        return link

    def _doorbell(self, channel: str, counter_id: int | None) -> Doorbell | None:
        """The doorbell of the channel's ``doorbell`` counter (see module); None if unset."""
        if counter_id is None:
            return None
        if not Doorbell.is_doorbell_counter(self._counters, counter_id):
            raise command_error(
                ErrorCode.INVALID_CHANNEL,
                "invalid channel parameter: not a doorbell counter",
                channel=channel,
                key="doorbell",
                value=counter_id,
            )
        return Doorbell.for_counter(self._counters, counter_id)

    def remove_subscription(self, registration_id: int) -> bool:
        """Unlink and forget the subscription; False if there is none with that id."""
        for link in self.subscriptions:
            if link.registration_id == registration_id:
                self._remove(link)
                return True
        return False

    def remove_client_subscriptions(self, client_id: int) -> None:
        for link in [link for link in self.subscriptions if link.client_id == client_id]:
            self._remove(link)

    def _remove(self, link: NetworkSubscriptionLink) -> None:
        self.subscriptions.remove(link)
        link.unlink_all(self._counters)
        endpoint = link.endpoint
        session_id = link.session_id
        if session_id is None:
            last = endpoint.decref_to_stream(link.stream_id) == 0
        else:
            last = endpoint.decref_to_stream_and_session(link.stream_id, session_id) == 0
        if last:
            self._receiver.remove_subscription(endpoint, link.stream_id, session_id)
        self._close_endpoint_if_unused(endpoint)

    def _link(self, link: NetworkSubscriptionLink, image: PublicationImage, now_ns: int) -> None:
        join_position = image.rcv_pos.get_volatile()
        subscriber = link.link(self._counters, image, join_position, image.correlation_id, now_ns)
        if link.doorbell is not None:
            image.add_doorbell(subscriber.counter_id, link.doorbell)
        self.on_image_available(image, subscriber)

    # ----------------------------------------------------------------------------------------
    # Endpoints

    def _get_or_create_endpoint(
        self, channel: UdpChannel, registration_id: int
    ) -> ReceiveChannelEndpoint:
        endpoint = self.endpoints.get(channel.canonical_form)
        if endpoint is not None:
            if endpoint in self._closing_endpoints:
                self._closing_endpoints.remove(endpoint)
                endpoint.status.set_ordered(CHANNEL_STATUS_ACTIVE)
                self._receiver.add_endpoint(endpoint)
            return endpoint
        transport = open_transport(
            channel,
            self._settings,
            bind_address=channel.local_data,
            connect_address=None,
            multicast_group=channel.remote_data if channel.is_multicast else None,
            errors=self._system_counters.get(SystemCounter.ERRORS),
            on_error=self._on_error,
        )
        status, local_sockaddr = allocate_endpoint_counters(
            self._counters, RECEIVE_CHANNEL_STATUS_TYPE_ID, registration_id, channel, transport
        )
        system = self._system_counters
        endpoint = ReceiveChannelEndpoint(
            channel,
            transport,
            DataPacketDispatcher(self.conductor_proxy, self._settings.pending_setup_timeout_ns),
            status=status,
            local_sockaddr=local_sockaddr,
            invalid_packets=system.get(SystemCounter.INVALID_PACKETS),
            short_sends=system.get(SystemCounter.SHORT_SENDS),
        )
        status.set_ordered(CHANNEL_STATUS_ACTIVE)
        self.endpoints[channel.canonical_form] = endpoint
        self._receiver.add_endpoint(endpoint)
        return endpoint

    def _close_endpoint_if_unused(self, endpoint: ReceiveChannelEndpoint) -> None:
        if endpoint in self._closing_endpoints or endpoint.has_subscriptions:
            return
        endpoint.has_receiver_released = False
        endpoint.status.set_ordered(CHANNEL_STATUS_CLOSING)
        self._closing_endpoints.append(endpoint)
        self._receiver.remove_endpoint(endpoint)

    # ----------------------------------------------------------------------------------------
    # Images

    def do_work(self, now_ns: int) -> int:
        """Run the receiver's queued image requests, and finish the images whose logs the
        allocator made (conductor duty cycle)."""
        self._now_ns = now_ns
        queue = self.conductor_proxy.queue
        work_count = 0
        while queue and work_count < 10:
            command, args = queue.popleft()
            try:
                command(*args)
            except Exception as error:
                self._on_error(error)
            work_count += 1
        if self._allocator.in_flight:
            for made in self._allocator.poll():
                try:
                    self._on_log_made(made)
                except Exception as error:
                    self._on_error(error)
                work_count += 1
        return work_count

    def left_work(self) -> bool:
        """Whether :meth:`do_work` has work now: image requests queued (the receiver queues
        them after the conductor's turn in a shared cycle), logs in the making. Conductor
        thread."""
        return bool(self.conductor_proxy.queue) or self._allocator.in_flight > 0

    def _on_create_image(self, request: ImageRequest) -> None:
        """A SETUP the receiver wants turned into an image: admitted (``image_admission.py``),
        checked for room, its log made (here, or by the allocator for a large one allocated
        up front), then the image is built (:meth:`_finish_image`)."""
        links = self._links_for(request)
        if not links:
            self._receiver.remove_init_in_progress(
                request.endpoint, request.session_id, request.stream_id
            )
            return
        admission = self._admission
        if not admission.admit(
            request.source_address,
            request.session_id,
            request.stream_id,
            request.term_length,
            links,
            self._now_ns,
        ):
            self._receiver.remove_init_in_progress(
                request.endpoint, request.session_id, request.stream_id
            )
            return
        context = self._context
        term_length = request.term_length
        log_length = admission.log_length(term_length)
        is_sparse = links[0].is_sparse  # the oldest subscription's, as Aeron's
        correlation_id = self._next_correlation_id()
        path = os.path.join(context.images_dir(), f"{correlation_id}.logbuffer")
        try:
            if context.perform_storage_checks:
                self._storage.check(context.images_dir(), log_length)
            if not is_sparse and log_length > INLINE_LOG_BYTES:
                self._storage.reserve(path, log_length)
                self._allocator.submit(
                    LogRequest(
                        (request, correlation_id),
                        path,
                        term_length,
                        context.file_page_size,
                        False,
                        context.file_mode,
                    )
                )
                return
            log = create_log(
                path, term_length, context.file_page_size, is_sparse, context.file_mode
            )
        except BaseException:
            self._give_up(request)
            raise
        self._finish_image(request, correlation_id, log)

    def _on_log_made(self, made: LogRequest[tuple[ImageRequest, int]]) -> None:
        """The allocator made (or failed to make) an image's log: finish the image."""
        request, correlation_id = made.token
        self._storage.settle(made.path)
        if made.log is None:
            self._give_up(request)
            if made.error is not None:
                raise made.error
            return
        self._finish_image(request, correlation_id, made.log)

    def _links_for(self, request: ImageRequest) -> list[NetworkSubscriptionLink]:
        endpoint = request.endpoint
        return [
            link
            for link in self.subscriptions
            if link.endpoint is endpoint and link.matches(request.stream_id, request.session_id)
        ]

    def _give_up(self, request: ImageRequest) -> None:
        """An admitted SETUP did not become an image: its source holds it no more, and the
        receiver may ask again at its next SETUP."""
        self._admission.release(request.source_address, request.term_length)
        self._receiver.remove_init_in_progress(
            request.endpoint, request.session_id, request.stream_id
        )

    def _finish_image(self, request: ImageRequest, correlation_id: int, log: LogBuffers) -> None:
        links = self._links_for(request)  # again: a subscription may have gone meanwhile
        path = str(log.path)
        image = None
        try:
            if links:
                image = self._images.build(request, links, correlation_id, log, self._now_ns)
                image.listener = self
        finally:
            if image is None:
                log.close()
                delete_log(path)
                self._give_up(request)
        if image is None:
            return
        self.images.append(image)
        self._storage.track(image)
        for link in links:
            self._link(link, image, self._now_ns)
        self._receiver.new_publication_image(image)

    # ImageListener ----------------------------------------------------------------------------

    def on_image_available(self, image: PublicationImage, subscriber: SubscriberPosition) -> None:
        self._proxy.on_available_image(
            image.correlation_id,
            image.session_id,
            image.stream_id,
            subscriber.subscription_registration_id,
            subscriber.counter_id,
            image.log_file_name,
            format_sockaddr(image.source_address),
        )

    def on_image_unavailable(self, image: PublicationImage, subscription_id: int) -> None:
        self._proxy.on_unavailable_image(
            image.correlation_id,
            subscription_id,
            image.stream_id,
            image.endpoint.channel.original_uri,
        )

    # ----------------------------------------------------------------------------------------
    # Timer

    def on_time_event(self, now_ns: int) -> None:
        """Each image's life cycle; freeing images and closing endpoints that are done."""
        self._now_ns = now_ns
        for image in list(self.images):
            state = image.on_time_event(now_ns)
            if state is ImageState.LINGER:
                self._on_image_linger(image)
            elif image.state is ImageState.DONE and image.has_receiver_released:
                self._free_image(image)
        for endpoint in [e for e in self._closing_endpoints if e.has_receiver_released]:
            if any(image.endpoint is endpoint for image in self.images):
                continue
            self._closing_endpoints.remove(endpoint)
            del self.endpoints[endpoint.channel.canonical_form]
            endpoint.close()

    def _on_image_linger(self, image: PublicationImage) -> None:
        """The image leaves the receiver; its subscribers hear it is gone (Aeron's
        ``image_transition_to_linger``). With ``rejoin`` (the default) the session's cool-down
        ends at once, so the publication, if it is still there, can be joined again."""
        self._receiver.remove_publication_image(image)
        rejoin = True
        for link in self.subscriptions:
            if image in link.linked:
                rejoin = link.is_rejoin
                self.on_image_unavailable(image, link.registration_id)
        if rejoin:
            self._receiver.remove_cool_down(image.endpoint, image.session_id, image.stream_id)

    def _free_image(self, image: PublicationImage) -> None:
        self.images.remove(image)
        self._admission.release(image.source_address, image.term_length)
        for link in self.subscriptions:
            counter_id = link.linked.pop(image, None)
            if counter_id is not None:
                self._counters.free(counter_id)
        if not image.close():
            self._system_counters.get(SystemCounter.FREE_FAILS).increment_ordered()
        self._close_endpoint_if_unused(image.endpoint)

    def close(self) -> None:
        """The driver is stopping (agents stopped): unmap every log, close every socket."""
        self._allocator.close()
        for image in self.images:
            image.log.close()
        for endpoint in self.endpoints.values():
            endpoint.transport.close()
        self.images.clear()
        self.subscriptions.clear()
        self.endpoints.clear()
        self._closing_endpoints.clear()
