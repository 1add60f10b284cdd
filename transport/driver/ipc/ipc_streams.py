"""``IpcStreams``: the conductor's IPC publications and subscriptions, and how they meet.

Aeron's ``aeron_driver_conductor_get_or_add_ipc_publication`` and its neighbours, for the
``aeron:ipc`` media (``transport/driver/udp/udp_streams.py`` is its UDP sibling, with the same
methods):

- ADD_PUBLICATION joins the active concurrent publication of the stream, or a new one is set up
  (``transport/driver/publication_factory.py`` holds the rules, shared with UDP: session ids,
  initial term ids, pub-pos and pub-lmt, the log file
  ``<aeron_dir>/publications/<registration id>.logbuffer``); a publication holds its session id
  for the stream while ACTIVE or DRAINING. The window is the context's IPC one.
- Every IPC subscription of the stream (and session, if pinned) is linked to every publication
  that accepts subscribers, whichever came first: a sub-pos counter at the publication's join
  position and an ON_AVAILABLE_IMAGE whose correlation id is the publication's registration id.
- REMOVE_SUBSCRIPTION (or the client's end) unlinks it: the sub-pos counters are freed, so it no
  longer holds publishers back.
- When a publication has lingered to its end of life, its counters are freed and its file
  deleted.
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.aeron_client import AeronClient, PublicationLink
from aeromq.transport.driver.client_proxy import IPC_SOURCE_IDENTITY, ClientProxy
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.ipc.ipc_publication import IpcPublication
from aeromq.transport.driver.log_storage import LogStorage
from aeromq.transport.driver.publication_factory import PublicationFactory
from aeromq.transport.driver.session_ids import SessionIdAllocator
from aeromq.transport.driver.subscriber_position import SubscriberPosition
from aeromq.transport.driver.subscription_link import SubscriptionLink
from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.uri_params import PublicationParams, SubscriptionParams

__all__ = ["IPC_CHANNEL", "IpcStreams"]

IPC_CHANNEL = "aeron:ipc"


class IpcStreams:
    """The IPC side of the conductor (see module). Conductor thread only."""

    def __init__(
        self,
        context: MediaDriverContext,
        counters: CountersManager,
        system_counters: SystemCounters,
        client_proxy: ClientProxy,
        session_ids: SessionIdAllocator,
        on_error: Callable[[BaseException], object],
        storage: LogStorage | None = None,
    ) -> None:
        self._context = context
        self._on_error = on_error
        self._counters = counters
        self._system_counters = system_counters
        self._proxy = client_proxy
        self._factory = PublicationFactory(context, counters, session_ids, storage)
        self.publications: list[IpcPublication] = []
        self.subscriptions: list[SubscriptionLink[IpcPublication]] = []

    # ----------------------------------------------------------------------------------------
    # Publications

    def add_publication(
        self,
        client: AeronClient,
        correlation_id: int,
        stream_id: int,
        channel: str,
        params: PublicationParams,
        is_exclusive: bool,
        now_ns: int,
    ) -> IpcPublication:
        """Find or create the publication, link it to the client, answer, link subscribers."""
        publication = self._find_or_create(
            client, correlation_id, stream_id, channel, params, is_exclusive, now_ns
        )
        client.publication_links.append(PublicationLink(correlation_id, publication))
        self._proxy.on_publication_ready(
            correlation_id,
            publication.registration_id,
            publication.session_id,
            publication.stream_id,
            publication.pub_lmt.id,
            publication.log_file_name,
            is_exclusive,
        )
        for link in self.subscriptions:
            if link.matches(stream_id, publication.session_id) and not link.is_linked(publication):
                self._link(link, publication, now_ns)
        return publication

    def _find_or_create(
        self,
        client: AeronClient,
        correlation_id: int,
        stream_id: int,
        channel: str,
        params: PublicationParams,
        is_exclusive: bool,
        now_ns: int,
    ) -> IpcPublication:
        factory = self._factory
        shared, session_ids_in_use = factory.find_shared(
            [p for p in self.publications if p.stream_id == stream_id],
            stream_id,
            channel,
            params,
            is_exclusive,
        )
        if shared is not None:
            return shared
        new = factory.create(
            client.client_id,
            correlation_id,
            stream_id,
            channel,
            params,
            is_exclusive,
            session_ids_in_use,
            window_length=self._context.ipc_publication_term_window_length,
            spies_simulate_connection=params.spies_simulate_connection,
        )
        context = self._context
        publication = IpcPublication(
            **new.args,
            unblock_timeout_ns=context.publication_unblock_timeout_ns,
            linger_timeout_ns=params.linger_timeout_ns,
            untethered_window_limit_timeout_ns=context.untethered_window_limit_timeout_ns,
            untethered_resting_timeout_ns=context.untethered_resting_timeout_ns,
            unblocked_publications=self._system_counters.get(SystemCounter.UNBLOCKED_PUBLICATIONS),
            listener=self,
            now_ns=now_ns,
        )
        factory.storage.track(publication)
        self.publications.append(publication)
        return publication

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
    ) -> SubscriptionLink[IpcPublication]:
        """Register the subscription, answer, and link it to the publications it matches."""
        link = SubscriptionLink[IpcPublication](
            registration_id, client_id, stream_id, channel, params
        )
        self.subscriptions.append(link)
        self._proxy.on_subscription_ready(registration_id)
        for publication in self.publications:
            if link.matches(publication.stream_id, publication.session_id) and (
                publication.is_accepting_subscriptions()
            ):
                self._link(link, publication, now_ns)
        return link

    def remove_subscription(self, registration_id: int) -> bool:
        """Unlink and forget the subscription; False if there is none with that id."""
        for index, link in enumerate(self.subscriptions):
            if link.registration_id == registration_id:
                del self.subscriptions[index]
                link.unlink_all(self._counters)
                return True
        return False

    def remove_client_subscriptions(self, client_id: int) -> None:
        """The client is gone: unlink and forget all its subscriptions."""
        for link in [link for link in self.subscriptions if link.client_id == client_id]:
            self.subscriptions.remove(link)
            link.unlink_all(self._counters)

    def _link(
        self, link: SubscriptionLink[IpcPublication], publication: IpcPublication, now_ns: int
    ) -> None:
        subscriber = link.link(
            self._counters,
            publication,
            publication.join_position(),
            publication.registration_id,
            now_ns,
        )
        self.on_image_available(publication, subscriber)

    # ----------------------------------------------------------------------------------------
    # ImageListener

    def on_image_unavailable(self, publication: IpcPublication, subscription_id: int) -> None:
        self._proxy.on_unavailable_image(
            publication.registration_id, subscription_id, publication.stream_id, IPC_CHANNEL
        )

    def on_image_available(
        self, publication: IpcPublication, subscriber: SubscriberPosition
    ) -> None:
        self._proxy.on_available_image(
            publication.registration_id,
            publication.session_id,
            publication.stream_id,
            subscriber.subscription_registration_id,
            subscriber.counter_id,
            publication.log_file_name,
            IPC_SOURCE_IDENTITY,
        )

    # ----------------------------------------------------------------------------------------
    # Duty cycle

    def update_publisher_limits(self) -> int:
        """Every publication's limit and cleaning (each guarded: one failing stops no other)."""
        work_count = 0
        for publication in self.publications:
            try:
                work_count += publication.update_publisher_limit()
            except Exception as error:
                self._on_error(error)
        return work_count

    def on_time_event(self, now_ns: int) -> None:
        """Each publication's timer work; those at their end of life are closed and dropped."""
        ended: list[IpcPublication] = []
        for publication in self.publications:
            try:
                publication.on_time_event(now_ns)
            except Exception as error:
                self._on_error(error)
            if publication.has_reached_end_of_life:
                ended.append(publication)
        for publication in ended:
            self.publications.remove(publication)
            for link in self.subscriptions:
                link.linked.pop(publication, None)
            if not publication.close(self._counters):
                self._system_counters.get(SystemCounter.FREE_FAILS).increment_ordered()

    def close(self) -> None:
        """Unmap every log (the driver is stopping); the files stay for the dir cleanup."""
        for publication in self.publications:
            publication.log.close()
        self.publications.clear()
        self.subscriptions.clear()
