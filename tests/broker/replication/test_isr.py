"""The leader's ISR bookkeeping on its own: the ack rule's high watermark over the counted set,
the union while a change is pending, min_isr, and when a follower is shrunk out or let in."""

from __future__ import annotations

from aeromq.broker.replication.isr import FollowerProgress, IsrTracker

MS = 1_000_000
LAG_MAX_NS = 1000 * MS


def _acked(
    member_id: int, fsynced: int, now_ns: int = 0, leo: int | None = None
) -> FollowerProgress:
    progress = FollowerProgress(member_id)
    progress.on_ack(fsynced, fsynced if leo is None else leo, fsynced, now_ns)
    return progress


def test_should_take_the_lowest_fsynced_offset_of_the_isr_with_the_leaders_own() -> None:
    isr = IsrTracker(0, (0, 1, 2), min_isr=2)
    followers = {1: _acked(1, 700), 2: _acked(2, 900)}

    assert isr.high_watermark(800, followers) == 700
    assert isr.high_watermark(600, followers) == 600


def test_should_hold_the_high_watermark_while_a_counted_follower_has_not_acked() -> None:
    isr = IsrTracker(0, (0, 1, 2), min_isr=2)

    assert isr.high_watermark(800, {1: _acked(1, 700), 2: FollowerProgress(2)}) == 0
    assert isr.high_watermark(800, {1: _acked(1, 700)}) == 0


def test_should_count_the_union_while_a_change_is_pending() -> None:
    isr = IsrTracker(0, (0, 1, 2), min_isr=2)
    followers = {1: _acked(1, 900), 2: _acked(2, 100)}

    isr.request((0, 1))  # a shrink of 2: not counted out before etcd has it

    assert isr.counted == {0, 1, 2}
    assert isr.high_watermark(1000, followers) == 100

    isr.commit((0, 1))

    assert isr.pending is None
    assert isr.high_watermark(1000, followers) == 900


def test_should_count_an_expanded_member_from_the_request_on() -> None:
    isr = IsrTracker(0, (0, 1), min_isr=2)
    followers = {1: _acked(1, 900), 2: _acked(2, 400)}

    isr.request((0, 1, 2))

    assert isr.high_watermark(1000, followers) == 400  # counted before the commit
    assert isr.committed == {0, 1}


def test_should_need_min_isr_members_in_the_committed_set() -> None:
    isr = IsrTracker(0, (0, 1), min_isr=2)
    assert isr.enough

    isr.request((0,))
    assert isr.enough  # still committed as two

    isr.commit((0,))
    assert not isr.enough


def test_should_shrink_a_follower_that_lags_or_left_and_expand_one_that_caught_up() -> None:
    isr = IsrTracker(0, (0, 1, 2), min_isr=2)
    now = 5000 * MS
    followers = {
        1: _acked(1, 1000, now_ns=now - 10 * MS),
        2: _acked(2, 200, now_ns=now - 2000 * MS),  # last caught up 2 s ago
    }

    assert isr.wanted(followers, {0, 1, 2}, 1000, now, LAG_MAX_NS) == {0, 1}
    assert isr.wanted(followers, {0, 2}, 1000, now, LAG_MAX_NS) == {0}  # 1's key is gone

    back = IsrTracker(0, (0, 1), min_isr=2)
    caught_up = {1: _acked(1, 1000, now_ns=now), 3: _acked(3, 1000, now_ns=now)}

    assert back.wanted(caught_up, {0, 1, 3}, 1000, now, LAG_MAX_NS) == {0, 1, 3}
    assert back.wanted(caught_up, {0, 1, 3}, 1001, now, LAG_MAX_NS) is None  # 3 below the HW


def test_should_ask_for_nothing_while_a_change_is_pending() -> None:
    isr = IsrTracker(0, (0, 1, 2), min_isr=2)
    isr.request((0, 1))

    assert isr.wanted({}, {0}, 0, 10 * LAG_MAX_NS, LAG_MAX_NS) is None


def test_should_call_a_follower_caught_up_when_it_reached_the_leaders_end_of_the_last_ack() -> None:
    progress = FollowerProgress(1)
    progress.on_ack(100, 100, 500, now_ns=1)  # behind the leader's 500
    assert progress.caught_up_ns == 0

    progress.on_ack(500, 500, 800, now_ns=2)  # reached what the leader had at the last ACK
    assert progress.caught_up_ns == 2
    assert (progress.fsynced, progress.leo, progress.leader_leo_at_last_ack) == (500, 500, 800)
