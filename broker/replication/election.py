"""The election of a group's leader as a state machine with no I/O: it is shown the group as
etcd holds it (a :class:`GroupView`) and the time, and answers what to do next (an action the
driver carries out against etcd, then reports back).

An election is needed when ``state.leader`` is null or its ``members/<leader>`` key is gone,
and it is run by every live member whose own lease is valid::

    IDLE ──needed──> POSTING ──position put──> WAITING ──every live ISR member posted,
      ^                 ^                         │      or election_wait_ms passed
      │                 │                         v
      │                 │        I rank first: PROPOSING (CAS of state) ──> next state
      │                 └── election_timeout_ms ─ else: DEFERRING (the best one proposes)
      └──────── any new state (its revision changed): start again ──────────────────┘

1. put ``positions/<me>`` = (last epoch of my epoch file, LEO, the state's epoch);
2. wait until every live member of ``state.isr`` has a position for this state's epoch, at most
   ``election_wait_ms``;
3. candidates are the live members of ``state.isr`` (or, with none and ``unclean_election``,
   every live member), ranked by (epoch desc, LEO desc, id asc), those without a position
   last; if I rank first, compare-and-swap ``state`` to ``{leader: me, epoch: epoch + 1, isr:
   [me] + the other live ISR members}`` on the revision read (an unclean winner's ISR is itself
   alone); else wait for a new state, and after ``election_timeout_ms`` without one start again
   (the best candidate may have died).

Every member in the committed ISR holds every acknowledged byte (the ack rule), so any live
one is a safe leader; ranking by log only keeps the most of what was not yet acknowledged.

Caller: the group controller (``broker.replication.controller``), which feeds it etcd's watch
events and a clock and runs its actions; unit-tested on its own. Affects: nothing (pure).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from aeromq.broker.replication.group_state import GroupState, VersionedState
from aeromq.broker.replication.membership import Position

__all__ = [
    "Election",
    "ElectionConfig",
    "ElectionPhase",
    "GroupView",
    "ProposeState",
    "PutPosition",
    "election_needed",
    "rank_candidates",
]

_log = logging.getLogger(__name__)


class ElectionPhase(enum.Enum):
    """Where a member is in an election (see module)."""

    IDLE = "idle"
    POSTING = "posting"
    WAITING = "waiting"
    PROPOSING = "proposing"
    DEFERRING = "deferring"


@dataclass(frozen=True, slots=True)
class ElectionConfig:
    """One member's election settings (times in milliseconds)."""

    member_id: int
    election_wait_ms: int = 300
    election_timeout_ms: int = 1000
    unclean_election: bool = False


@dataclass(frozen=True, slots=True)
class GroupView:
    """The group as etcd holds it: the state (None before it exists), the ids of the members
    whose key exists (``live``) and the positions put for elections."""

    state: VersionedState | None
    live: frozenset[int] = frozenset()
    positions: Mapping[int, Position] = field(default_factory=dict)


class PutPosition(NamedTuple):
    """Action: put ``positions/<me>`` = ``position``; report with :meth:`Election.position_put`."""

    position: Position


class ProposeState(NamedTuple):
    """Action: compare-and-swap ``state`` from ``expected`` to ``new``; report with
    :meth:`Election.proposed`."""

    expected: VersionedState
    new: GroupState


Action = PutPosition | ProposeState


def election_needed(view: GroupView) -> bool:
    """Whether the group needs a leader: its state names none, or one whose key is gone."""
    if view.state is None:
        return False
    leader = view.state.state.leader
    return leader is None or leader not in view.live


def rank_candidates(candidates: frozenset[int], positions: Mapping[int, Position]) -> list[int]:
    """``candidates`` best first: by (epoch desc, LEO desc, id asc), those without a position
    last (by id)."""

    def key(member: int) -> tuple[int, int, int, int]:
        position = positions.get(member)
        if position is None:
            return (1, 0, 0, member)
        return (0, -position.epoch, -position.leo, member)

    return sorted(candidates, key=key)


