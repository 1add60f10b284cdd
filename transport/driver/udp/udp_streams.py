"""``UdpStreams``: the conductor's ``aeron:udp`` media, the sibling of ``IpcStreams``.

It owns the two network agents, the :class:`~transport.driver.udp.sender.Sender` and the
:class:`~transport.driver.udp.receiver.Receiver` (the media driver runs them on threads as its
threading mode says), and the conductor's side of UDP streams:
:class:`~transport.driver.udp.udp_publications.UdpPublications` (send endpoints, network
publications) and :class:`~transport.driver.udp.udp_subscriptions.UdpSubscriptions` (receive
endpoints, subscriptions, images). The conductor calls the same methods as on ``IpcStreams``
(``add_publication``, ``add_subscription``, ``remove_subscription``,
``remove_client_subscriptions``, ``on_time_event``, ``close``) plus :meth:`do_work` on every
duty cycle (the receiver's image requests and the publication limits).
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.aeron_client import AeronClient
from aeromq.transport.driver.client_proxy import ClientProxy
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.log_storage import LogStorage
from aeromq.transport.driver.session_ids import SessionIdAllocator
from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.udp.network_proxies import ReceiverProxy, SenderProxy
from aeromq.transport.driver.udp.network_publication import NetworkPublication
from aeromq.transport.driver.udp.network_subscription_link import NetworkSubscriptionLink
from aeromq.transport.driver.udp.receiver import Receiver
from aeromq.transport.driver.udp.sender import Sender
from aeromq.transport.driver.udp.udp_publications import UdpPublications
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.driver.udp.udp_subscriptions import UdpSubscriptions
from aeromq.transport.driver.uri_params import PublicationParams, SubscriptionParams

__all__ = ["UdpStreams"]


class UdpStreams:
    """The UDP side of the conductor (see module)."""

    def __init__(
        self,
        context: MediaDriverContext,
        settings: UdpSettings,
        counters: CountersManager,
        system_counters: SystemCounters,
        client_proxy: ClientProxy,
        session_ids: SessionIdAllocator,
        next_correlation_id: Callable[[], int],
        on_error: Callable[[BaseException], object],
        storage: LogStorage | None = None,
    ) -> None:
        self.settings = settings
        storage = storage if storage is not None else LogStorage()
        threshold_ns = context.conductor_cycle_threshold_ns
        self.sender = Sender(
            settings=settings,
            nano_clock=context.nano_clock,
            bytes_sent=system_counters.get(SystemCounter.BYTES_SENT),
            max_cycle_time=system_counters.get(SystemCounter.SENDER_MAX_CYCLE_TIME),
            cycle_time_threshold_exceeded=system_counters.get(
                SystemCounter.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED
            ),
            cycle_threshold_ns=threshold_ns,
        )
        self.receiver = Receiver(
            nano_clock=context.nano_clock,
            bytes_received=system_counters.get(SystemCounter.BYTES_RECEIVED),
            max_cycle_time=system_counters.get(SystemCounter.RECEIVER_MAX_CYCLE_TIME),
            cycle_time_threshold_exceeded=system_counters.get(
                SystemCounter.RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED
            ),
            cycle_threshold_ns=threshold_ns,
        )
        self.publications = UdpPublications(
            context,
            settings,
            counters,
            system_counters,
            client_proxy,
            session_ids,
            SenderProxy(self.sender),
            on_error,
            storage,
        )
        self.subscriptions = UdpSubscriptions(
            context,
            settings,
            counters,
            system_counters,
            client_proxy,
            ReceiverProxy(self.receiver),
            next_correlation_id,
            on_error,
            storage,
        )

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
        """ADD_PUBLICATION on ``aeron:udp``: find or create the network publication.

        Opens the send endpoint if it is new, links the publication to the client and answers
        ON_PUBLICATION_READY.
        """
        return self.publications.add_publication(
            client, correlation_id, stream_id, channel, params, is_exclusive, now_ns
        )

    def add_subscription(
        self,
        client_id: int,
        registration_id: int,
        stream_id: int,
        channel: str,
        params: SubscriptionParams,
        now_ns: int,
    ) -> NetworkSubscriptionLink:
        """ADD_SUBSCRIPTION on ``aeron:udp``: register it on its receive endpoint.

        Tells the receiver of the stream interest, answers ON_SUBSCRIPTION_READY and links it
        to the images it matches.
        """
        return self.subscriptions.add_subscription(
            client_id, registration_id, stream_id, channel, params, now_ns
        )

    def remove_subscription(self, registration_id: int) -> bool:
        """Unlink and forget the subscription; False if there is none with that id."""
        return self.subscriptions.remove_subscription(registration_id)

    def remove_client_subscriptions(self, client_id: int) -> None:
        """The client is gone: unlink and forget all its subscriptions."""
        self.subscriptions.remove_client_subscriptions(client_id)

    def do_work(self, now_ns: int) -> int:
        """The conductor's per-cycle UDP work: image requests (the work done), then publication
        limits (not work: they only free publishers, ``conductor``'s step 5)."""
        work_count = self.subscriptions.do_work(now_ns)
        self.publications.update_publisher_limits()
        return work_count

    def left_work(self) -> bool:
        """Whether an image request waits for the conductor's next cycle, or a log is being
        made for one (nothing ends the driver's park for either). Conductor thread."""
        return self.subscriptions.left_work()

    def update_publisher_limits(self) -> int:
        """Move every network publication's pub-lmt; returns how many moved."""
        return self.publications.update_publisher_limits()

    def on_time_event(self, now_ns: int) -> None:
        """The timer's UDP work: publications' and images' life cycles, endpoints closed."""
        self.publications.on_time_event(now_ns)
        self.subscriptions.on_time_event(now_ns)

    def close(self) -> None:
        """The driver is stopping, its agents stopped: unmap the logs, close the sockets."""
        self.publications.close()
        self.subscriptions.close()
