"""``ResourcesRegistry``: a client's publications, subscriptions and counters, kept in step with
the driver's events.

The registry holds every resource by registration id (a publication by the correlation id of
its ADD command), the publication commands still waiting for their log, the asynchronous
commands in flight and the errors the driver answered them with. It is the
:class:`~transport.client.driver_events_adapter.DriverEventsAdapter`'s listener: a ready
publication or counter is made here, an available image is mapped and added to its
subscription (then the subscription's image handler runs), an unavailable one removed (its log
lingers, :class:`~transport.client.log_buffers_registry.LogBuffersRegistry`), and an ON_ERROR
becomes the ``RegistrationError`` a control call or :meth:`ResourcesRegistry.take_async`
raises. An exclusive UDP publication of a driver running in this process wakes that driver's
sender after each offer (:mod:`~transport.client.waking_publications`).

Caller: :class:`~transport.client.client_conductor.ClientConductor`, under the client lock
(control calls, closes and the duty cycle). Affects: the resources' state (closed, images),
the log buffer mappings; the error handler gets what goes wrong in a callback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from aeromq.transport._errors import RegistrationError, TransportStateError
from aeromq.transport.client.concurrent_publication import ConcurrentPublication
from aeromq.transport.client.context import ImageHandler
from aeromq.transport.client.counter import Counter
from aeromq.transport.client.exclusive_publication import ExclusivePublication
from aeromq.transport.client.image import Image
from aeromq.transport.client.log_buffers_registry import LogBuffersRegistry
from aeromq.transport.client.publication import Publication
from aeromq.transport.client.subscription import Subscription
from aeromq.transport.client.waking_publications import WakingExclusivePublication
from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.clock import NanoClock
from aeromq.transport.concurrent.network_wakes import network_wake
from aeromq.transport.concurrent.position import Position

if TYPE_CHECKING:
    from aeromq.transport.client.client_conductor import ClientConductor

__all__ = ["Resource", "ResourcesRegistry", "registration_error"]

Resource = Publication | Subscription | Counter
"""What the registry holds."""

_R = TypeVar("_R", bound=Publication | Subscription | Counter)
_UDP = "aeron:udp"


@dataclass(slots=True)
class _PendingPublication:
    channel: str
    stream_id: int
    exclusive: bool


def registration_error(
    code: int, message: str, correlation_id: int, command: str | None
) -> RegistrationError:
    """The error for the driver's ON_ERROR ``code``/``message`` answering ``correlation_id``."""
    values: dict[str, object] = {
        "code": code,
        "error_code": ErrorCode.of(code).name,
        "correlation_id": correlation_id,
    }
    if command is not None:
        values["command"] = command
    return RegistrationError(message, **values)


