"""The leader's in-sync replicas and high watermark, with no I/O: per-follower progress, the
ack rule, and when to shrink or expand the ISR.

**Ack rule.** The high watermark (HW) is the minimum over the counted ISR of each member's
fsynced offset, the leader's own flushed offset included; a send completes once the HW passes
its end. The HW moves only while the committed ISR has at least ``min_isr`` members (below,
sends are refused before they are appended, and those already appended wait: they time out
with their outcome unknown rather than being acknowledged on fewer copies than promised). It
never moves back.

**ISR changes go through etcd first.** A change is requested (the controller writes it) and
counted only once committed; while it is pending the counted set is the union of the
committed and the requested ones, so a shrink never counts early and an expand never drops a
member early. Shrink: a follower whose member key is gone, or that has not caught up with the
leader's log end within ``replica_lag_max_ms`` (caught up: an ACK whose LEO reached the
leader's LEO as of the ACK before it, Kafka's rule). Expand: a live follower that has fetched
in this epoch and whose fsynced offset reached the HW.

Caller: the leader's replicator (``broker.replication.replicator``), on the agent's thread.
Affects: nothing (pure).
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass

__all__ = ["FollowerProgress", "IsrTracker"]


@dataclass(slots=True)
class FollowerProgress:
    """What the leader knows of one follower in its epoch: where to send from (None until it
    FETCHes), what it has fsynced and written, and when it was last caught up and heard from."""

    member_id: int
    send_offset: int | None = None
    fsynced: int = 0
    leo: int = 0
    acked: bool = False
    caught_up_ns: int = 0
    last_heard_ns: int = 0
    leader_leo_at_last_ack: int = -1  # none before the first ACK
    last_sent_ns: int = 0

    def on_ack(self, fsynced: int, leo: int, leader_leo: int, now_ns: int) -> None:
        """An ACK of this epoch: the follower fsynced ``fsynced`` and wrote ``leo``; the leader
        is at ``leader_leo`` now."""
        self.fsynced = max(self.fsynced, fsynced)
        self.leo = leo
        self.acked = True
        self.last_heard_ns = now_ns
        previous = self.leader_leo_at_last_ack
        if leo >= leader_leo or (previous >= 0 and leo >= previous):
            self.caught_up_ns = now_ns
        self.leader_leo_at_last_ack = leader_leo


class IsrTracker:
    """The ISR of the leader ``leader_id`` (see module)."""

    def __init__(self, leader_id: int, committed: Iterable[int], min_isr: int) -> None:
        self.leader_id = leader_id
        self.min_isr = min_isr
        self.committed: frozenset[int] = frozenset(committed)
        self.pending: frozenset[int] | None = None
        self.counted: frozenset[int] = self.committed

    def commit(self, isr: Iterable[int]) -> None:
        """etcd now holds ``isr`` (a snapshot): count it; a pending request it matches is
        done."""
        self.committed = frozenset(isr)
        if self.pending is not None and self.pending == self.committed:
            self.pending = None
        self._recount()

    def request(self, isr: Iterable[int]) -> None:
        """A change to ``isr`` was asked of etcd: count the union until it is committed."""
        wanted = frozenset(isr)
        self.pending = None if wanted == self.committed else wanted
        self._recount()

    def _recount(self) -> None:
        pending = self.pending
        self.counted = self.committed if pending is None else self.committed | pending

    @property
    def enough(self) -> bool:
        """Whether the committed ISR has at least ``min_isr`` members (sends are taken and the
        HW moves only then)."""
        return len(self.committed) >= self.min_isr

    def high_watermark(self, own_flushed: int, followers: dict[int, FollowerProgress]) -> int:
        """The ack rule's HW over the counted ISR (the caller keeps it monotonic and applies
        it only when :attr:`enough`); a counted follower not heard in this epoch holds it at 0."""
        hw = own_flushed
        for member in self.counted:
            if member == self.leader_id:
                continue
            progress = followers.get(member)
            if progress is None or not progress.acked:
                return 0
            if progress.fsynced < hw:
                hw = progress.fsynced
        return hw

    def wanted(
        self,
        followers: dict[int, FollowerProgress],
        live: Set[int],
        hw: int,
        now_ns: int,
        lag_max_ns: int,
    ) -> frozenset[int] | None:
        """The ISR the leader should ask for now (None: no change, or one already pending)."""
        if self.pending is not None:
            return None
        isr = set(self.committed)
        for member in self.committed:
            if member == self.leader_id:
                continue
            progress = followers.get(member)
            lagging = progress is None or now_ns - progress.caught_up_ns > lag_max_ns
            if member not in live or lagging:
                isr.discard(member)
        for member, progress in followers.items():
            if (
                member not in isr
                and member in live
                and progress.acked
                and progress.fsynced >= hw
                and now_ns - progress.caught_up_ns <= lag_max_ns
            ):
                isr.add(member)
        isr.add(self.leader_id)
        wanted = frozenset(isr)
        return None if wanted == self.committed else wanted
