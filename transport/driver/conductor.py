"""``DriverConductor``: the media driver's control agent (Aeron's ``DriverConductor``).

It owns the cnc.dat regions: it drains client commands from the to-driver ring buffer
(:class:`~transport.driver.command_adapter.ClientCommandAdapter`), answers on the to-clients
broadcast (:class:`~transport.driver.client_proxy.ClientProxy`), allocates every counter, and
records errors in the distinct error log. Its duty cycle (``do_work``):

1. measure the cycle time (``Conductor max cycle time`` and the threshold-exceeded count);
2. handle up to ten commands;
3. stamp the to-driver buffer's consumer heartbeat with the epoch ms when it changed: clients
   judge the driver alive by it (the wall clock is read once a millisecond of the monotonic
   clock at most, not every cycle: the stamp is at most a millisecond late, against a driver
   timeout of seconds);
4. after a stall of its own (a gap between cycles of more than half the client liveness timeout
   and two timer intervals: the process stopped or starved), a fresh liveness timeout for every
   client and for a half-written command, judged from the stall's end: the driver saw nothing
   meanwhile, and clients stopped with it (a broker's, with its embedded driver) could not
   stamp their heartbeats either; their own conductors carry on as long as the driver holds
   them (:mod:`~transport.client.client_liveness`);
5. every ``timer_interval_ns``: client liveness (a client silent past the liveness timeout is
   removed with all it holds, ON_CLIENT_TIMEOUT), publication timers (pub-pos, unblocking, end of
   stream, linger), and the unblocking of a command a dead client left half-written. Unlike
   Aeron's, the timer does not count as work: it is housekeeping that predicts no more work, and
   counting it woke an idle driver's backoff out of its deep park every second (about 20 more
   wake-ups a second, see :mod:`~transport.concurrent.idle_strategy`); what the timer changes
   (a publication closed, a client removed) is itself work for the next cycles;
6. move every publication's limit. As in Aeron, a limit moved is work: a publisher held at its
   limit (in another process, often) learns of the space only from this thread, so the thread
   keeps its cycles going while a back-pressured stream drains, rather than parking with the
   publisher waiting for its next wake. (Not counting it saved one cycle, found empty, after
   each send of a broker group's member, and no measurable rate: kept out.)
7. after a cycle that transmitted to the clients, ring :attr:`DriverConductor.notice_bells`:
   the doorbells of clients in this process whose conductors sleep until rung (a broker's own
   client learns of a new client's image at once, not at the end of a long park).

:meth:`DriverConductor.left_work` says whether a cycle that worked left work that ends no park
of the driver's thread (``MediaDriver``'s settled cycles): the thread parks right after a cycle
that left none, rather than running an empty one first.

:meth:`DriverConductor.idle_for_ns` says how long the driver's thread may park when it streams
nothing (``MediaDriverContext.park_until_due``): until the next timer, which is all it owes then.

Streams are handled per media (:class:`MediaStreams`): ``aeron:ipc`` by
:class:`~transport.driver.ipc.ipc_streams.IpcStreams`, ``aeron:udp`` by
:class:`~transport.driver.udp.udp_streams.UdpStreams`, which also owns the sender and receiver
agents (the media driver runs them) and does its per-cycle work in step 6 (the receiver's image
requests, the network publications' limits).

A TERMINATE_DRIVER whose token the context's validator accepts calls the termination hook and
ends the agent (``AgentTerminationError``) after the current cycle.
"""

from __future__ import annotations

from typing import Protocol