class ResourcesRegistry:
    """The client's resources by registration id, and the driver events' listener (see module)."""

    __slots__ = (
        "_async_errors",
        "_by_registration_id",
        "_conductor",
        "_handle_error",
        "_logs",
        "_nano_clock",
        "_on_client_timeout",
        "_pending_publications",
        "_values_buffer",
        "async_command_ids",
        "driver_error",
        "is_in_callback",
    )

    def __init__(
        self,
        conductor: ClientConductor,
        logs: LogBuffersRegistry,
        counters_values_buffer: AtomicBuffer,
        nano_clock: NanoClock,
        handle_error: Callable[[BaseException], None],
        on_client_timeout: Callable[[], None],
    ) -> None:
        self._conductor = conductor
        self._logs = logs
        self._values_buffer = counters_values_buffer
        self._nano_clock = nano_clock
        self._handle_error = handle_error
        self._on_client_timeout = on_client_timeout
        self._by_registration_id: dict[int, Resource] = {}
        self._pending_publications: dict[int, _PendingPublication] = {}
        self._async_errors: dict[int, RegistrationError] = {}
        self.async_command_ids: set[int] = set()
        """Commands sent without waiting: their answers are this client's (the adapter's)."""
        self.driver_error: tuple[int, str] | None = None
        """(code, message) of an ON_ERROR answering the awaited command, until taken."""
        self.is_in_callback = False
        """True while an image handler runs (calls back into the client are refused)."""

    # ----------------------------------------------------------------------------------------
    # The conductor's side

    def add_pending_publication(
        self, correlation_id: int, channel: str, stream_id: int, *, exclusive: bool
    ) -> None:
        """Remember an ADD_(EXCLUSIVE_)PUBLICATION until its log is ready."""
        self._pending_publications[correlation_id] = _PendingPublication(
            channel, stream_id, exclusive
        )

    def discard_pending_publication(self, correlation_id: int) -> None:
        self._pending_publications.pop(correlation_id, None)

    def new_subscription(
        self,
        channel: str,
        stream_id: int,
        correlation_id: int,
        available_image_handler: ImageHandler | None,
        unavailable_image_handler: ImageHandler | None,
    ) -> Subscription:
        """Make and register the subscription of an ADD_SUBSCRIPTION (before its answer)."""
        subscription = Subscription(
            self._conductor,
            channel,
            stream_id,
            correlation_id,
            available_image_handler,
            unavailable_image_handler,
        )
        self._by_registration_id[correlation_id] = subscription
        return subscription

    def expect(self, registration_id: int, kind: type[_R]) -> _R:
        """The resource the driver's answer made; TransportStateError if there is none of ``kind``."""
        resource = self._by_registration_id.get(registration_id)
        if not isinstance(resource, kind):
            raise TransportStateError(
                "no resource for the driver's response",
                registration_id=registration_id,
                expected=kind.__name__,
            )
        return resource

    def take_async(self, registration_id: int, kind: type[_R]) -> _R | None:
        """The resource of an asynchronous add once ready, None while pending; raises the
        driver's ``RegistrationError`` (once) if it refused."""
        error = self._async_errors.pop(registration_id, None)
        if error is not None:
            raise error
        if registration_id in self.async_command_ids:
            return None
        resource = self._by_registration_id.get(registration_id)
        if resource is None:
            return None
        if not isinstance(resource, kind):
            raise TransportStateError(
                "registration id is another kind of resource",
                registration_id=registration_id,
                kind=type(resource).__name__,
            )
        return resource

    def remove(self, resource: Resource) -> bool:
        """Forget a resource the application closed; False if it is not the registered one.

        A publication's log is released (it lingers before it is unmapped).
        """
        registration_id = resource.registration_id
        if self._by_registration_id.get(registration_id) is not resource:
            return False
        del self._by_registration_id[registration_id]
        if isinstance(resource, Publication):
            self._logs.release(resource.original_registration_id, self._nano_clock.time_ns())
        return True

    def release_images(self, subscription: Subscription) -> tuple[Image, ...]:
        """Take every image out of ``subscription`` and release their logs; the images."""
        images = subscription.remove_all_images()
        now_ns = self._nano_clock.time_ns()
        for image in images:
            self._logs.release(image.correlation_id, now_ns)
        return images

    def close_all(self) -> None:
        """Close every resource without telling the driver and release their logs."""
        now_ns = self._nano_clock.time_ns()
        for resource in self._by_registration_id.values():
            if isinstance(resource, Publication):
                if not resource.is_closed:
                    resource.internal_close()
                    self._logs.release(resource.original_registration_id, now_ns)
            elif isinstance(resource, Subscription):
                resource.internal_close()
                self.release_images(resource)
            else:
                resource.internal_close()
        self._by_registration_id.clear()

    def call_back(self, handler: ImageHandler, image: Image) -> None:
        """Run an image handler; what it raises goes to the error handler."""
        self.is_in_callback = True
        try:
            handler(image)
        except Exception as error:
            self._handle_error(error)
        finally:
            self.is_in_callback = False

    # ----------------------------------------------------------------------------------------
    # Driver events (DriverEventsListener), under the lock

    def on_error(self, correlation_id: int, code: int, message: str) -> None:
        self.driver_error = (code, message)
        resource = self._by_registration_id.get(correlation_id)
        if isinstance(resource, Subscription):
            resource.internal_close()
            del self._by_registration_id[correlation_id]

    def on_async_error(self, correlation_id: int, code: int, message: str) -> None:
        pending = self._pending_publications.pop(correlation_id, None)
        resource = self._by_registration_id.get(correlation_id)
        error = registration_error(code, message, correlation_id, None)
        if isinstance(resource, Subscription):  # an async add the driver refused
            resource.internal_close()
            del self._by_registration_id[correlation_id]
            self._async_errors[correlation_id] = error
        elif pending is not None:
            self._async_errors[correlation_id] = error
        else:
            self._handle_error(error)

    def on_channel_endpoint_error(self, status_indicator_id: int, message: str) -> None:
        for resource in list(self._by_registration_id.values()):
            if (
                isinstance(resource, Publication | Subscription)
                and resource.channel_status_id == status_indicator_id
            ):
                self._handle_error(
                    RegistrationError(
                        message,
                        code=int(ErrorCode.CHANNEL_ENDPOINT_ERROR),
                        channel=resource.channel,
                        status_indicator_id=status_indicator_id,
                    )
                )

    def on_new_publication(
        self,
        correlation_id: int,
        registration_id: int,
        stream_id: int,
        session_id: int,
        position_limit_id: int,
        channel_status_id: int,
        log_file_name: str,
        exclusive: bool,
    ) -> None:
        pending = self._pending_publications.pop(correlation_id, None)
        channel = pending.channel if pending is not None else ""
        log_buffers = self._logs.acquire(registration_id, log_file_name)
        wake = network_wake(self._conductor.aeron_dir) if channel.startswith(_UDP) else None
        try:
            kind: type[Publication] = ConcurrentPublication
            if exclusive:
                kind = ExclusivePublication if wake is None else WakingExclusivePublication
            publication = kind(
                self._conductor,
                channel,
                stream_id,
                session_id,
                position_limit_id,
                channel_status_id,
                log_buffers,
                registration_id,
                correlation_id,
            )
        except BaseException:
            self._logs.release(registration_id, self._nano_clock.time_ns())
            raise
        if wake is not None and isinstance(publication, WakingExclusivePublication):
            publication.wake_sender = wake  # its offers end its driver's sender's park
        self._by_registration_id[correlation_id] = publication

    def on_new_subscription(self, correlation_id: int, channel_status_id: int) -> None:
        subscription = self._by_registration_id.get(correlation_id)
        if isinstance(subscription, Subscription):
            subscription.channel_status_id = channel_status_id

    def on_available_image(
        self,
        correlation_id: int,
        session_id: int,
        subscription_registration_id: int,
        subscriber_position_id: int,
        log_file_name: str,
        source_identity: str,
    ) -> None:
        subscription = self._by_registration_id.get(subscription_registration_id)
        if not isinstance(subscription, Subscription) or subscription.contains_image(
            correlation_id
        ):
            return
        position = Position(self._values_buffer, subscriber_position_id)
        log_buffers = self._logs.acquire(correlation_id, log_file_name)
        try:
            image = Image(
                subscription,
                session_id,
                position,
                log_buffers,
                self._handle_error,
                source_identity,
                correlation_id,
            )
        except BaseException:
            self._logs.release(correlation_id, self._nano_clock.time_ns())
            raise
        handler = subscription.available_image_handler
        if handler is not None:
            self.call_back(handler, image)
        subscription.add_image(image)

    def on_unavailable_image(self, correlation_id: int, subscription_registration_id: int) -> None:
        subscription = self._by_registration_id.get(subscription_registration_id)
        if not isinstance(subscription, Subscription):
            return
        image = subscription.remove_image(correlation_id)
        if image is None:
            return
        self._logs.release(image.correlation_id, self._nano_clock.time_ns())
        handler = subscription.unavailable_image_handler
        if handler is not None:
            self.call_back(handler, image)

    def on_new_counter(self, correlation_id: int, counter_id: int) -> None:
        self._by_registration_id[correlation_id] = Counter(
            correlation_id, self._conductor, self._values_buffer, counter_id
        )

    def on_available_counter(self, registration_id: int, counter_id: int) -> None:
        return None

    def on_unavailable_counter(self, registration_id: int, counter_id: int) -> None:
        return None

    def on_client_timeout(self) -> None:
        self._on_client_timeout()
