"""Publications of replication added without waiting for the media driver.

The replication agent runs on its embedded driver's network thread (``agent``): a blocking
``Aeron.add_exclusive_publication`` there would wait for the driver's conductor, which runs on
that same thread, until the driver timeout. So the leader (a publication per follower) and a
follower (one to its leader) send the ADD and take the publication on a later duty cycle, when
the conductor has answered (:class:`PendingPublication`; the conductor runs first in each of
that thread's cycles, so usually the next). A publication still pending when its owner lets go
of it is handed to a :class:`PublicationReaper`, which closes it once the driver answered, so
none is left open behind a role change.

**Offers on the driver's own thread wake nothing** (``quiet``). A UDP publication of a client
whose driver runs in this process is a ``WakingExclusivePublication``: each offer ends the
driver's network park (an ``eventfd`` write), so that another thread's frame goes out at once.
The agent on the driver's network thread offers in the duty cycle whose sender runs next (it
sends what was offered), so that wake only ended the thread's next park at once: an empty duty
cycle of the whole driver a round on every member (traced: the ``unpark`` by a wake right after
each broker's ``park``, ``bench/_round_trace.py``). A quiet publication's offers do not wake;
whoever offers on it from another thread (a follower's fsync thread, its ACK) wakes the driver
itself, as before.

Caller: ``LeaderReplicator``, ``ReplicaFetcher`` and the replication agent that owns the
reaper, all on the agent's thread. Affects: the Aeron client's publications.
"""

from __future__ import annotations

import logging

from aeromq.transport import RegistrationError
from aeromq.transport.client import Aeron, ExclusivePublication
from aeromq.transport.client.waking_publications import WakingExclusivePublication

__all__ = ["PendingPublication", "PublicationReaper"]

_log = logging.getLogger(__name__)


class PendingPublication:
    """An exclusive publication on ``channel``/``stream_id`` being added (see module)."""

    __slots__ = ("_aeron", "channel", "publication", "quiet", "registration_id", "stream_id")

    def __init__(self, aeron: Aeron, channel: str, stream_id: int, quiet: bool = False) -> None:
        self._aeron = aeron
        self.channel = channel
        self.stream_id = stream_id
        self.quiet = quiet
        """Its offers do not wake the driver's sender (see module): the owner offers on the
        driver's network thread, before the sender's turn in the same duty cycle."""
        self.registration_id = aeron.async_add_exclusive_publication(channel, stream_id)
        self.publication: ExclusivePublication | None = None
        """The publication once the driver answered, else None."""

    def poll(self) -> ExclusivePublication | None:
        """The publication, None while the driver has not answered; raises the driver's
        ``RegistrationError`` if it refused."""
        publication = self.publication
        if publication is None:
            publication = self.publication = self._aeron.get_exclusive_publication(
                self.registration_id
            )
            if self.quiet and isinstance(publication, WakingExclusivePublication):
                publication.wake_sender = _no_wake
        return publication

    def __repr__(self) -> str:
        state = "pending" if self.publication is None else "added"
        return (
            f"PendingPublication(channel={self.channel!r}, stream_id={self.stream_id}, "
            f"registration_id={self.registration_id}, {state})"
        )


def _no_wake() -> None:
    return None


class PublicationReaper:
    """Closes publications their owner let go of, at once or once the driver answered."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: list[PendingPublication] = []

    @property
    def pending(self) -> int:
        """How many wait for the driver's answer to be closed."""
        return len(self._pending)

    def release(self, pending: PendingPublication) -> None:
        """Close ``pending``'s publication now if it has one, else once it has one."""
        if not self._close(pending):
            self._pending.append(pending)

    def do_work(self) -> int:
        """Close those the driver has answered for; the number closed."""
        if not self._pending:
            return 0
        before = len(self._pending)
        self._pending = [pending for pending in self._pending if not self._close(pending)]
        return before - len(self._pending)

    def close(self) -> None:
        """Forget those still pending (the client closes them with itself)."""
        self._pending.clear()

    @staticmethod
    def _close(pending: PendingPublication) -> bool:
        """Whether ``pending`` is done with: closed, or refused by the driver."""
        try:
            publication = pending.poll()
        except RegistrationError as error:
            _log.info("replication publication refused as it was let go: %s", error)
            return True
        if publication is None:
            return False
        publication.close()
        return True
