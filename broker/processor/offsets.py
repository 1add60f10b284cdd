"""Offsets: commit and query a group's consumed offsets, a queue's min and max, search by store
time, reset a group (earliest, latest, by time), and consumer progress (lag per queue).

RocketMQ's ``UPDATE_CONSUMER_OFFSET``, ``QUERY_CONSUMER_OFFSET``, ``GET_MIN_OFFSET``,
``GET_MAX_OFFSET``, ``SEARCH_OFFSET_BY_TIMESTAMP``, ``INVOKE_BROKER_TO_RESET_OFFSET`` and
``GET_CONSUME_STATS``, over the store's consumer offsets and consume queues. An offset is the
next one to consume; a queue's max offset is the offset its next message will get.

Hand-overs: a commit may also release the queue (:meth:`OffsetProcessor.release_queue`), and
an offset query may acquire it first (:meth:`OffsetProcessor.acquire_queue`; the holders are
kept by ``ConsumerGroupManager``): the old owner of a moved queue commits and releases in one
call, and the new one is granted the queue with that commit.

Each operation has one name from the consumer down to the store: ``commit_offset``,
``release_queue``, ``acquire_queue``, ``query_offset``, ``min_offset``, ``max_offset``,
``search_offset`` (``consumer.BrokerApi``, ``client.GrpcClient``, the admin facade, this
processor); the RPCs keep their wire names (``UpdateOffset``, ``QueryOffset``, ...).

In a broker group every commit is a record of the group's log (``MessageStore.commit_offset``),
answered once committed and applied by every member.

Caller: the admin facade. Affects: ``store.consumer_offsets`` (commit and reset; persisted by
the store's timer and at shutdown); a reset is also pushed to the group's online members.
Failures raise the broker's typed errors.
"""

from __future__ import annotations

from aeromq.broker._errors import InvalidArgumentError
from aeromq.broker.processor.consumer_groups import (
    ConsumerGroupManager,
    GroupNotFoundError,
    check_group_name,
)
from aeromq.broker.processor.leadership import require_committed
from aeromq.broker.processor.topics import TopicProcessor
from aeromq.broker.store import BoundaryType, MessageStore, TopicConfig
from aeromq.common import is_marker_group
from aeromq.proto import admin_pb2, consumer_group_pb2

__all__ = ["OffsetProcessor"]

ALL_QUEUES = -1


