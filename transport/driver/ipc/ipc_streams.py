"""``IpcStreams``: the conductor's IPC publications and subscriptions, and how they meet.

Aeron's ``aeron_driver_conductor_get_or_add_ipc_publication`` and its neighbours, for the
``aeron:ipc`` media (UDP gets a sibling with the same methods in issue 4):

- ADD_PUBLICATION joins the ACTIVE concurrent publication of the stream if there is one (its
  reference count goes up; the channel's explicit ``session-id``, ``mtu``, ``term-length`` and
  position must agree with it), otherwise creates one; ADD_EXCLUSIVE_PUBLICATION always creates
  one. A new one gets its own log file ``<aeron_dir>/publications/<registration id>.logbuffer``,
  a session id (allocated, or pinned by ``session-id``: pinning an id a live publication of the
  stream already has is an error unless joining that concurrent publication), an initial term
  id (random, or ``init-term-id`` with the tail set from ``term-id`` / ``term-offset``), and its
  pub-pos and pub-lmt counters.
- Every IPC subscription of the stream (and session, if pinned) is linked to every publication
  that accepts subscribers, whichever came first: a sub-pos counter at the publication's join
  position and an ON_AVAILABLE_IMAGE whose correlation id is the publication's registration id.
- REMOVE_SUBSCRIPTION (or the client's end) unlinks it: the sub-pos counters are freed, so it no
  longer holds publishers back.
- When a publication has lingered to its end of life, its counters are freed and its file
  deleted.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable

from aeromq.transport._errors import IllegalStateError
from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.concurrent.position import Position
from aeromq.transport.driver.aeron_client import AeronClient, PublicationLink
from aeromq.transport.driver.client_proxy import IPC_SOURCE_IDENTITY, ClientProxy
from aeromq.transport.driver.command_error import command_error
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.ipc.ipc_publication import IpcPublication, PublicationState
from aeromq.transport.driver.log_factory import (
    check_storage,
    create_log,
    initialise_log_metadata,
    producer_window_length,
)
from aeromq.transport.driver.session_ids import SessionIdAllocator, wrap_int32
from aeromq.transport.driver.stream_counters import (
    allocate_publisher_limit,
    allocate_publisher_position,
)
from aeromq.transport.driver.subscriber_position import SubscriberPosition
from aeromq.transport.driver.subscription_link import SubscriptionLink
from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.uri_params import (
    PublicationParams,
    SubscriptionParams,
    confirm_publication_match,
)
from aeromq.transport.logbuffer.log_buffer_descriptor import compute_log_length, compute_position

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
    ) -> None:
        self._context = context
        self._on_error = on_error
        self._counters = counters
        self._system_counters = system_counters
        self._proxy = client_proxy
        self._session_ids = session_ids
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
        shared: IpcPublication | None = None
        session_ids_in_use: set[int] = set()
        for publication in self.publications:
            if publication.stream_id != stream_id:
                continue
            if (
                shared is None
                and not is_exclusive
                and not publication.is_exclusive
                and publication.state is PublicationState.ACTIVE
            ):
                shared = publication
            if publication.state in (PublicationState.ACTIVE, PublicationState.DRAINING):
                session_ids_in_use.add(publication.session_id)

        pinned = params.session_id
        if (
            pinned is not None
            and pinned in session_ids_in_use
            and (shared is None or shared.session_id != pinned)
        ):
            raise command_error(
                ErrorCode.GENERIC_ERROR,
                "specified session-id is already in exclusive use",
                channel=channel,
                stream_id=stream_id,
                session_id=params.session_id,
            )
        if shared is not None:
            confirm_publication_match(shared, params, channel)
            shared.incref()
            return shared
        return self._create(
            client,
            correlation_id,
            stream_id,
            channel,
            params,
            is_exclusive,
            session_ids_in_use,
            now_ns,
        )

    def _create(
        self,
        client: AeronClient,
        registration_id: int,
        stream_id: int,
        channel: str,
        params: PublicationParams,
        is_exclusive: bool,
        session_ids_in_use: set[int],
        now_ns: int,
    ) -> IpcPublication:
        context = self._context
        if context.perform_storage_checks:
            check_storage(
                context.publications_dir(),
                compute_log_length(params.term_length, context.file_page_size),
            )
        if params.session_id is not None:
            session_id = params.session_id
        else:
            session_id = self._session_ids.allocate(session_ids_in_use)
        if params.initial_term_id is not None:
            initial_term_id = params.initial_term_id
            term_id: int | None = params.term_id
        else:
            initial_term_id = wrap_int32(secrets.randbits(32))
            term_id = None
        counters = self._counters
        pub_pos_id = allocate_publisher_position(
            counters,
            registration_id,
            session_id,
            stream_id,
            channel,
            client.client_id,
            is_exclusive=is_exclusive,
        )
        try:
            pub_lmt_id = allocate_publisher_limit(
                counters, registration_id, session_id, stream_id, channel, client.client_id
            )
        except IllegalStateError:
            counters.free(pub_pos_id)
            raise
        pub_pos = Position(counters.values_buffer, pub_pos_id, counters)
        pub_lmt = Position(counters.values_buffer, pub_lmt_id, counters)
        if term_id is not None:
            position = compute_position(
                term_id,
                params.term_offset,
                params.term_length.bit_length() - 1,
                initial_term_id,
            )
            pub_pos.set_ordered(position)
            pub_lmt.set_ordered(position)
        path = os.path.join(context.publications_dir(), f"{registration_id}.logbuffer")
        try:
            log = create_log(path, params.term_length, context.file_page_size, params.is_sparse)
        except BaseException:
            pub_pos.close()
            pub_lmt.close()
            raise
        window = producer_window_length(
            context.ipc_publication_term_window_length, params.term_length
        )
        initialise_log_metadata(
            log,
            registration_id=registration_id,
            session_id=session_id,
            stream_id=stream_id,
            initial_term_id=initial_term_id,
            term_id=term_id,
            term_offset=params.term_offset,
            mtu_length=params.mtu_length,
            term_window_length=window,
            linger_timeout_ns=params.linger_timeout_ns,
            untethered_window_limit_timeout_ns=context.untethered_window_limit_timeout_ns,
            untethered_resting_timeout_ns=context.untethered_resting_timeout_ns,
            is_exclusive=is_exclusive,
            is_sparse=params.is_sparse,
            signal_eos=params.signal_eos,
            tether=context.tether_subscriptions,
            spies_simulate_connection=params.spies_simulate_connection,
            entity_tag=params.entity_tag if params.entity_tag is not None else -1,
            response_correlation_id=params.response_correlation_id,
        )
        publication = IpcPublication(
            log=log,
            registration_id=registration_id,
            session_id=session_id,
            stream_id=stream_id,
            channel=channel,
            initial_term_id=initial_term_id,
            starting_term_id=term_id if term_id is not None else initial_term_id,
            starting_term_offset=params.term_offset,
            is_exclusive=is_exclusive,
            pub_pos=pub_pos,
            pub_lmt=pub_lmt,
            term_window_length=window,
            unblock_timeout_ns=context.publication_unblock_timeout_ns,
            linger_timeout_ns=params.linger_timeout_ns,
            untethered_window_limit_timeout_ns=context.untethered_window_limit_timeout_ns,
            untethered_resting_timeout_ns=context.untethered_resting_timeout_ns,
            unblocked_publications=self._system_counters.get(SystemCounter.UNBLOCKED_PUBLICATIONS),
            listener=self,
            now_ns=now_ns,
        )
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
