"""A leader's self-fencing on its lease: it acts (appends, acknowledges) only while its lease is
surely valid for a margin more, and stops at once when that no longer holds.

The lease is known valid until ``deadline = monotonic time the last answered keep-alive was
sent + TTL`` (etcd renewed it after that send, so etcd's expiry is never earlier). Past
``deadline - margin`` (TTL/4) the leader refuses sends (``NOT_LEADER``), stops advancing the
high watermark, fails the sends that wait for it (outcome unknown), and gives up leadership
through etcd; it rejoins as a follower. The margin covers the clock read and the work between
a check and the act it guards.

Safety does not rest on the lease alone: the next leader is a member of this leader's ISR and
refuses frames of an older epoch, so a deposed leader can never again complete an ack for a
new append (its ISR needs the new leader's fsync). The fence shortens the time a paused or cut
off leader can answer at all.

Caller: the replication agent (every duty cycle and right before the high watermark moves),
the send path (every send in group mode). Affects: nothing; it reads the lease's clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["SelfFence"]

_log = logging.getLogger(__name__)

LeaseCheck = Callable[[float | None], bool]
"""``lease_valid(now_s)``: whether the lease is valid for the margin more
(``Membership.lease_valid``)."""


class SelfFence:
    """The fence of one member: :meth:`may_act` while leading; :meth:`check` on the agent's
    thread turns the first failure into :attr:`fenced` (once per term as leader)."""

    def __init__(self, lease_valid: LeaseCheck, clock_s: Callable[[], float] = time.monotonic):
        self._lease_valid = lease_valid
        self._clock_s = clock_s
        self.fenced = False
        """Whether the fence fired since :meth:`arm` (the leader must stop)."""
        self.times_fenced = 0
        """How often the fence fired (a counter for the operator)."""

    def arm(self) -> None:
        """A new term as leader starts: the fence watches again."""
        self.fenced = False

    def may_act(self) -> bool:
        """Whether a leader may append or acknowledge now (cheap: one clock read)."""
        return not self.fenced and self._lease_valid(self._clock_s())

    def check(self) -> bool:
        """Fire the fence if the lease is no longer surely valid; True when it fired now."""
        if self.fenced or self._lease_valid(self._clock_s()):
            return False
        self.fenced = True
        self.times_fenced += 1
        return True