class OffsetProcessor:
    """Offsets of ``store``'s queues and groups; topics through ``topics``; online members
    (for progress and reset pushes) through ``groups``; ``broker_name`` labels progress."""

    def __init__(
        self,
        store: MessageStore,
        topics: TopicProcessor,
        groups: ConsumerGroupManager,
        broker_name: str,
    ) -> None:
        self._broker_name = broker_name
        self._store = store
        self._offsets = store.consumer_offsets
        self._replicated = store.config.replicated  # a group's commits go through its log
        self._topics = topics
        self._groups = groups

    # -- single queues -----------------------------------------------------------------------

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Commit ``offset`` (the next to consume) for the group on (topic, queue id)."""
        self._check_commit(group, topic, queue_id, offset, release=False)
        self._commit(group, topic, queue_id, offset)

    def release_queue(
        self, group: str, topic: str, queue_id: int, offset: int, *, client_id: str
    ) -> None:
        """Commit ``offset`` as :meth:`commit_offset` does, then ``client_id`` lets go of the
        queue (a hand-over: the member it moved to is granted it next and reads this commit).
        ``offset`` -1: release only (nothing consumed to commit)."""
        self._check_commit(group, topic, queue_id, offset, release=True)
        if not client_id:
            raise InvalidArgumentError(
                "releasing a queue needs a client_id", group=group, topic=topic, queue_id=queue_id
            )
        if offset >= 0:
            self._commit(group, topic, queue_id, offset)
        self._groups.release_queue(group, topic, queue_id, client_id)

    def _commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """One commit (in a group through its log, committed)."""
        if self._replicated:
            result = self._store.commit_offset(group, topic, queue_id, offset)
            require_committed(result, "offset commit", group=group, topic=topic, queue_id=queue_id)
        else:
            self._offsets.commit_offset(group, topic, queue_id, offset)

    def acquire_queue(
        self, group: str, topic: str, queue_id: int, client_id: str, *, force: bool = False
    ) -> tuple[int, str]:
        """``client_id`` takes the group's queue over before pulling it (see
        ``ConsumerGroupManager.acquire_queue``): (the committed offset or -1, ``""``) when
        granted, (-1, the holder's id) while another live member still holds it."""
        check_group_name(group)
        self._check_queue(topic, queue_id)
        holder = self._groups.acquire_queue(group, topic, queue_id, client_id, force)
        if holder:
            return -1, holder
        return self._offsets.query_offset(group, topic, queue_id), ""

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The group's committed offset, -1 when it never committed one for the queue."""
        check_group_name(group)
        self._check_queue(topic, queue_id)
        return self._offsets.query_offset(group, topic, queue_id)

    def min_offset(self, topic: str, queue_id: int) -> int:
        self._check_queue(topic, queue_id)
        return self._store.get_min_offset(topic, queue_id)

    def max_offset(self, topic: str, queue_id: int) -> int:
        self._check_queue(topic, queue_id)
        return self._store.get_max_offset(topic, queue_id)

    def search_offset(
        self, topic: str, queue_id: int, timestamp_ms: int, boundary: int = admin_pb2.LOWER
    ) -> int:
        """The offset by store time: LOWER the first message at or after ``timestamp_ms``,
        UPPER the last at or before it (see ``MessageStore.get_offset_by_time``)."""
        self._check_queue(topic, queue_id)
        if boundary not in (admin_pb2.LOWER, admin_pb2.UPPER):
            raise InvalidArgumentError("unknown boundary", boundary=boundary)
        kind = BoundaryType.UPPER if boundary == admin_pb2.UPPER else BoundaryType.LOWER
        return self._store.get_offset_by_time(topic, queue_id, timestamp_ms, kind)

    # -- groups ------------------------------------------------------------------------------

    def reset_offset(
        self, group: str, topic: str, target: int, timestamp_ms: int = 0, queue_id: int = -1
    ) -> list[tuple[int, int]]:
        """Move the group's offsets on ``topic`` (one queue, or every queue when ``queue_id``
        is -1) to each queue's min (``RESET_EARLIEST``), max (``RESET_LATEST``) or first offset
        stored at or after ``timestamp_ms`` (``RESET_BY_TIME``); pushes the reset to the
        group's online members. Returns the new (queue id, offset) pairs."""
        check_group_name(group)
        config = self._topics.require(topic)
        if target not in (
            admin_pb2.RESET_EARLIEST,
            admin_pb2.RESET_LATEST,
            admin_pb2.RESET_BY_TIME,
        ):
            raise InvalidArgumentError(
                "reset target must be EARLIEST, LATEST or BY_TIME", group=group, target=target
            )
        if queue_id == ALL_QUEUES:
            queue_ids = list(range(_queue_count(config)))
        else:
            self._check_queue(topic, queue_id)
            queue_ids = [queue_id]
        store = self._store
        moved: list[tuple[int, int]] = []
        for qid in queue_ids:
            if target == admin_pb2.RESET_EARLIEST:
                offset = store.get_min_offset(topic, qid)
            elif target == admin_pb2.RESET_LATEST:
                offset = store.get_max_offset(topic, qid)
            else:
                offset = store.get_offset_by_time(topic, qid, timestamp_ms, BoundaryType.LOWER)
            self._commit(group, topic, qid, offset)
            moved.append((qid, offset))
        self._groups.push_offset_reset(
            consumer_group_pb2.OffsetReset(
                consumer_group=group,
                topic=topic,
                offsets=[admin_pb2.QueueOffset(queue_id=q, offset=o) for q, o in moved],
            )
        )
        return moved

    def known_groups(self) -> list[str]:
        """Groups with committed offsets on a topic the broker holds, or online members."""
        groups = set(self._groups.groups())
        topics = {c.topic_name for c in self._topics.topics()}
        topics.update(topic for topic, _ in self._store.queue_ids())
        for topic in topics:
            groups.update(self._offsets.groups_of(topic))
        return sorted(groups)

    def group_topics(self, group: str) -> list[str]:
        """Topics the group subscribes to or has committed offsets on, sorted."""
        topics = set(self._offsets.topics_of(group))
        topics.update(self._groups.subscribed_topics(group))
        return sorted(topics)

    def consumer_progress(
        self, group: str, topic: str = ""
    ) -> admin_pb2.GetConsumerProgressResponse:
        """Lag per queue of the group on ``topic`` (every topic of the group when empty).

        ``GroupNotFoundError`` when the group has neither offsets nor online members; a topic
        the broker no longer holds is skipped."""
        check_group_name(group)
        online = len(self._groups.membership(group).consumer_ids)
        topics = [topic] if topic else self.group_topics(group)
        if topic:
            self._topics.require(topic)
        elif not topics and online == 0:
            raise GroupNotFoundError("no such consumer group", group=group)
        broker_name = self._broker_name
        response = admin_pb2.GetConsumerProgressResponse(online_consumers=online)
        store = self._store
        for name in topics:
            config = self._topics.get(name)
            if config is None:
                continue
            for qid in range(_queue_count(config)):
                max_offset = store.get_max_offset(name, qid)
                committed = self._offsets.query_offset(group, name, qid)
                base = committed if committed >= 0 else store.get_min_offset(name, qid)
                last_ms = (
                    store.get_store_timestamp(name, qid, committed - 1) if committed > 0 else -1
                )
                response.queues.append(
                    admin_pb2.QueueProgress(
                        topic=name,
                        broker_name=broker_name,
                        queue_id=qid,
                        broker_offset=max_offset,
                        consumer_offset=committed,
                        lag=max(0, max_offset - base),
                        last_timestamp_ms=max(0, last_ms),
                    )
                )
        response.total_lag = sum(q.lag for q in response.queues)
        return response

    # -- checks ------------------------------------------------------------------------------

    def _check_commit(
        self, group: str, topic: str, queue_id: int, offset: int, *, release: bool
    ) -> None:
        check_group_name(group)
        self._check_queue(topic, queue_id)
        if offset < 0 and not (release and offset == -1):
            raise InvalidArgumentError(
                "offset must be >= 0 (-1 only to release without a commit)",
                group=group, topic=topic, queue_id=queue_id, offset=offset, release=release,
            )  # fmt: skip
        if is_marker_group(group):
            return  # a marker, not a read position (the Spark sink's completed micro-batches)
        max_offset = self._store.get_max_offset(topic, queue_id)
        if offset > max_offset:
            raise InvalidArgumentError(
                "offset is past the queue's max offset (the next message's)",
                group=group, topic=topic, queue_id=queue_id, offset=offset, max_offset=max_offset,
            )  # fmt: skip

    def _check_queue(self, topic: str, queue_id: int) -> TopicConfig:
        config = self._topics.require(topic)
        count = _queue_count(config)
        if not 0 <= queue_id < count:
            raise InvalidArgumentError(
                f"queue_id must be 0..{count - 1}", topic=topic, queue_id=queue_id
            )
        return config


def _queue_count(config: TopicConfig) -> int:
    """How many queues a topic has on this broker: the larger of its read and write counts
    (queues beyond the write count still hold what was written before a shrink)."""
    return max(config.read_queue_nums, config.write_queue_nums)
