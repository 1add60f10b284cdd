"""Topic configs and committed consumer offsets through the log, so that a broker group's new
leader has every change a client was told succeeded (RocketMQ #9804 lost topic configs that
lived on the master alone).

The calls the broker's processors make to change metadata, the same on a single broker and in
a group:

- :meth:`MetaPath.update_topic_config` creates a topic or replaces its config;
- :meth:`MetaPath.remove_topic` removes a topic's config and every group's offsets on it (and,
  on a single broker, its consume queues, as ``TopicsProcessor.delete`` did);
- :meth:`MetaPath.commit_offset` sets a group's next offset in a queue;
- :meth:`MetaPath.remove_offsets` removes a group's offsets (on one topic, or all).

On a single broker each changes the table at once (the files are kept as before) and returns
``PUT_OK``. In a group each is a record of the system topic ``%AEROMQ_META%`` (queue 0,
``_meta_records``) appended by the leader like any batch (``NOT_LEADER`` on a follower); every
member applies it to its ``TopicConfigManager`` or ``ConsumerOffsetManager`` when the group's
committed offset passes it (:func:`apply_meta_batch`, from the commit path), and the call
completes then: with ``callback``, it returns at once and calls back with the final result;
without, it blocks until then. Each table persists, with its rows, the log offset up to which
it holds every record (``applied_offset``), and a start applies the records after it
(:func:`replay_meta`). In a group a removed topic's consume queues stay (retention empties
them), and a topic created again under its name goes on with their queue offsets: an offset is
never given to two messages.

Caller: the broker's processors (topics, offsets), through ``MessageStore``; the commit path
and the store's start.
"""

from __future__ import annotations

import logging

from aeromq.broker._errors import CorruptRecordError, UnknownTopicError
from aeromq.broker.store._commit_log import CommitLog
from aeromq.broker.store._consumer_offsets import ConsumerOffsetManager, check_offset_commit
from aeromq.broker.store._leader_path import LeaderPath
from aeromq.broker.store._meta_records import (
    META_TOPIC,
    decode_meta_batch,
    encode_meta_batch,
    offset_commit,
    offsets_removal,
    topic_config_record,
    topic_removal,
)
from aeromq.broker.store._queue_table import ConsumeQueueTable
from aeromq.broker.store._results import PutCallback, PutMessageResult, PutMessageStatus
from aeromq.broker.store._topic_config import TopicConfig, TopicConfigManager
from aeromq.proto import store_meta_pb2

__all__ = ["MetaPath", "apply_meta_batch", "replay_meta"]

_log = logging.getLogger(__name__)


class MetaPath(LeaderPath):
    """The metadata calls, for ``MessageStore`` (see module)."""

    def update_topic_config(
        self, config: TopicConfig, callback: PutCallback | None = None
    ) -> PutMessageResult:
        """Create ``config``'s topic or replace its config (see module for how it completes).
        Caller: the broker's topic processors."""
        if not self._replicated:
            self.topic_config.create_or_update(config)
            return _done(callback)
        return self._log_change(topic_config_record(config), callback)

    def remove_topic(self, topic: str, callback: PutCallback | None = None) -> PutMessageResult:
        """Remove ``topic``'s config and every group's offsets on it; on a single broker its
        consume queues too. Raises :class:`UnknownTopicError` when there is no such topic."""
        self.topic_config.require(topic)
        if not self._replicated:
            if not self.topic_config.delete(topic):
                raise UnknownTopicError("no such topic", topic=topic)
            with self._put_lock:
                self.queues.remove_topic(topic)
            offsets = self.consumer_offsets
            for group in offsets.groups_of(topic):
                offsets.remove(group, topic)
            return _done(callback)
        return self._log_change(topic_removal(topic), callback)

    def commit_offset(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        callback: PutCallback | None = None,
    ) -> PutMessageResult:
        """Set ``group``'s next offset to consume in (topic, queue id); raises
        :class:`~aeromq.broker.InvalidArgumentError` for a bad name, queue id or offset."""
        if not self._replicated:
            self.consumer_offsets.commit_offset(group, topic, queue_id, offset)
            return _done(callback)
        check_offset_commit(group, topic, queue_id, offset)
        return self._log_change(offset_commit(group, topic, queue_id, offset), callback)

    def remove_offsets(
        self, group: str, topic: str | None = None, callback: PutCallback | None = None
    ) -> PutMessageResult:
        """Remove ``group``'s committed offsets on ``topic`` (on every topic when None)."""
        if not self._replicated:
            self.consumer_offsets.remove(group, topic)
            return _done(callback)
        return self._log_change(offsets_removal(group, topic), callback)

    def _log_change(
        self, record: store_meta_pb2.MetaRecord, callback: PutCallback | None
    ) -> PutMessageResult:
        """Append one metadata record as the leader and complete when committed."""
        batch = memoryview(encode_meta_batch([record]))
        result, end = self._append_uncommitted(batch, META_TOPIC, 0, 1, None, meta=True)
        if result.status is not PutMessageStatus.PUT_OK:
            return _done(callback, result)
        if callback is None:
            return self._commits.wait(end, result)
        self._commits.request(end, result, callback)
        return result


def _done(callback: PutCallback | None, result: PutMessageResult | None = None) -> PutMessageResult:
    """A change settled at once (a single broker's, or refused): call back and return it."""
    if result is None:
        result = PutMessageResult(PutMessageStatus.PUT_OK)
    if callback is not None:
        callback(result)
    return result


def apply_meta_batch(
    batch: memoryview,
    position: int,
    topics: TopicConfigManager,
    offsets: ConsumerOffsetManager,
) -> None:
    """Apply the metadata batch at ``position`` (committed) to each table that does not hold it
    yet (its ``applied_offset`` is at or before the batch). Caller: the commit path, under the
    put lock, as it dispatches; and :func:`replay_meta`."""
    changes = decode_meta_batch(batch)
    if changes.undecodable:
        _log.error(
            "metadata records this version cannot apply were skipped: physical_offset=%d "
            "records=%d",
            position,
            changes.undecodable,
        )
    end = position + len(batch)
    if position >= (topics.applied_offset or 0):
        topics.apply_logged(changes.topics, end)
    if position >= (offsets.applied_offset or 0):
        offsets.apply_logged(changes.offsets, end)


def replay_meta(
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    topics: TopicConfigManager,
    offsets: ConsumerOffsetManager,
    limit: int,
) -> int:
    """At start: apply the committed metadata batches (those that end at or before ``limit``)
    that a table's persisted ``applied_offset`` says it does not hold, found through the
    system topic's consume queue. Returns how many batches were read."""
    queue = queues.get(META_TOPIC, 0)
    if queue is None:
        return 0
    since = min(topics.applied_offset or 0, offsets.applied_offset or 0)
    found: set[int] = set()
    at = queue.min_offset
    while at < queue.max_offset:
        part = queue.entries(at, queue.max_offset - at)  # (a file at a time)
        if not len(part):
            break
        found.update(int(p) for p in part["offset"] if p >= since)
        at += len(part)
        del part
    read = 0
    for position in sorted(found):
        try:
            view = commit_log.batch_at(position)
        except CorruptRecordError as exc:
            _log.error("a metadata batch cannot be read, skipped: %s", exc)
            continue
        try:
            if position + len(view) <= limit:
                apply_meta_batch(view, position, topics, offsets)
                read += 1
        finally:
            view.release()
    return read
