"""Cross-thread commands between the conductor and the network agents, through queues.

Aeron's ``DriverConductorProxy``, ``SenderProxy`` and ``ReceiverProxy``: an agent's state is
touched only on its own thread, so another thread asks it to change by putting a command on its
queue (a ``collections.deque``: appends and pops are atomic), and the agent runs the queued
commands at the start of its next duty cycle (:func:`drain`). In INVOKER and SHARED modes the
agents share a thread and the queues just order the work.

- conductor -> sender: add / remove a send endpoint or a network publication;
- conductor -> receiver: add / remove a receive endpoint, a subscription's interest in a stream
  (or one session of it), a new image, an image that is going, the end of a session's
  cool-down, a SETUP that did not become an image;
- receiver -> conductor: create an image for a SETUP (:class:`DriverConductorProxy`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from aeromq.transport.driver.udp.udp_channel import Sockaddr

if TYPE_CHECKING:
    from aeromq.transport.driver.udp.network_publication import NetworkPublication
    from aeromq.transport.driver.udp.publication_image import PublicationImage
    from aeromq.transport.driver.udp.receive_channel_endpoint import ReceiveChannelEndpoint
    from aeromq.transport.driver.udp.receiver import Receiver
    from aeromq.transport.driver.udp.send_channel_endpoint import SendChannelEndpoint
    from aeromq.transport.driver.udp.sender import Sender

__all__ = [
    "MAX_QUEUED_IMAGE_REQUESTS",
    "CommandQueue",
    "DriverConductorProxy",
    "ImageRequest",
    "ReceiverProxy",
    "SenderProxy",
    "drain",
]

CommandQueue = deque[tuple[Callable[..., object], tuple[object, ...]]]
"""Commands for one agent: a callable and its arguments."""


def drain(queue: CommandQueue, limit: int = 10) -> int:
    """Run up to ``limit`` queued commands on this (the owning agent's) thread."""
    count = 0
    while queue and count < limit:
        command, args = queue.popleft()
        command(*args)
        count += 1
    return count


class SenderProxy:
    """The conductor's handle on the sender."""

    __slots__ = ("_queue", "_sender")

    def __init__(self, sender: Sender) -> None:
        self._sender = sender
        self._queue = sender.commands

    def add_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        self._queue.append((self._sender.on_add_endpoint, (endpoint,)))

    def remove_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        self._queue.append((self._sender.on_remove_endpoint, (endpoint,)))

    def add_publication(self, publication: NetworkPublication) -> None:
        self._queue.append((self._sender.on_add_publication, (publication,)))

    def remove_publication(self, publication: NetworkPublication) -> None:
        self._queue.append((self._sender.on_remove_publication, (publication,)))


class ReceiverProxy:
    """The conductor's handle on the receiver."""

    __slots__ = ("_queue", "_receiver")

    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver
        self._queue = receiver.commands

    def add_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        self._queue.append((self._receiver.on_add_endpoint, (endpoint,)))

    def remove_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        self._queue.append((self._receiver.on_remove_endpoint, (endpoint,)))

    def add_subscription(
        self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int | None
    ) -> None:
        self._queue.append((self._receiver.on_add_subscription, (endpoint, stream_id, session_id)))

    def remove_subscription(
        self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int | None
    ) -> None:
        self._queue.append(
            (self._receiver.on_remove_subscription, (endpoint, stream_id, session_id))
        )

    def new_publication_image(self, image: PublicationImage) -> None:
        self._queue.append((self._receiver.on_new_publication_image, (image,)))

    def remove_publication_image(self, image: PublicationImage) -> None:
        self._queue.append((self._receiver.on_remove_publication_image, (image,)))

    def remove_cool_down(
        self, endpoint: ReceiveChannelEndpoint, session_id: int, stream_id: int
    ) -> None:
        self._queue.append((self._receiver.on_remove_cool_down, (endpoint, session_id, stream_id)))

    def remove_init_in_progress(
        self, endpoint: ReceiveChannelEndpoint, session_id: int, stream_id: int
    ) -> None:
        self._queue.append(
            (self._receiver.on_remove_init_in_progress, (endpoint, session_id, stream_id))
        )


class ImageRequest:
    """A SETUP the receiver wants turned into an image."""

    __slots__ = (
        "active_term_id",
        "control_address",
        "endpoint",
        "initial_term_id",
        "mtu_length",
        "session_id",
        "source_address",
        "stream_id",
        "term_length",
        "term_offset",
    )

    def __init__(
        self,
        endpoint: ReceiveChannelEndpoint,
        session_id: int,
        stream_id: int,
        initial_term_id: int,
        active_term_id: int,
        term_offset: int,
        term_length: int,
        mtu_length: int,
        control_address: Sockaddr,
        source_address: Sockaddr,
    ) -> None:
        self.endpoint = endpoint
        self.session_id = session_id
        self.stream_id = stream_id
        self.initial_term_id = initial_term_id
        self.active_term_id = active_term_id
        self.term_offset = term_offset
        self.term_length = term_length
        self.mtu_length = mtu_length
        self.control_address = control_address
        self.source_address = source_address


MAX_QUEUED_IMAGE_REQUESTS = 256
"""Image requests waiting for the conductor at most: past it a SETUP is not queued (the sender
sends another), so a flood of SETUPs cannot grow the queue without bound."""


class DriverConductorProxy:
    """The receiver's handle on the conductor: image requests, run by ``handler``."""

    __slots__ = ("_handler", "queue")

    def __init__(self, handler: Callable[[ImageRequest], object]) -> None:
        self._handler = handler
        self.queue: CommandQueue = deque()

    def create_publication_image(
        self,
        endpoint: ReceiveChannelEndpoint,
        session_id: int,
        stream_id: int,
        initial_term_id: int,
        active_term_id: int,
        term_offset: int,
        term_length: int,
        mtu_length: int,
        control_address: Sockaddr,
        source_address: Sockaddr,
    ) -> bool:
        """Queue the request; False (nothing queued) while :data:`MAX_QUEUED_IMAGE_REQUESTS`
        wait already."""
        if len(self.queue) >= MAX_QUEUED_IMAGE_REQUESTS:
            return False
        request = ImageRequest(
            endpoint,
            session_id,
            stream_id,
            initial_term_id,
            active_term_id,
            term_offset,
            term_length,
            mtu_length,
            control_address,
            source_address,
        )
        self.queue.append((self._handler, (request,)))
        return True
