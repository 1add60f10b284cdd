"""``ClientConductor``: the client's agent, between the application and the media driver.

It sends the application's commands (through :class:`~transport.client.driver_proxy.
DriverProxy`), waits for their responses, turns responses and notifications (through
:class:`~transport.client.driver_events_adapter.DriverEventsAdapter`) into publications,
subscriptions, images and counters, and keeps the client alive, as Aeron's ``ClientConductor``:

- **One lock** (re-entrant, so a misplaced call from a callback fails with a clear error instead
  of deadlocking) guards all of the conductor's state. A control call (``add_*``, ``close``)
  takes it, writes its command and then services the conductor itself until the response with
  its correlation id arrives (``RegistrationError`` for ON_ERROR, ``DriverTimeoutError`` after
  the driver timeout). The duty cycle (``do_work``, on the conductor thread or the application's
  invoker) only *tries* the lock and skips the cycle when a control call holds it.
- **Keepalive** (:class:`~transport.client.client_liveness.ClientLiveness`): every
  ``keep_alive_interval_ns`` it stamps the epoch time (ms) into this client's heartbeat counter
  (type 11, key = client id), which the driver allocated on the client's first command; until
  that counter exists it sends CLIENT_KEEPALIVE instead.
- **Driver liveness**: at the same interval it reads the driver's heartbeat in the to-driver
  ring buffer; older than the driver timeout (or -1, a driver that shut down) and the client
  terminates with :class:`~transport.DriverTimeoutError`: every resource is closed, the error
  goes to the error handler, later calls raise it.
- **Client timeout**: ON_CLIENT_TIMEOUT with this client's id, or the heartbeat counter
  vanishing, terminate the client with :class:`~transport.ClientTimeoutError` the same way; so
  does the conductor not being serviced for the inter-service timeout when the driver dropped
  the client meanwhile (Aeron's client terminates on the interval alone; this one asks the
  counters, so a process stopped with its embedded driver resumes working).
- **Log buffers** are mapped once per registration and lingered after their last user goes
  (:class:`~transport.client.log_buffers_registry.LogBuffersRegistry`).

- **Resources** (:class:`~transport.client.resources_registry.ResourcesRegistry`): the
  publications, subscriptions, images and counters by registration id, made and dropped as the
  driver's events say (the registry is the events adapter's listener).

Image handlers run on whichever thread services the conductor (normally the conductor thread),
under the lock; they must not call back into the client (``TransportStateError``).

This module holds the agent (duty cycle, close), the control calls and the wait for their
answers, and the client's termination. Users: :class:`~transport.client.Aeron` (which makes it),
and the publications, subscriptions and counters, which close through it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Final, TypeVar

from aeromq.transport._errors import (
    AgentTerminationError,
    ClientTimeoutError,
    ConfigurationError,
    DriverTimeoutError,
    TransportError,
    TransportStateError,
)
from aeromq.transport.client.client_liveness import ClientLiveness, terminated_error
from aeromq.transport.client.concurrent_publication import ConcurrentPublication
from aeromq.transport.client.context import AeronContext, ImageHandler
from aeromq.transport.client.counter import Counter
from aeromq.transport.client.driver_events_adapter import NO_CORRELATION_ID, DriverEventsAdapter
from aeromq.transport.client.driver_proxy import DriverProxy
from aeromq.transport.client.exclusive_publication import ExclusivePublication
from aeromq.transport.client.log_buffers_registry import LogBuffersRegistry
from aeromq.transport.client.publication import Publication
from aeromq.transport.client.resources_registry import (
    Resource,
    ResourcesRegistry,
    registration_error,
)
from aeromq.transport.client.subscription import Subscription
from aeromq.transport.cnc import CncFile
from aeromq.transport.command import (
    ADD_EXCLUSIVE_PUBLICATION,
    ADD_PUBLICATION,
    type_name,
)
from aeromq.transport.concurrent import ManyToOneRingBuffer
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.counters_descriptor import (
    MAX_KEY_LENGTH,
    MAX_LABEL_LENGTH,
)
from aeromq.transport.concurrent.counters_reader import CountersReader
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy

__all__ = ["ClientConductor"]

_NS_PER_MS: Final = 1_000_000
_R = TypeVar("_R", bound=Publication | Subscription | Counter)


class ClientConductor:
    """The client's conductor agent (see module). Made by ``Aeron.connect``."""

    def __init__(self, ctx: AeronContext, cnc: CncFile, client_id: int) -> None:
        self._ctx = ctx
        self._lock = threading.RLock()
        self._epoch_clock = ctx.epoch_clock
        self._nano_clock = ctx.nano_clock
        self._error_handler = ctx.error_handler
        self.client_id = client_id
        self.aeron_dir = ctx.aeron_dir
        self._driver_proxy = DriverProxy(
            ManyToOneRingBuffer(cnc.to_driver_buffer), client_id, ctx.aeron_dir
        )
        self.counters_values_buffer: AtomicBuffer = cnc.counters_values_buffer
        self.counters_reader = CountersReader(
            cnc.counters_metadata_buffer, cnc.counters_values_buffer
        )
        self._logs = LogBuffersRegistry(ctx.resource_linger_duration_ns, self.handle_error)
        self._resources = ResourcesRegistry(
            self,
            self._logs,
            self.counters_values_buffer,
            self._nano_clock,
            self.handle_error,
            self._on_client_timeout,
        )
        self._events = DriverEventsAdapter(
            client_id, cnc.to_clients_buffer, self._resources, self._resources.async_command_ids
        )
        self._driver_timeout_ms = ctx.driver_timeout_ms
        self._awaiting_idle = BackoffIdleStrategy(10, 5, 10_000, _NS_PER_MS)
        self._is_closed = False
        self._is_terminating = False
        self._termination_cause: TransportError | None = None
        self._liveness = ClientLiveness(
            self._driver_proxy,
            self.counters_reader,
            self._epoch_clock,
            aeron_dir=ctx.aeron_dir,
            keep_alive_interval_ns=ctx.keep_alive_interval_ns,
            driver_timeout_ms=ctx.driver_timeout_ms,
            inter_service_timeout_ns=ctx.inter_service_timeout_ns or cnc.client_liveness_timeout_ns,
            idle_sleep_duration_ns=ctx.idle_sleep_duration_ns,
            now_ns=self._nano_clock.time_ns(),
        )

    # ----------------------------------------------------------------------------------------
    # Agent

    @property
    def role_name(self) -> str:
        """``aeron-client-conductor``: the conductor thread's name."""
        return "aeron-client-conductor"

    def on_start(self) -> None:
        """Nothing to do: the constructor did the set-up."""
        return None

    def do_work(self) -> int:
        """One duty cycle, unless a control call holds the lock (then 0)."""
        if not self._lock.acquire(blocking=False):
            return 0
        try:
            if self._is_terminating or self._is_closed:
                raise AgentTerminationError(
                    "client conductor terminating", client_id=self.client_id
                )
            return self._service(NO_CORRELATION_ID)
        finally:
            self._lock.release()

    def on_close(self) -> None:
        """The agent's end. After a timeout stopped the client, the files stay mapped until the
        application calls ``Aeron.close`` (a poll racing the stop reads no unmapped memory)."""
        if not self._is_terminating:
            self.close()

    def close(self) -> None:
        """Close everything, tell the driver (CLIENT_CLOSE) and unmap the logs; idempotent."""
        with self._lock:
            if self._is_closed:
                return
            try:
                self._resources.close_all()
                if self._ctx.close_linger_duration_ns:
                    time.sleep(self._ctx.close_linger_duration_ns / 1e9)
                self._logs.close_all()
                self._driver_proxy.client_close()
            finally:
                self._is_closed = True

    # ----------------------------------------------------------------------------------------
    # State

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._is_closed

    @property
    def is_terminating(self) -> bool:
        """True once a driver or client timeout stopped the client (:attr:`termination_cause`)."""
        return self._is_terminating

    @property
    def termination_cause(self) -> TransportError | None:
        """Why the client stopped on its own (driver or client timeout), if it did."""
        return self._termination_cause

    @property
    def heartbeat_counter_id(self) -> int:
        """This client's heartbeat counter once found, else -1."""
        return self._liveness.heartbeat_counter_id

    @property
    def log_buffers(self) -> LogBuffersRegistry:
        """The mapped log buffers, shared by registration id and lingered after use."""
        return self._logs

    def handle_error(self, error: BaseException) -> None:
        """Pass ``error`` to the context's error handler unless closed; a failing one is ignored."""
        if not self._is_closed:
            with contextlib.suppress(Exception):  # a failing handler must not stop the conductor
                self._error_handler(error)

    def next_correlation_id(self) -> int:
        """A number unique among all clients of this driver (the to-driver ring's counter)."""
        return self._driver_proxy.next_correlation_id()

    def ensure_open(self) -> None:
        """Raise if the client cannot take calls (closed, or stopped by a timeout)."""
        with self._lock:
            self._ensure_usable()

    # ----------------------------------------------------------------------------------------
    # Control calls (any application thread)

    def add_publication(self, channel: str, stream_id: int) -> ConcurrentPublication:
        """Send ADD_PUBLICATION and wait for the publication it made.

        Caller: :class:`~transport.client.Aeron` (any application thread). Holds the lock while
        it waits; raises ``RegistrationError`` if the driver refused, ``DriverTimeoutError``
        after the driver timeout.
        """
        publication = self._add_publication(channel, stream_id, exclusive=False)
        assert isinstance(publication, ConcurrentPublication)
        return publication

    def add_exclusive_publication(self, channel: str, stream_id: int) -> ExclusivePublication:
        """Send ADD_EXCLUSIVE_PUBLICATION and wait for the publication it made.

        Caller: :class:`~transport.client.Aeron` (any application thread). Holds the lock while
        it waits; raises ``RegistrationError`` if the driver refused, ``DriverTimeoutError``
        after the driver timeout.
        """
        publication = self._add_publication(channel, stream_id, exclusive=True)
        assert isinstance(publication, ExclusivePublication)
        return publication

    def _add_publication(self, channel: str, stream_id: int, *, exclusive: bool) -> Publication:
        with self._lock:
            correlation_id = self._send_add_publication(channel, stream_id, exclusive)
            try:
                self._await_response(correlation_id, _command(exclusive))
            finally:
                self._resources.discard_pending_publication(correlation_id)
            return self._resources.expect(correlation_id, Publication)

    def async_add_publication(self, channel: str, stream_id: int, *, exclusive: bool) -> int:
        """Send the command and return its registration id; see :meth:`get_resource`."""
        with self._lock:
            correlation_id = self._send_add_publication(channel, stream_id, exclusive)
            self._resources.async_command_ids.add(correlation_id)
            return correlation_id

    def _send_add_publication(self, channel: str, stream_id: int, exclusive: bool) -> int:
        self._ensure_usable()
        proxy = self._driver_proxy
        if exclusive:
            correlation_id = proxy.add_exclusive_publication(channel, stream_id)
        else:
            correlation_id = proxy.add_publication(channel, stream_id)
        self._resources.add_pending_publication(
            correlation_id, channel, stream_id, exclusive=exclusive
        )
        return correlation_id

    def add_subscription(
        self,
        channel: str,
        stream_id: int,
        available_image_handler: ImageHandler | None,
        unavailable_image_handler: ImageHandler | None,
    ) -> Subscription:
        """Send ADD_SUBSCRIPTION and wait for ON_SUBSCRIPTION_READY.

        The handlers default to the context's; images arrive later, on the conductor's thread.
        Raises as :meth:`add_publication`.
        """
        with self._lock:
            correlation_id, subscription = self._send_add_subscription(
                channel, stream_id, available_image_handler, unavailable_image_handler
            )
            self._await_response(correlation_id, "ADD_SUBSCRIPTION")
            return subscription

    def async_add_subscription(
        self,
        channel: str,
        stream_id: int,
        available_image_handler: ImageHandler | None,
        unavailable_image_handler: ImageHandler | None,
    ) -> int:
        """Send the command and return its registration id; see :meth:`get_resource`."""
        with self._lock:
            correlation_id, _ = self._send_add_subscription(
                channel, stream_id, available_image_handler, unavailable_image_handler
            )
            self._resources.async_command_ids.add(correlation_id)
            return correlation_id

    def _send_add_subscription(
        self,
        channel: str,
        stream_id: int,
        available_image_handler: ImageHandler | None,
        unavailable_image_handler: ImageHandler | None,
    ) -> tuple[int, Subscription]:
        self._ensure_usable()
        correlation_id = self._driver_proxy.add_subscription(channel, stream_id)
        ctx = self._ctx
        subscription = self._resources.new_subscription(
            channel,
            stream_id,
            correlation_id,
            available_image_handler or ctx.available_image_handler,
            unavailable_image_handler or ctx.unavailable_image_handler,
        )
        return correlation_id, subscription

    def get_resource(self, registration_id: int, kind: type[_R]) -> _R | None:
        """The resource of an asynchronous add once ready, None while pending; raises the
        driver's ``RegistrationError`` if it refused."""
        with self._lock:
            self._ensure_usable()
            if registration_id in self._resources.async_command_ids:
                self._service(NO_CORRELATION_ID)
            return self._resources.take_async(registration_id, kind)

    def add_counter(self, type_id: int, key: bytes, label: str) -> Counter:
        """Send ADD_COUNTER and wait for the counter the driver allocated.

        ``ConfigurationError`` first if ``key`` is over ``MAX_KEY_LENGTH`` bytes or ``label``
        over ``MAX_LABEL_LENGTH`` (UTF-8); else raises as :meth:`add_publication`.
        """
        if len(key) > MAX_KEY_LENGTH:
            raise ConfigurationError(
                "counter key too long", key_length=len(key), max_key_length=MAX_KEY_LENGTH
            )
        if len(label.encode("utf-8")) > MAX_LABEL_LENGTH:
            raise ConfigurationError(
                "counter label too long", label_length=len(label), max_label_length=MAX_LABEL_LENGTH
            )
        with self._lock:
            self._ensure_usable()
            correlation_id = self._driver_proxy.add_counter(type_id, bytes(key), label)
            self._await_response(correlation_id, "ADD_COUNTER")
            return self._resources.expect(correlation_id, Counter)

    def release_publication(self, publication: Publication) -> None:
        """Close ``publication`` and send REMOVE_PUBLICATION without waiting.

        Caller: :meth:`Publication.close`. Nothing if it was closed already; the driver is not
        told when the client is closing or stopped.
        """
        with self._lock:
            if self._begin_release(publication) and self._resources.remove(publication):
                self._resources.async_command_ids.add(
                    self._driver_proxy.remove_publication(publication.registration_id)
                )

    def release_subscription(self, subscription: Subscription) -> None:
        """Close ``subscription`` and its images and send REMOVE_SUBSCRIPTION without waiting.

        Caller: :meth:`Subscription.close`. The unavailable image handler is called for each
        image, on the caller's thread.
        """
        with self._lock:
            if not self._begin_release(subscription):
                return
            images = self._resources.release_images(subscription)
            if self._resources.remove(subscription):
                self._resources.async_command_ids.add(
                    self._driver_proxy.remove_subscription(subscription.registration_id)
                )
            handler = subscription.unavailable_image_handler
            if handler is not None:
                for image in images:
                    self._resources.call_back(handler, image)

    def release_counter(self, counter: Counter) -> None:
        """Close ``counter`` and send REMOVE_COUNTER without waiting.

        Caller: :meth:`Counter.close`.
        """
        with self._lock:
            if self._begin_release(counter) and self._resources.remove(counter):
                self._resources.async_command_ids.add(
                    self._driver_proxy.remove_counter(counter.registration_id)
                )

    def _begin_release(self, resource: Resource) -> bool:
        """Mark an application's close of ``resource``; True if the driver is to hear of it
        (not when it was closed already, or the client is closing or stopped)."""
        if resource.is_closed:
            return False
        if self._is_terminating or self._is_closed:
            resource.internal_close()
            return False
        self._ensure_not_reentrant()
        resource.internal_close()
        return True

    # ----------------------------------------------------------------------------------------
    # Service

    def _service(self, correlation_id: int) -> int:
        """One service: timeouts and keepalive, then the driver's events; the work done.

        A keepalive (every ``keep_alive_interval_ns``) does not count as work, unlike Aeron's:
        it predicts no more work, and counting it pulled a backing-off idle strategy (the
        broker's) out of its longest park twice a second."""
        work_count = 0
        try:
            work_count += self._check_timeouts(self._nano_clock.time_ns())
            work_count += self._events.receive(correlation_id)
        except Exception as error:
            self.handle_error(error)
            if self._events.is_invalid and not self._is_terminating:
                self._terminate(
                    TransportStateError(
                        "client lost track of the driver's broadcast", client_id=self.client_id
                    )
                )
            if correlation_id != NO_CORRELATION_ID:
                raise
        return work_count

    def _await_response(self, correlation_id: int, command: str) -> None:
        timeout_ns = self._driver_timeout_ms * _NS_PER_MS
        deadline_ns = time.monotonic_ns() + timeout_ns
        idle = self._awaiting_idle
        idle.reset()
        resources = self._resources
        while True:
            self._service(correlation_id)
            if self._events.received_correlation_id == correlation_id:
                driver_error = resources.driver_error
                if driver_error is not None:
                    resources.driver_error = None
                    raise registration_error(*driver_error, correlation_id, command)
                return
            if self._is_terminating:
                raise self._terminated_error()
            if time.monotonic_ns() - deadline_ns > 0:
                raise DriverTimeoutError(
                    "no response from the media driver",
                    command=command,
                    correlation_id=correlation_id,
                    driver_timeout_ms=self._driver_timeout_ms,
                    aeron_dir=self.aeron_dir,
                )
            idle.idle()

    # ----------------------------------------------------------------------------------------
    # Timeouts and termination

    def _check_timeouts(self, now_ns: int) -> int:
        liveness = self._liveness
        if not liveness.due(now_ns):
            return 0
        try:
            liveness.check(now_ns)  # a keepalive is not work: see _service
        except (ClientTimeoutError, DriverTimeoutError) as cause:
            self._terminate(cause)
            raise
        return self._logs.close_expired(now_ns)

    def _on_client_timeout(self) -> None:
        """The driver timed this client out (ON_CLIENT_TIMEOUT with its id)."""
        if not self._is_closed and not self._is_terminating:
            cause = ClientTimeoutError(
                "the media driver timed this client out", client_id=self.client_id
            )
            self._terminate(cause)
            self.handle_error(cause)

    def _terminate(self, cause: TransportError) -> None:
        self._is_terminating = True
        if self._termination_cause is None:
            self._termination_cause = cause
        self._resources.close_all()

    def _terminated_error(self) -> TransportError:
        return terminated_error(self._termination_cause, self.aeron_dir, self.client_id)

    def _ensure_usable(self) -> None:
        if self._is_terminating:
            raise self._terminated_error()
        if self._is_closed:
            raise TransportStateError("Aeron client is closed", client_id=self.client_id)
        self._ensure_not_reentrant()

    def _ensure_not_reentrant(self) -> None:
        if self._resources.is_in_callback:
            raise TransportStateError(
                "reentrant calls are not permitted during callbacks", client_id=self.client_id
            )


def _command(exclusive: bool) -> str:
    return type_name(ADD_EXCLUSIVE_PUBLICATION if exclusive else ADD_PUBLICATION)
