from __future__ import annotations

from aeromq.client import MessageQueue
from aeromq.consumer.assigned_queues import AssignedMessageQueue

Q0 = MessageQueue("T", "b", 0)
Q1 = MessageQueue("T", "b", 1)
OTHER = MessageQueue("U", "b", 0)


def test_should_start_every_offset_at_minus_one() -> None:
    assigned = AssignedMessageQueue()
    state = assigned.add(Q0)
    assert (state.pull_offset, state.consume_offset, state.seek_offset) == (-1, -1, -1)
    assert not state.paused
    assert not state.process_queue.dropped


def test_should_keep_the_state_when_adding_an_owned_queue_again() -> None:
    assigned = AssignedMessageQueue()
    first = assigned.add(Q0, pull_offset=5)
    assert assigned.add(Q0, pull_offset=9) is first
    assert first.pull_offset == 5


def test_should_drop_the_process_queue_of_a_removed_queue() -> None:
    assigned = AssignedMessageQueue()
    state = assigned.add(Q0)
    assert assigned.remove(Q0) is state
    assert state.process_queue.dropped
    assert Q0 not in assigned
    assert assigned.remove(Q0) is None


def test_should_update_one_topic_without_touching_others() -> None:
    assigned = AssignedMessageQueue()
    assigned.update_topic("T", {Q0})
    assigned.update_topic("U", {OTHER})
    removed = assigned.update_topic("T", {Q1})
    assert [state.queue for state in removed] == [Q0]
    assert assigned.queues() == {Q1, OTHER}


def test_should_own_exactly_the_assigned_queues() -> None:
    assigned = AssignedMessageQueue()
    assigned.update_all({Q0, OTHER})
    removed = assigned.update_all({Q1})
    assert {state.queue for state in removed} == {Q0, OTHER}
    assert assigned.queues() == {Q1}
    assert [state.queue for state in assigned.remove_topic("T")] == [Q1]
    assert len(assigned) == 0


def test_should_pause_and_resume_owned_queues_only() -> None:
    assigned = AssignedMessageQueue()
    assigned.add(Q0)
    assigned.pause([Q0, Q1])
    assert assigned.is_paused(Q0)
    assert not assigned.is_paused(Q1)
    assigned.resume([Q0])
    assert not assigned.is_paused(Q0)


def test_should_replace_the_process_queue_on_a_seek() -> None:
    assigned = AssignedMessageQueue()
    state = assigned.add(Q0, pull_offset=40)
    old = state.process_queue
    assert assigned.seek(Q0, 7) is old
    assert old.dropped
    assert state.process_queue is not old
    assert not state.process_queue.dropped
    assert (state.seek_offset, state.consume_offset, state.pull_offset) == (7, 7, 40)


def test_should_not_seek_a_queue_not_owned() -> None:
    assigned = AssignedMessageQueue()
    assert assigned.seek(Q0, 1) is None
