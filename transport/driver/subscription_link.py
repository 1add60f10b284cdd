"""``SubscriptionLink``: a client's subscription as the driver tracks it, for every media.

Aeron's ``aeron_subscription_link_t``: the registration id (the ADD_SUBSCRIPTION correlation id),
the owning client, the stream, the channel as the client gave it, the channel's parameters
(``session-id``, ``tether``, ``sparse``, ``reliable``, ``rejoin``) and the logs it is linked to,
each with the sub-pos counter the driver allocated for it. An IPC subscription links to IPC
publications; a UDP one (``NetworkSubscriptionLink`` in
``transport/driver/udp/network_subscription_link.py``, which adds its receive endpoint) to
network images. A subscription links to every log of its
stream (and session, when the channel pins ``session-id``), in whichever order the two appear:
:meth:`SubscriptionLink.link` allocates the sub-pos and hands it to the log,
:meth:`SubscriptionLink.unlink_all` takes them all back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from aeromq.transport.concurrent.position import Position
from aeromq.transport.driver.stream_counters import allocate_subscriber_position
from aeromq.transport.driver.subscriber_position import SubscriberPosition

if TYPE_CHECKING:
    from aeromq.transport.concurrent.counters_manager import CountersManager
    from aeromq.transport.driver.uri_params import SubscriptionParams

__all__ = ["Subscribable", "SubscriptionLink"]


class Subscribable(Protocol):
    """A log subscriptions read (Aeron's ``Subscribable``): an IPC publication, an image."""

    @property
    def session_id(self) -> int: ...

    @property
    def stream_id(self) -> int: ...

    def add_subscriber(self, subscriber: SubscriberPosition, /) -> None: ...

    def remove_subscriber(self, counter_id: int, /) -> SubscriberPosition | None: ...


L = TypeVar("L", bound=Subscribable)


class SubscriptionLink(Generic[L]):
    """One subscription (see module). ``linked`` maps each log to its sub-pos counter id."""

    __slots__ = (
        "channel",
        "client_id",
        "is_rejoin",
        "is_reliable",
        "is_sparse",
        "is_tether",
        "linked",
        "registration_id",
        "session_id",
        "stream_id",
    )

    def __init__(
        self,
        registration_id: int,
        client_id: int,
        stream_id: int,
        channel: str,
        params: SubscriptionParams,
    ) -> None:
        self.registration_id = registration_id
        self.client_id = client_id
        self.stream_id = stream_id
        self.channel = channel
        self.session_id = params.session_id
        self.is_tether = params.is_tether
        self.is_sparse = params.is_sparse
        self.is_reliable = params.is_reliable
        self.is_rejoin = params.is_rejoin
        self.linked: dict[L, int] = {}

    def matches(self, stream_id: int, session_id: int) -> bool:
        """Whether a log of this stream and session belongs to this subscription."""
        return self.stream_id == stream_id and (
            self.session_id is None or self.session_id == session_id
        )

    def is_linked(self, log: L) -> bool:
        return log in self.linked

    def link(
        self,
        counters: CountersManager,
        log: L,
        join_position: int,
        reference_id: int,
        now_ns: int,
    ) -> SubscriberPosition:
        """Allocate this subscription's sub-pos in ``log`` at ``join_position`` and add it.

        ``reference_id`` is the log's id in the counter (an image's correlation id, an IPC
        publication's registration id). Caller: the conductor, which then announces the image.
        """
        counter_id = allocate_subscriber_position(
            counters,
            self.registration_id,
            log.session_id,
            log.stream_id,
            self.channel,
            join_position,
            self.client_id,
            reference_id,
        )
        position = Position(counters.values_buffer, counter_id)
        position.set_ordered(join_position)
        subscriber = SubscriberPosition(position, self.registration_id, self.is_tether, now_ns)
        log.add_subscriber(subscriber)
        self.linked[log] = counter_id
        return subscriber

    def unlink_all(self, counters: CountersManager) -> None:
        """Take every sub-pos back from its log and free its counter."""
        for log, counter_id in self.linked.items():
            log.remove_subscriber(counter_id)
            counters.free(counter_id)
        self.linked.clear()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(registration_id={self.registration_id}, client_id="
            f"{self.client_id}, stream_id={self.stream_id}, channel={self.channel!r})"
        )
