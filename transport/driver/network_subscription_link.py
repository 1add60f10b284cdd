"""``NetworkSubscriptionLink``: a client's UDP subscription as the driver tracks it.

Aeron's ``aeron_subscription_link_t`` for a network subscription: the registration id (the
ADD_SUBSCRIPTION correlation id), the owning client, the stream, the channel as the client gave
it, the receive endpoint it shares with other subscriptions of the same channel, the channel's
parameters (``session-id``, ``tether``, ``sparse``, ``reliable``, ``rejoin``) and the images it
is linked to, each with the sub-pos counter the driver allocated for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aeromq.transport.driver.media.receive_channel_endpoint import ReceiveChannelEndpoint
    from aeromq.transport.driver.publication_image import PublicationImage
    from aeromq.transport.driver.uri_params import SubscriptionParams

__all__ = ["NetworkSubscriptionLink"]


class NetworkSubscriptionLink:
    """One UDP subscription (see module). ``linked`` maps each image to its sub-pos id."""

    __slots__ = (
        "channel",
        "client_id",
        "endpoint",
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
        endpoint: ReceiveChannelEndpoint,
        params: SubscriptionParams,
    ) -> None:
        self.registration_id = registration_id
        self.client_id = client_id
        self.stream_id = stream_id
        self.channel = channel
        self.endpoint = endpoint
        self.session_id = params.session_id
        self.is_tether = params.is_tether
        self.is_sparse = params.is_sparse
        self.is_reliable = params.is_reliable
        self.is_rejoin = params.is_rejoin
        self.linked: dict[PublicationImage, int] = {}

    def matches(self, stream_id: int, session_id: int) -> bool:
        """Whether an image of this stream and session belongs to this subscription."""
        return self.stream_id == stream_id and (
            self.session_id is None or self.session_id == session_id
        )

    def __repr__(self) -> str:
        return (
            f"NetworkSubscriptionLink(registration_id={self.registration_id}, client_id="
            f"{self.client_id}, stream_id={self.stream_id}, channel={self.channel!r})"
        )
