"""The truncation handshake of a follower that starts following a leader, as a state machine
with no I/O (Kafka's KIP-101 and KIP-279, RocketMQ's epoch handshake), and the leader's answer.

The follower asks the leader ``ReplicaEpochEnd(F)`` with F its last epoch; the leader answers
the largest epoch it has at or below F and where its bytes of epochs up to that one end
(:func:`epoch_end`). If the follower has that very epoch, it truncates to the lower of the two
ends (:meth:`EpochFile.truncation_point`); if its epochs jump over it, it asks again with its own
largest epoch below the answer: one step would keep divergent bytes (follower ``1@0 3@500``,
leader ``1@0 2@300``: the point is 300, not 500). Each question names a lower epoch than the
last, so the handshake ends.

Epoch 0 is the bytes written before any epoch (a log a single broker wrote before it joined a
group): both sides treat them as an epoch that starts at 0, so a follower without epochs asks
about epoch 0 and truncates to the leader's end of it.

Caller: the follower's fetcher (``broker.replication.fetcher``) asks through a gRPC future and
feeds the answers in; the gRPC servicer (``broker.grpc``) answers with :func:`epoch_end`.
Affects: nothing (pure; the fetcher truncates).
"""

from __future__ import annotations

from typing import NamedTuple

from aeromq.broker.replication._errors import ReplicationError
from aeromq.broker.replication.epoch_file import EpochFile

__all__ = ["EpochEnd", "TruncationHandshake", "epoch_end"]


class EpochEnd(NamedTuple):
    """The leader's answer: its largest ``epoch`` at or below the one asked about (0: none)
    and the ``end_offset`` of its bytes of epochs up to that one."""

    epoch: int
    end_offset: int


def epoch_end(epochs: EpochFile, leo: int, asked: int) -> EpochEnd:
    """The leader's answer to ``ReplicaEpochEnd(asked)`` from its ``epochs`` and log end
    offset ``leo``."""
    found = epochs.largest_at_most(asked)
    epoch = 0 if found is None else found.epoch
    return EpochEnd(epoch, min(epochs.end_offset_of(epoch, leo), leo))


class TruncationHandshake:
    """One follower's handshake over its ``epochs`` and log end offset ``leo``:
    :attr:`question` is the epoch to ask about; :meth:`answer` takes the leader's answer and
    returns the truncation point once known (then :attr:`point` holds it), else None and
    :attr:`question` names the next epoch to ask about."""

    def __init__(self, epochs: EpochFile, leo: int) -> None:
        self._epochs = epochs
        self._leo = leo
        last = epochs.last
        self.question: int = 0 if last is None else last.epoch
        self.point: int | None = None
        self.questions = 1

    def answer(self, leader: EpochEnd) -> int | None:
        """Take the leader's answer to :attr:`question` (see class)."""
        if self.point is not None:
            return self.point
        if leader.epoch > self.question:
            raise ReplicationError(
                "the leader answered about a later epoch than asked",
                asked=self.question,
                answered=leader.epoch,
            )
        epochs, leo = self._epochs, self._leo
        if leader.epoch == 0:
            point: int | None = min(epochs.end_offset_of(0, leo), leader.end_offset, leo)
        else:
            point = epochs.truncation_point(leader.epoch, leader.end_offset, leo)
        if point is not None:
            self.point = max(0, point)
            return self.point
        mine = epochs.largest_at_most(leader.epoch)
        self.question = 0 if mine is None else mine.epoch
        self.questions += 1
        return None
