"""``NetworkSubscriptionLink``: a client's UDP subscription as the driver tracks it.

A :class:`~transport.driver.subscription_link.SubscriptionLink` over network images, with the
receive endpoint it shares with the other subscriptions of the same channel, and the doorbell
its channel names (``doorbell``: the receiver rings it when data comes to one of its images).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aeromq.transport.driver.subscription_link import SubscriptionLink
from aeromq.transport.driver.udp.publication_image import PublicationImage

if TYPE_CHECKING:
    from aeromq.transport.concurrent.doorbell import Doorbell
    from aeromq.transport.driver.udp.receive_channel_endpoint import ReceiveChannelEndpoint
    from aeromq.transport.driver.uri_params import SubscriptionParams

__all__ = ["NetworkSubscriptionLink"]


class NetworkSubscriptionLink(SubscriptionLink[PublicationImage]):
    """One UDP subscription (see module). ``linked`` maps each image to its sub-pos id;
    ``max_term_length`` is its channel's ``max-term-length`` (None: the driver's cap);
    ``doorbell`` the one its channel's ``doorbell`` names (None: none)."""

    __slots__ = ("doorbell", "endpoint", "max_term_length")

    def __init__(
        self,
        registration_id: int,
        client_id: int,
        stream_id: int,
        channel: str,
        endpoint: ReceiveChannelEndpoint,
        params: SubscriptionParams,
        doorbell: Doorbell | None = None,
    ) -> None:
        super().__init__(registration_id, client_id, stream_id, channel, params)
        self.endpoint = endpoint
        self.max_term_length = params.max_term_length
        self.doorbell = doorbell
