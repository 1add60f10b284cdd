"""``AssignedMessageQueue``: the queues this consumer owns now, and each one's state.

Per queue (:class:`QueueState`, RocketMQ's ``MessageQueueState``):

- ``process_queue``: the cached messages (:class:`~consumer.process_queue.ProcessQueue`);
  replaced by a fresh object on a seek, so results of pulls issued before it are recognised
  and dropped;
- ``paused``: its pull task idles while set;
- ``pull_offset``: the next offset to pull (-1: not known yet, compute it from the offset store
  and ``consume_from_where``);
- ``consume_offset``: the next offset ``poll`` will return, which auto commit commits (-1: none
  polled yet);
- ``seek_offset``: a seek not yet taken by the pull task (-1: none);
- ``take_over``: the broker must grant the queue to this consumer before its first pull (the
  group's previous holder released it with its last commit, or left); the pull task acquires
  it and starts at the committed offset the grant carries, if there is one.

All offsets are -1 at start. ``lock`` serialises a pull result's handling with seeks and drops
of the same queue (RocketMQ's ``MessageQueueLock``). Removing a queue marks its process queue
dropped; its pull task sees it and stops.

Caller: the consumer (assign, seek, pause, poll), the rebalance service (add and drop), pull
tasks (offsets). Thread safety: the table has one lock; each queue's offsets its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping

from aeromq.client import MessageQueue
from aeromq.consumer.process_queue import ProcessQueue

__all__ = ["AssignedMessageQueue", "QueueState"]


class QueueState:
    """One owned queue: process queue, paused flag, and pull, consume and seek offsets."""

    __slots__ = (
        "consume_offset",
        "lock",
        "paused",
        "process_queue",
        "pull_offset",
        "queue",
        "seek_offset",
        "take_over",
    )

    def __init__(self, queue: MessageQueue, pull_offset: int = -1) -> None:
        self.queue = queue
        self.process_queue = ProcessQueue()
        self.paused = False
        self.pull_offset = pull_offset
        self.consume_offset = -1
        self.seek_offset = -1
        self.take_over = False
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"QueueState({self.queue}, paused={self.paused}, pull_offset={self.pull_offset}, "
            f"consume_offset={self.consume_offset}, seek_offset={self.seek_offset})"
        )


class AssignedMessageQueue:
    """The owned queues and their :class:`QueueState` (see the module doc)."""

    __slots__ = ("_lock", "_states", "state")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[MessageQueue, QueueState] = {}
        self.state: Callable[[MessageQueue], QueueState | None] = self._states.get
        """``state(queue)``: the queue's state, or None when it is not owned: the states'
        ``dict.get``, a call in C (asked three times a pulled message: by the pull task
        twice, by ``poll``)."""

    def queues(self) -> set[MessageQueue]:
        """A snapshot of the owned queues."""
        with self._lock:
            return set(self._states)

    def states(self) -> list[QueueState]:
        """A snapshot of the owned queues' states."""
        with self._lock:
            return list(self._states.values())

    def __contains__(self, queue: object) -> bool:
        return queue in self._states

    def __len__(self) -> int:
        return len(self._states)

    def process_queue(self, queue: MessageQueue) -> ProcessQueue | None:
        state = self._states.get(queue)
        return state.process_queue if state is not None else None

    def add(self, queue: MessageQueue, pull_offset: int = -1) -> QueueState:
        """Own ``queue`` (no change if owned already) with a first ``pull_offset``."""
        with self._lock:
            state = self._states.get(queue)
            if state is None:
                state = self._states[queue] = QueueState(queue, pull_offset)
            return state

    def remove(self, queue: MessageQueue) -> QueueState | None:
        """Stop owning ``queue``: its process queue is dropped. Its state, or None."""
        with self._lock:
            state = self._states.pop(queue, None)
        if state is not None:
            with state.lock:
                state.process_queue.dropped = True
        return state

    def update_topic(self, topic: str, queues: Collection[MessageQueue]) -> list[QueueState]:
        """Own exactly ``queues`` of ``topic`` (subscribe): drop the others of that topic, add
        the new ones. The dropped states."""
        with self._lock:
            gone = [q for q in self._states if q.topic == topic and q not in queues]
        removed = [state for q in gone if (state := self.remove(q)) is not None]
        for queue in queues:
            self.add(queue)
        return removed

    def update_all(
        self,
        queues: Collection[MessageQueue],
        pull_offsets: Mapping[MessageQueue, int] | None = None,
    ) -> list[QueueState]:
        """Own exactly ``queues`` (assign): drop every other queue; a new queue starts at its
        offset in ``pull_offsets`` (-1 when absent). The dropped states."""
        with self._lock:
            gone = [q for q in self._states if q not in queues]
        removed = [state for q in gone if (state := self.remove(q)) is not None]
        for queue in queues:
            self.add(queue, -1 if pull_offsets is None else pull_offsets.get(queue, -1))
        return removed

    def remove_topic(self, topic: str) -> list[QueueState]:
        """Drop every queue of ``topic`` (unsubscribe). The dropped states."""
        return self.update_topic(topic, ())

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Pause the owned ones of ``queues``; others are ignored, as in RocketMQ."""
        for queue in queues:
            state = self._states.get(queue)
            if state is not None:
                state.paused = True

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        for queue in queues:
            state = self._states.get(queue)
            if state is not None:
                state.paused = False

    def is_paused(self, queue: MessageQueue) -> bool:
        state = self._states.get(queue)
        return state is not None and state.paused

    def seek(self, queue: MessageQueue, offset: int) -> ProcessQueue | None:
        """Set a pending seek: under the queue's lock, the seek and consume offsets become
        ``offset`` and a fresh process queue replaces the old one, which is dropped so results
        of pulls issued before the seek are not cached. The old process queue, or None if the
        queue is not owned (or was dropped meanwhile)."""
        state = self._states.get(queue)
        if state is None:
            return None
        with state.lock:
            old = state.process_queue
            if old.dropped:
                return None
            old.dropped = True
            old.clear()
            state.process_queue = ProcessQueue()
            state.seek_offset = offset
            state.consume_offset = offset
        return old