class Election:
    """One member's side of its group's elections (see module)."""

    def __init__(self, config: ElectionConfig) -> None:
        self.config = config
        self.phase = ElectionPhase.IDLE
        self._revision = -1  # the state revision the election in progress is for
        self._deadline_ms = 0
        self.won = 0
        """Elections this member won (CAS succeeded)."""
        self.last_refusal = ""
        """Why the last election could not pick a leader ("" when it could)."""

    @property
    def deadline_ms(self) -> int | None:
        """When :meth:`step` must run again even without a new view (None: only on events)."""
        if self.phase in (ElectionPhase.WAITING, ElectionPhase.DEFERRING):
            return self._deadline_ms
        return None

    def step(
        self, view: GroupView, now_ms: int, alive: bool, position: tuple[int, int]
    ) -> Action | None:
        """What to do now, given ``view``; ``alive``: my lease is valid and my member key
        exists; ``position``: my (last epoch, LEO) now."""
        state = view.state
        if state is None or not alive or not election_needed(view):
            self.phase = ElectionPhase.IDLE
            return None
        if self.phase is ElectionPhase.IDLE or state.mod_revision != self._revision:
            return self._post(state, position)
        if self.phase is ElectionPhase.WAITING:
            return self._decide(view, state, now_ms)
        if self.phase is ElectionPhase.DEFERRING and now_ms >= self._deadline_ms:
            _log.info(
                "election: no new state within election_timeout_ms, standing again: "
                "member=%d state_epoch=%d",
                self.config.member_id,
                state.state.epoch,
            )
            return self._post(state, position)
        return None  # POSTING or PROPOSING: the driver reports; DEFERRING: wait

    def position_put(self, now_ms: int, ok: bool = True) -> None:
        """The driver put my position (``ok``) or failed to (then the next step tries again)."""
        if self.phase is not ElectionPhase.POSTING:
            return
        if ok:
            self.phase = ElectionPhase.WAITING
            self._deadline_ms = now_ms + self.config.election_wait_ms
        else:
            self.phase = ElectionPhase.IDLE

    def proposed(self, succeeded: bool, now_ms: int) -> None:
        """The driver's compare-and-swap won (``succeeded``) or lost; either way the new state
        comes as the next view (a lost one waits like a deferral, in case it does not)."""
        if self.phase is not ElectionPhase.PROPOSING:
            return
        if succeeded:
            self.won += 1
        self.phase = ElectionPhase.DEFERRING
        self._deadline_ms = now_ms + self.config.election_timeout_ms

    def _post(self, state: VersionedState, position: tuple[int, int]) -> PutPosition:
        self.phase = ElectionPhase.POSTING
        self._revision = state.mod_revision
        epoch, leo = position
        return PutPosition(Position(epoch, leo, state.state.epoch))

    def _decide(self, view: GroupView, state: VersionedState, now_ms: int) -> Action | None:
        current = state.state
        me = self.config.member_id
        positions = {
            member: position
            for member, position in view.positions.items()
            if position.election == current.epoch
        }
        live_isr = frozenset(member for member in current.isr if member in view.live)
        if not live_isr <= positions.keys() and now_ms < self._deadline_ms:
            return None  # some live ISR members have not posted yet
        candidates = live_isr
        unclean = False
        if not candidates and self.config.unclean_election:
            candidates, unclean = view.live, True
        self.phase = ElectionPhase.DEFERRING
        self._deadline_ms = now_ms + self.config.election_timeout_ms
        if not candidates:
            self.last_refusal = (
                f"no live member of the ISR ({','.join(map(str, current.isr)) or 'none'}) and "
                "unclean_election is off"
            )
            return None
        self.last_refusal = ""
        ranked = rank_candidates(candidates, positions)
        if ranked[0] != me:
            return None
        isr = (me,) if unclean else (me, *sorted(live_isr - {me}))
        self.phase = ElectionPhase.PROPOSING
        return ProposeState(state, current.with_leader(me, current.epoch + 1, isr))