from aeromq.transport._errors import AgentTerminationError, ConfigurationError, TransportStateError
from aeromq.transport.cnc import CncFile
from aeromq.transport.command import (
    REMOVE_PUBLICATION_FLAG_REVOKE,
    CorrelatedMessage,
    CounterMessage,
    ErrorCode,
    PublicationMessage,
    RemoveMessage,
    RemovePublicationMessage,
    SubscriptionMessage,
    TerminateDriverMessage,
)
from aeromq.transport.concurrent import ManyToOneRingBuffer
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.broadcast_transmitter import BroadcastTransmitter
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.concurrent.distinct_error_log import DistinctErrorLog
from aeromq.transport.concurrent.doorbell import Ringable
from aeromq.transport.driver.aeron_client import AeronClient, CounterLink
from aeromq.transport.driver.client_proxy import ClientProxy
from aeromq.transport.driver.command_adapter import COMMAND_DRAIN_LIMIT, ClientCommandAdapter
from aeromq.transport.driver.command_error import command_error
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.duty_cycle_tracker import DutyCycleStallTracker
from aeromq.transport.driver.ipc.ipc_streams import IpcStreams
from aeromq.transport.driver.log_storage import LogStorage
from aeromq.transport.driver.session_ids import SessionIdAllocator
from aeromq.transport.driver.stream_counters import allocate_client_heartbeat
from aeromq.transport.driver.system_counters import NULL_VALUE, SystemCounter, SystemCounters
from aeromq.transport.driver.udp.udp_streams import UdpStreams
from aeromq.transport.driver.uri_params import (
    IPC_MEDIA,
    UDP_MEDIA,
    PublicationParams,
    SubscriptionParams,
    parse_channel,
    publication_params,
    subscription_params,
)

__all__ = ["DriverConductor", "MediaStreams"]

_NS_PER_MS = 1_000_000


class MediaStreams(Protocol):
    """What the conductor asks of a media's streams (IPC and UDP)."""

    def add_publication(
        self,
        client: AeronClient,
        correlation_id: int,
        stream_id: int,
        channel: str,
        params: PublicationParams,
        is_exclusive: bool,
        now_ns: int,
    ) -> object: ...

    def add_subscription(
        self,
        client_id: int,
        registration_id: int,
        stream_id: int,
        channel: str,
        params: SubscriptionParams,
        now_ns: int,
    ) -> object: ...

    def remove_subscription(self, registration_id: int) -> bool: ...

    def remove_client_subscriptions(self, client_id: int) -> None: ...

    def on_time_event(self, now_ns: int) -> None: ...

    def close(self) -> None: ...


