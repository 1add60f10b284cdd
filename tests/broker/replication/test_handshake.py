"""The truncation handshake between two epoch files: the leader's answer, the follower's point,
KIP-279's iteration over epochs the follower skipped, and epoch 0 (bytes before any epoch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeromq.broker.replication import EpochEntry, EpochFile, ReplicationError
from aeromq.broker.replication.handshake import EpochEnd, TruncationHandshake, epoch_end


def _epochs(directory: Path, entries: list[tuple[int, int]]) -> EpochFile:
    directory.mkdir(parents=True, exist_ok=True)
    epochs = EpochFile(directory)
    for epoch, start in entries:
        epochs.append(epoch, start)
    return epochs


def _shake(leader: EpochFile, leader_leo: int, follower: EpochFile, follower_leo: int) -> int:
    """Run the handshake to its end; returns the point."""
    handshake = TruncationHandshake(follower, follower_leo)
    for _ in range(10):
        point = handshake.answer(epoch_end(leader, leader_leo, handshake.question))
        if point is not None:
            return point
    raise AssertionError("the handshake did not end")


@pytest.mark.parametrize(
    ("leader", "leader_leo", "follower", "follower_leo", "point"),
    [
        # same history, the follower behind: nothing to truncate
        ([(1, 0), (2, 300)], 900, [(1, 0), (2, 300)], 500, 500),
        # the follower led epoch 2 further than the leader had it
        ([(1, 0), (2, 300), (3, 600)], 900, [(1, 0), (2, 300)], 800, 600),
        # KIP-279: the follower's epochs jump over the leader's epoch 2
        ([(1, 0), (2, 300)], 900, [(1, 0), (3, 500)], 700, 300),
        # the follower has no epoch at all (a fresh member)
        ([(1, 0)], 900, [], 0, 0),
        # bytes before any epoch on both sides (a single broker's log that joined a group)
        ([(1, 400)], 900, [], 600, 400),
        # an old leader that never wrote in its last epoch
        ([(1, 0), (4, 500)], 900, [(1, 0), (3, 500)], 500, 500),
    ],
    ids=["behind", "led-further", "skipped-epoch", "fresh", "epoch-0", "empty-epoch"],
)
def test_should_find_the_truncation_point(
    tmp_path: Path,
    leader: list[tuple[int, int]],
    leader_leo: int,
    follower: list[tuple[int, int]],
    follower_leo: int,
    point: int,
) -> None:
    leader_epochs = _epochs(tmp_path / "leader", leader)
    follower_epochs = _epochs(tmp_path / "follower", follower)

    assert _shake(leader_epochs, leader_leo, follower_epochs, follower_leo) == point


def test_should_answer_the_largest_epoch_at_or_below_and_its_end(tmp_path: Path) -> None:
    leader = _epochs(tmp_path, [(1, 0), (2, 300), (5, 600)])

    assert epoch_end(leader, 900, 5) == EpochEnd(5, 900)
    assert epoch_end(leader, 900, 4) == EpochEnd(2, 600)
    assert epoch_end(leader, 900, 1) == EpochEnd(1, 300)
    assert epoch_end(leader, 900, 0) == EpochEnd(0, 0)


def test_should_ask_again_with_a_lower_epoch_when_it_skipped_the_answer(tmp_path: Path) -> None:
    follower = _epochs(tmp_path, [(1, 0), (3, 500)])
    handshake = TruncationHandshake(follower, 700)

    assert handshake.question == 3
    assert handshake.answer(EpochEnd(2, 900)) is None
    assert (handshake.question, handshake.questions) == (1, 2)
    assert handshake.answer(EpochEnd(1, 300)) == 300
    assert handshake.point == 300


def test_should_refuse_an_answer_about_a_later_epoch(tmp_path: Path) -> None:
    handshake = TruncationHandshake(_epochs(tmp_path, [EpochEntry(2, 0)]), 10)

    with pytest.raises(ReplicationError, match="asked=2 answered=3"):
        handshake.answer(EpochEnd(3, 5))
