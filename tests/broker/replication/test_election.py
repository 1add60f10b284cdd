"""The election state machine on its own: driven by views of the group and a clock, it puts a
position, waits for the ISR's, proposes only when it ranks first, defers otherwise, stands
again after the timeout, refuses an unclean election unless asked, and goes idle once a live
leader is named."""

from __future__ import annotations

from aeromq.broker.replication.election import (
    Election,
    ElectionConfig,
    ElectionPhase,
    GroupView,
    ProposeState,
    PutPosition,
    election_needed,
    rank_candidates,
)
from aeromq.broker.replication.group_state import GroupState, VersionedState
from aeromq.broker.replication.membership import Position

LEADERLESS = VersionedState(GroupState(None, 4, (0, 1, 2), 2), 100)


def _view(
    state: VersionedState = LEADERLESS,
    live: tuple[int, ...] = (0, 1, 2),
    positions: dict[int, Position] | None = None,
) -> GroupView:
    return GroupView(state, frozenset(live), positions or {})


def _posted(election: Election, view: GroupView, now_ms: int, me: tuple[int, int]) -> Position:
    action = election.step(view, now_ms, True, me)
    assert isinstance(action, PutPosition)
    election.position_put(now_ms)
    return action.position


def test_should_need_an_election_without_a_leader_or_with_a_dead_one() -> None:
    led = VersionedState(GroupState(1, 4, (0, 1, 2), 2), 7)

    assert election_needed(_view())
    assert election_needed(_view(led, live=(0, 2)))
    assert not election_needed(_view(led, live=(0, 1, 2)))
    assert not election_needed(GroupView(None))


def test_should_rank_by_epoch_then_log_end_then_id_with_the_unknown_last() -> None:
    positions = {
        0: Position(3, 900, 4),
        1: Position(4, 100, 4),
        2: Position(4, 100, 4),
        3: Position(4, 50, 4),
    }

    assert rank_candidates(frozenset({0, 1, 2, 3, 4}), positions) == [1, 2, 3, 0, 4]


def test_should_put_its_position_for_this_state_epoch_first() -> None:
    election = Election(ElectionConfig(0))

    action = election.step(_view(), 0, True, (3, 500))

    assert action == PutPosition(Position(3, 500, 4))
    assert election.phase is ElectionPhase.POSTING
    assert election.step(_view(), 1, True, (3, 500)) is None  # until the put is reported


def test_should_propose_itself_when_it_ranks_first_once_every_live_isr_member_posted() -> None:
    election = Election(ElectionConfig(1))
    mine = _posted(election, _view(), 0, (4, 800))
    partial = _view(positions={1: mine, 0: Position(4, 700, 4)})

    assert election.step(partial, 10, True, (4, 800)) is None  # 2 has not posted yet

    whole = _view(positions={1: mine, 0: Position(4, 700, 4), 2: Position(3, 900, 4)})
    action = election.step(whole, 20, True, (4, 800))

    assert action == ProposeState(LEADERLESS, GroupState(1, 5, (1, 0, 2), 2))
    assert election.phase is ElectionPhase.PROPOSING


def test_should_decide_without_a_silent_member_after_the_wait() -> None:
    election = Election(ElectionConfig(2, election_wait_ms=300))
    mine = _posted(election, _view(), 0, (4, 800))
    view = _view(positions={2: mine})

    assert election.step(view, 299, True, (4, 800)) is None
    action = election.step(view, 300, True, (4, 800))

    assert isinstance(action, ProposeState)
    assert action.new.leader == 2 and action.new.isr == (2, 0, 1)


def test_should_defer_to_a_better_candidate_and_stand_again_after_the_timeout() -> None:
    election = Election(ElectionConfig(0, election_timeout_ms=1000))
    mine = _posted(election, _view(), 0, (4, 100))
    view = _view(positions={0: mine, 1: Position(4, 500, 4), 2: Position(4, 200, 4)})

    assert election.step(view, 10, True, (4, 100)) is None
    assert election.phase is ElectionPhase.DEFERRING
    assert election.deadline_ms == 1010
    assert election.step(view, 1009, True, (4, 100)) is None

    again = election.step(view, 1010, True, (4, 100))

    assert again == PutPosition(Position(4, 100, 4))


def test_should_ignore_positions_put_for_an_earlier_election() -> None:
    election = Election(ElectionConfig(0, election_wait_ms=300))
    mine = _posted(election, _view(), 0, (4, 100))
    stale = Position(9, 9999, 3)  # member 1's, from the election of state epoch 3
    view = _view(live=(0, 1), positions={0: mine, 1: stale})

    assert election.step(view, 10, True, (4, 100)) is None  # 1 has not posted for epoch 4
    action = election.step(view, 300, True, (4, 100))

    assert isinstance(action, ProposeState) and action.new.leader == 0


def test_should_refuse_an_unclean_election_unless_configured() -> None:
    outside = VersionedState(GroupState(None, 4, (1,), 1), 100)  # only 1 in sync, and 1 is dead
    clean = Election(ElectionConfig(0, election_wait_ms=0))
    unclean = Election(ElectionConfig(0, election_wait_ms=0, unclean_election=True))
    view = _view(outside, live=(0, 2))

    for election in (clean, unclean):
        _posted(election, view, 0, (4, 100))
    refused = clean.step(view, 1, True, (4, 100))
    action = unclean.step(view, 1, True, (4, 100))

    assert refused is None and "unclean_election is off" in clean.last_refusal
    assert action == ProposeState(outside, GroupState(0, 5, (0,), 1))


def test_should_go_idle_when_a_live_leader_is_named_or_when_it_is_not_alive() -> None:
    election = Election(ElectionConfig(0))
    _posted(election, _view(), 0, (4, 100))
    led = VersionedState(GroupState(1, 5, (1, 0), 2), 101)

    assert election.step(_view(led), 5, True, (4, 100)) is None
    assert election.phase is ElectionPhase.IDLE
    assert election.step(_view(), 6, False, (4, 100)) is None  # my lease is not valid
    assert election.phase is ElectionPhase.IDLE


def test_should_start_again_when_the_state_changes_under_an_election() -> None:
    election = Election(ElectionConfig(0))
    _posted(election, _view(), 0, (4, 100))
    newer = VersionedState(GroupState(None, 5, (0, 1, 2), 2), 150)

    action = election.step(_view(newer), 10, True, (5, 100))

    assert action == PutPosition(Position(5, 100, 5))


def test_should_count_a_won_proposal_and_wait_for_the_state_after_it() -> None:
    election = Election(ElectionConfig(0, election_wait_ms=0))
    _posted(election, _view(live=(0,)), 0, (4, 100))
    action = election.step(_view(live=(0,)), 1, True, (4, 100))
    assert isinstance(action, ProposeState)

    election.proposed(True, 2)

    assert election.won == 1
    assert election.phase is ElectionPhase.DEFERRING
