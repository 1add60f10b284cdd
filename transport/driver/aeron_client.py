"""``AeronClient``: the driver's record of one client process, and its liveness.

Aeron's ``aeron_client_t``. The driver learns of a client from its first command (any command
that adds a resource), allocates its ``client-heartbeat`` counter (type 11, key = client id)
and announces it with ON_COUNTER_READY (correlation id = client id). The client stamps that
counter with the epoch time in ms (and may send CLIENT_KEEPALIVE, which does the same through
the driver). On each timer tick the conductor checks it: a client whose heartbeat is older than
the liveness timeout has reached its end of life and is removed with everything it holds.
CLIENT_CLOSE sets the heartbeat to 0 so the next tick removes it without counting a timeout.
After a stall of the driver itself (:meth:`AeronClient.extend_liveness`) a client has a whole
liveness timeout from the stall's end before its heartbeat is judged stale: the driver saw
nothing meanwhile, and a client in the same stopped process could not stamp either.
"""

from __future__ import annotations

from typing import Protocol

from aeromq.transport.concurrent.atomic_counter import AtomicCounter

__all__ = ["AeronClient", "CounterLink", "ManagedPublication", "PublicationLink"]


class ManagedPublication(Protocol):
    """What a client's link needs of a publication, whatever its media."""

    def decref(self) -> None:
        """Release one link; the last one ends the stream."""

    def revoke(self) -> None:
        """Mark the log revoked (REMOVE_PUBLICATION with the revoke flag)."""


class PublicationLink:
    """A client's hold on a publication: the registration id of its ADD_*PUBLICATION."""

    __slots__ = ("publication", "registration_id")

    def __init__(self, registration_id: int, publication: ManagedPublication) -> None:
        self.registration_id = registration_id
        self.publication = publication


class CounterLink:
    """A counter the client added with ADD_COUNTER."""

    __slots__ = ("counter_id", "registration_id")

    def __init__(self, registration_id: int, counter_id: int) -> None:
        self.registration_id = registration_id
        self.counter_id = counter_id


class AeronClient:
    """One client (see module)."""

    __slots__ = (
        "client_id",
        "closed_by_command",
        "counter_links",
        "grace_from_ms",
        "heartbeat",
        "liveness_timeout_ms",
        "publication_links",
        "reached_end_of_life",
    )

    def __init__(
        self, client_id: int, heartbeat: AtomicCounter, liveness_timeout_ms: int, now_ms: int
    ) -> None:
        self.client_id = client_id
        self.heartbeat = heartbeat
        self.liveness_timeout_ms = liveness_timeout_ms
        self.closed_by_command = False
        self.reached_end_of_life = False
        self.publication_links: list[PublicationLink] = []
        self.counter_links: list[CounterLink] = []
        self.grace_from_ms = 0
        """The end of the driver's last stall (:meth:`extend_liveness`), 0 before any."""
        heartbeat.set_ordered(now_ms)

    def on_keepalive(self, now_ms: int) -> None:
        self.heartbeat.set_ordered(now_ms)

    def on_close(self) -> None:
        """CLIENT_CLOSE: end of life at the next check, not counted as a timeout."""
        self.closed_by_command = True
        self.heartbeat.set_ordered(0)

    def extend_liveness(self, now_ms: int) -> None:
        """The driver stalled until ``now_ms``: judge the heartbeat from then on (see module);
        a client closed by command is not kept."""
        self.grace_from_ms = now_ms

    def check_liveness(self, now_ms: int) -> bool:
        """True (once) when the heartbeat has gone stale: the client's end of life."""
        if self.reached_end_of_life:
            return False
        last_ms = self.heartbeat.get()
        if not self.closed_by_command:
            last_ms = max(last_ms, self.grace_from_ms)
        if now_ms > last_ms + self.liveness_timeout_ms:
            self.reached_end_of_life = True
            return True
        return False

    def __repr__(self) -> str:
        return f"AeronClient(client_id={self.client_id}, heartbeat_ms={self.heartbeat.get_weak()})"