class DriverConductor:
    """The conductor agent over a freshly created ``cnc`` (see module)."""

    def __init__(self, context: MediaDriverContext, cnc: CncFile) -> None:
        self._context = context
        self._epoch_clock = context.epoch_clock
        self._nano_clock = context.nano_clock
        self.to_driver = ManyToOneRingBuffer(cnc.to_driver_buffer)
        self.counters = CountersManager(
            cnc.counters_metadata_buffer,
            cnc.counters_values_buffer,
            epoch_clock=context.epoch_clock,
            free_to_reuse_timeout_ms=context.counter_free_to_reuse_timeout_ms,
        )
        self.system_counters = SystemCounters(
            self.counters, context.threading_mode.value, context.conductor_cycle_threshold_ns
        )
        self.error_log = DistinctErrorLog(cnc.error_log_buffer, context.epoch_clock)
        self.client_proxy = ClientProxy(BroadcastTransmitter(cnc.to_clients_buffer))
        self.errors_counter: AtomicCounter = self.system_counters.get(SystemCounter.ERRORS)
        self._client_timeouts = self.system_counters.get(SystemCounter.CLIENT_TIMEOUTS)
        self._unblocked_commands = self.system_counters.get(SystemCounter.UNBLOCKED_COMMANDS)
        self._publications_revoked = self.system_counters.get(SystemCounter.PUBLICATIONS_REVOKED)
        session_ids = SessionIdAllocator(
            context.publication_reserved_session_id_low,
            context.publication_reserved_session_id_high,
        )
        self.log_storage = LogStorage()
        """Every live log of both media, for the storage checks (``log_storage.py``)."""
        self.ipc = IpcStreams(
            context,
            self.counters,
            self.system_counters,
            self.client_proxy,
            session_ids,
            self.on_agent_error,
            self.log_storage,
        )
        self.udp = UdpStreams(
            context,
            context.udp,
            self.counters,
            self.system_counters,
            self.client_proxy,
            session_ids,
            self.to_driver.next_correlation_id,
            self.on_agent_error,
            self.log_storage,
        )
        self._streams: dict[str, MediaStreams] = {IPC_MEDIA: self.ipc, UDP_MEDIA: self.udp}
        self.clients: dict[int, AeronClient] = {}
        self._adapter = ClientCommandAdapter(
            self.to_driver, self, self.client_proxy, self.errors_counter, self.record_error
        )
        now_ns = self._nano_clock.time_ns()
        self._now_ns = now_ns
        self._duty_cycle = DutyCycleStallTracker(
            self.system_counters.get(SystemCounter.CONDUCTOR_MAX_CYCLE_TIME),
            self.system_counters.get(SystemCounter.CONDUCTOR_CYCLE_TIME_THRESHOLD_EXCEEDED),
            context.conductor_cycle_threshold_ns,
            now_ns,
        )
        self._timer_deadline_ns = now_ns
        self._stall_ns = max(context.client_liveness_timeout_ns // 2, 2 * context.timer_interval_ns)
        """A gap between two cycles longer than this is a stall of the driver (module, 4)."""
        self.stalls = 0
        """Stalls seen (module, 4)."""
        self._heartbeat_ms = self._epoch_clock.time_ms()
        self.to_driver.consumer_heartbeat_time = self._heartbeat_ms
        self._heartbeat_check_ns = now_ns + _NS_PER_MS
        """The monotonic time from which the next cycle reads the wall clock (module, 3)."""
        self._receive_commands = self._adapter.receive_commands()
        self._stamp_heartbeat = self.to_driver.heartbeat_stamper()
        self._last_command_position = self.to_driver.consumer_position()
        self._time_of_last_command_position_change_ns = now_ns
        self._termination_requested = False
        self._closed = False
        self.notice_bells: list[Ringable] = []
        """Rung after each cycle that transmitted to the clients (see module); append only
        before the agent starts, or from its own thread."""
        self._notices_rung = 0
        self._left_work = False

    # ----------------------------------------------------------------------------------------
    # Agent

    @property
    def role_name(self) -> str:
        """``driver-conductor``: the conductor thread's name."""
        return "driver-conductor"

    def on_start(self) -> None:
        """Nothing to do: the constructor did the set-up."""
        return None

    def do_work(self) -> int:
        """One duty cycle (the module's steps 1-7); returns the work done.

        Raises ``AgentTerminationError`` after the cycle in which a TERMINATE_DRIVER was
        accepted.
        """
        now_ns = self._nano_clock.time_ns()
        stalled = now_ns - self._now_ns > self._stall_ns
        self._now_ns = now_ns
        self._duty_cycle.measure_and_update(now_ns)

        commands = self._receive_commands()
        if now_ns >= self._heartbeat_check_ns:  # the wall clock read once a ms at most
            self._heartbeat_check_ns = now_ns + _NS_PER_MS
            now_ms = self._epoch_clock.time_ms()
            if now_ms != self._heartbeat_ms:
                self._heartbeat_ms = now_ms
                self._stamp_heartbeat(now_ms)
        if stalled:
            self._after_stall(now_ns, self._epoch_clock.time_ms())
        if now_ns >= self._timer_deadline_ns:
            self._timer_deadline_ns = now_ns + self._context.timer_interval_ns
            self._on_timer(now_ns, self._epoch_clock.time_ms())
        limits_moved = self.ipc.update_publisher_limits()
        # more commands may wait (their wakes drained), or a publisher held at its old limit
        self._left_work = commands >= COMMAND_DRAIN_LIMIT or limits_moved > 0
        work_count = commands + limits_moved + self.udp.do_work(now_ns)
        transmitted = self.client_proxy.transmitted
        if transmitted != self._notices_rung:
            self._notices_rung = transmitted
            for bell in self.notice_bells:
                bell.ring()
        if self._termination_requested:
            raise AgentTerminationError("media driver terminated by TERMINATE_DRIVER")
        return work_count

    def left_work(self) -> bool:
        """Whether the last duty cycle left work that ends no park (see module): commands past
        the cycle's ``COMMAND_DRAIN_LIMIT`` (the wakes their clients sent may be drained), a
        publication's limit moved (its publisher may be held at the old one, and it learns of
        more space only from this thread as its subscribers read on), an image request the
        receiver queued after this agent's turn, a log still being made. Caller: the thread
        that runs the conductor with the network agents (``SHARED``), after a cycle that worked."""
        return self._left_work or self.udp.left_work()

    def idle_for_ns(self) -> int:
        """How long the driver's thread may park now (see module): until the next timer while
        the driver streams nothing (no publication of either media, no image), else 0. Caller:
        the thread that runs the conductor, the sender and the receiver (``SHARED``)."""
        udp = self.udp
        if self.ipc.publications or udp.sender.publications or udp.receiver.images:
            return 0
        return max(0, self._timer_deadline_ns - self._nano_clock.time_ns())

    def on_close(self) -> None:
        """Stop: unmap the logs and mark the heartbeat dead (-1) so clients notice at once."""
        if self._closed:
            return
        self._closed = True
        self.ipc.close()
        self.udp.close()
        self.to_driver.consumer_heartbeat_time = NULL_VALUE

    def on_agent_error(self, error: BaseException) -> None:
        """An error the conductor caught itself: counted on ``Errors`` and recorded."""
        self.errors_counter.increment_ordered()
        self.record_error(error)

    def record_error(self, error: BaseException) -> None:
        """Record an error in the cnc error log (the runner's error handler too)."""
        if isinstance(error, AgentTerminationError):
            return
        self.error_log.record(error)

    # ----------------------------------------------------------------------------------------
    # Timer

    def _after_stall(self, now_ns: int, now_ms: int) -> None:
        """The driver did not run for a while (module, 4): judge clients from now on."""
        self.stalls += 1
        for client in self.clients.values():
            client.extend_liveness(now_ms)
        self._time_of_last_command_position_change_ns = now_ns

    def _on_timer(self, now_ns: int, now_ms: int) -> None:
        for client in list(self.clients.values()):
            if client.check_liveness(now_ms):
                try:
                    self._on_client_end_of_life(client)
                except Exception as error:
                    self.on_agent_error(error)
        for streams in self._streams.values():
            try:
                streams.on_time_event(now_ns)
            except Exception as error:
                self.on_agent_error(error)
        self._check_for_blocked_commands(now_ns)

    def _on_client_end_of_life(self, client: AeronClient) -> None:
        del self.clients[client.client_id]
        if not client.closed_by_command:
            self._client_timeouts.increment_ordered()
            self.client_proxy.on_client_timeout(client.client_id)
        self.client_proxy.on_unavailable_counter(client.client_id, client.heartbeat.id)
        for link in client.publication_links:
            link.publication.decref()
        for counter_link in client.counter_links:
            self.client_proxy.on_unavailable_counter(
                counter_link.registration_id, counter_link.counter_id
            )
            self.counters.free(counter_link.counter_id)
        for streams in self._streams.values():
            streams.remove_client_subscriptions(client.client_id)
        client.heartbeat.close()

    def _check_for_blocked_commands(self, now_ns: int) -> None:
        position = self.to_driver.consumer_position()
        if position != self._last_command_position:
            self._last_command_position = position
            self._time_of_last_command_position_change_ns = now_ns
        elif (
            self.to_driver.producer_position() > position
            and now_ns
            > self._time_of_last_command_position_change_ns
            + self._context.client_liveness_timeout_ns
            and self.to_driver.unblock()
        ):
            self._unblocked_commands.increment_ordered()

    # ----------------------------------------------------------------------------------------
    # Clients

    def _get_or_add_client(self, client_id: int) -> AeronClient:
        client = self.clients.get(client_id)
        if client is None:
            try:
                counter_id = allocate_client_heartbeat(self.counters, client_id)
            except TransportStateError as exc:
                raise command_error(
                    ErrorCode.GENERIC_ERROR, f"cannot add client ({exc})", client_id=client_id
                ) from exc
            heartbeat = AtomicCounter(self.counters.values_buffer, counter_id, self.counters)
            liveness_timeout_ms = max(1, self._context.client_liveness_timeout_ns // 1_000_000)
            client = AeronClient(
                client_id, heartbeat, liveness_timeout_ms, self._epoch_clock.time_ms()
            )
            self.clients[client_id] = client
            self.client_proxy.on_counter_ready(client_id, counter_id)
        return client

    # ----------------------------------------------------------------------------------------
    # Commands (CommandHandler)

    def on_add_publication(self, command: PublicationMessage, is_exclusive: bool) -> None:
        """ADD_PUBLICATION or ADD_EXCLUSIVE_PUBLICATION: find or create the publication.

        Caller: the command adapter. Registers the client if new, links the publication to it
        and answers ON_PUBLICATION_READY (or ON_EXCLUSIVE_PUBLICATION_READY); a refusal raises
        the error the adapter sends as ON_ERROR.
        """
        channel = command.channel
        uri = parse_channel(channel)
        streams = self._streams_for(uri.media, uri.is_spy, channel, subscription=False)
        params = publication_params(channel, uri, self._context)
        client = self._get_or_add_client(command.client_id)
        streams.add_publication(
            client,
            command.correlation_id,
            command.stream_id,
            channel,
            params,
            is_exclusive,
            self._now_ns,
        )

    def on_remove_publication(self, command: RemovePublicationMessage) -> None:
        """REMOVE_PUBLICATION: drop the client's link to the publication, revoking it if asked.

        The last link starts the publication's end of stream. Answers ON_OPERATION_SUCCESS;
        ``UNKNOWN_PUBLICATION`` if the client holds no such registration.
        """
        client = self.clients.get(command.client_id)
        if client is not None:
            for index, link in enumerate(client.publication_links):
                if link.registration_id == command.registration_id:
                    del client.publication_links[index]
                    if command.flags & REMOVE_PUBLICATION_FLAG_REVOKE:
                        link.publication.revoke()
                        self._publications_revoked.increment_ordered()
                    link.publication.decref()
                    self.client_proxy.on_operation_succeeded(command.correlation_id)
                    return
        raise command_error(
            ErrorCode.UNKNOWN_PUBLICATION,
            "unknown publication",
            client_id=command.client_id,
            registration_id=command.registration_id,
        )

    def on_add_subscription(self, command: SubscriptionMessage) -> None:
        """ADD_SUBSCRIPTION: register the subscription with its media and link it to its streams.

        Answers ON_SUBSCRIPTION_READY, then ON_AVAILABLE_IMAGE for each image it joins.
        """
        channel = command.channel
        uri = parse_channel(channel)
        streams = self._streams_for(uri.media, uri.is_spy, channel, subscription=True)
        params = subscription_params(channel, uri, self._context)
        self._get_or_add_client(command.client_id)
        streams.add_subscription(
            command.client_id,
            command.correlation_id,
            command.stream_id,
            channel,
            params,
            self._now_ns,
        )

    def on_remove_subscription(self, command: RemoveMessage) -> None:
        """REMOVE_SUBSCRIPTION: unlink the subscription from its images and forget it.

        Answers ON_OPERATION_SUCCESS; ``UNKNOWN_SUBSCRIPTION`` if no media holds it.
        """
        if not any(s.remove_subscription(command.registration_id) for s in self._streams.values()):
            raise command_error(
                ErrorCode.UNKNOWN_SUBSCRIPTION,
                "unknown subscription",
                client_id=command.client_id,
                registration_id=command.registration_id,
            )
        self.client_proxy.on_operation_succeeded(command.correlation_id)

    def on_client_keepalive(self, command: CorrelatedMessage) -> None:
        """CLIENT_KEEPALIVE: note the client alive now (epoch ms); unknown clients are ignored."""
        client = self.clients.get(command.client_id)
        if client is not None:
            client.on_keepalive(self._epoch_clock.time_ms())

    def on_add_counter(self, command: CounterMessage) -> None:
        """ADD_COUNTER: allocate a counter owned by the client, linked to it.

        Answers ON_COUNTER_READY with the counter id; ``GENERIC_ERROR`` when the counters are
        full or the key is too long (a long label is cut).
        """
        client = self._get_or_add_client(command.client_id)
        try:
            counter_id = self.counters.allocate(
                command.label,
                command.type_id,
                command.key,
                registration_id=command.correlation_id,
                owner_id=command.client_id,
            )
        except (ConfigurationError, TransportStateError) as exc:
            raise command_error(
                ErrorCode.GENERIC_ERROR,
                f"cannot add counter ({exc})",
                type_id=command.type_id,
                key_length=len(command.key),
            ) from exc
        client.counter_links.append(CounterLink(command.correlation_id, counter_id))
        self.client_proxy.on_counter_ready(command.correlation_id, counter_id)

    def on_remove_counter(self, command: RemoveMessage) -> None:
        """REMOVE_COUNTER: free a counter the client added.

        Answers ON_OPERATION_SUCCESS and ON_UNAVAILABLE_COUNTER; ``UNKNOWN_COUNTER`` if the
        client holds no such registration.
        """
        client = self.clients.get(command.client_id)
        if client is not None:
            for index, link in enumerate(client.counter_links):
                if link.registration_id == command.registration_id:
                    del client.counter_links[index]
                    self.client_proxy.on_operation_succeeded(command.correlation_id)
                    self.client_proxy.on_unavailable_counter(link.registration_id, link.counter_id)
                    self.counters.free(link.counter_id)
                    return
        raise command_error(
            ErrorCode.UNKNOWN_COUNTER,
            "unknown counter",
            client_id=command.client_id,
            registration_id=command.registration_id,
        )

    def on_client_close(self, command: CorrelatedMessage) -> None:
        """CLIENT_CLOSE: mark the client closed.

        The next timer removes it with everything it holds, without an ON_CLIENT_TIMEOUT.
        """
        client = self.clients.get(command.client_id)
        if client is not None:
            client.on_close()

    def on_terminate_driver(self, command: TerminateDriverMessage) -> None:
        """TERMINATE_DRIVER: if the context's validator accepts the token, stop.

        Calls the termination hook now; the agent ends after this cycle. A refused token is
        ignored, without an answer.
        """
        if self._context.termination_validator(command.token):
            self._termination_requested = True
            hook = self._context.termination_hook
            if hook is not None:
                hook()

    # ----------------------------------------------------------------------------------------
    # Validation

    def _streams_for(
        self, media: str, is_spy: bool, channel: str, *, subscription: bool
    ) -> MediaStreams:
        if is_spy:
            raise command_error(
                ErrorCode.NOT_SUPPORTED,
                "spy subscriptions watch UDP publications, not supported yet"
                if subscription
                else "a publication channel cannot be a spy",
                channel=channel,
            )
        streams = self._streams.get(media)
        if streams is None:
            raise command_error(
                ErrorCode.NOT_SUPPORTED,
                f"aeron:{media} channels are not supported by this driver",
                channel=channel,
            )
        return streams
