"""``QueueHolders``: which member of a consumer group holds each queue, for hand-overs.

The broker's half of a rebalance hand-over (RocketMQ's ``RebalanceLockManager``, Kafka's
partition revocation): a consumer that is given a queue *acquires* it before its first pull; it
is granted the queue when nobody holds it, it holds it already, the holder is no longer a live
member of the group (it left, or its heartbeats stopped), or it forces the take-over (a live
holder that did not let go in time). A consumer that loses a queue commits its consumed offset
and *releases* it in the same call, so the new owner, granted next, starts at exactly that
offset: nothing is delivered twice and nobody waits a fixed delay.

Pure: no I/O, no clock and no lock (callers serialise, the broker under its membership lock).
Queues are any hashable key (the broker's ``(topic, queue_id)``, a test broker's queue).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

__all__ = ["QueueHolders"]


class QueueHolders:
    """Group -> queue -> the client id holding it (see the module doc)."""

    __slots__ = ("_groups",)

    def __init__(self) -> None:
        self._groups: dict[str, dict[Hashable, str]] = {}

    def acquire(
        self,
        group: str,
        queue: Hashable,
        client_id: str,
        is_member: Callable[[str], bool],
        force: bool = False,
    ) -> str:
        """Make ``client_id`` the holder of ``queue`` unless another client that
        ``is_member`` of ``group`` holds it (``force`` takes it anyway). Returns ``""`` when
        ``client_id`` holds it now, else the live holder's id."""
        holders = self._groups.setdefault(group, {})
        holder = holders.get(queue, "")
        if holder and holder != client_id and not force and is_member(holder):
            return holder
        holders[queue] = client_id
        return ""

    def release(self, group: str, queue: Hashable, client_id: str) -> bool:
        """``client_id`` lets go of ``queue``; False (and nothing changed) when another
        client holds it (it was forced over) or nobody does."""
        holders = self._groups.get(group)
        if holders is None or holders.get(queue) != client_id:
            return False
        del holders[queue]
        if not holders:
            del self._groups[group]
        return True

    def forget(self, group: str, client_id: str) -> int:
        """``client_id`` left ``group``: it holds none of the group's queues any more; how
        many it held."""
        holders = self._groups.get(group)
        if holders is None:
            return 0
        held = [queue for queue, holder in holders.items() if holder == client_id]
        for queue in held:
            del holders[queue]
        if not holders:
            del self._groups[group]
        return len(held)

    def holder(self, group: str, queue: Hashable) -> str:
        """Who holds ``queue`` in ``group`` (``""``: nobody)."""
        return self._groups.get(group, {}).get(queue, "")
