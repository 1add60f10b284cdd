"""``SubscriptionLink``: a client's subscription as the driver tracks it.

Aeron's ``aeron_subscription_link_t``: the registration id (the ADD_SUBSCRIPTION correlation id),
the owning client, the stream and the channel's parameters, and the publications it is linked
to, each with the sub-pos counter the driver allocated for it. An IPC subscription links to
every IPC publication of its stream (and session, when the channel pins ``session-id``), in
whichever order the two appear.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aeromq.transport.driver.ipc_publication import IpcPublication
    from aeromq.transport.driver.uri_params import SubscriptionParams

__all__ = ["SubscriptionLink"]


class SubscriptionLink:
    """One subscription (see module). ``linked`` maps each publication to its sub-pos id."""

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
        self.linked: dict[IpcPublication, int] = {}

    def matches(self, stream_id: int, session_id: int) -> bool:
        """Whether a publication of this stream and session belongs to this subscription."""
        return self.stream_id == stream_id and (
            self.session_id is None or self.session_id == session_id
        )

    def is_linked(self, publication: IpcPublication) -> bool:
        return publication in self.linked

    def __repr__(self) -> str:
        return (
            f"SubscriptionLink(registration_id={self.registration_id}, client_id="
            f"{self.client_id}, stream_id={self.stream_id}, channel={self.channel!r})"
        )
