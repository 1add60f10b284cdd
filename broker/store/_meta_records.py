"""A broker group's metadata changes as record batches of the system topic ``%AEROMQ_META%``
(queue 0): each record's body one ``MetaRecord`` (``proto/store_meta.proto``); and back, into
the changes the topic table and the consumer offsets apply.

Pure: no I/O. Caller: the store's metadata calls and its dispatch of committed batches
(``_metadata_log``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from google.protobuf.message import DecodeError

from aeromq.broker.store._consumer_offsets import LoggedOffsetChange
from aeromq.broker.store._topic_config import TopicConfig, TopicFilterType
from aeromq.common.record_batch import RecordBatch, encode_batch
from aeromq.proto import common_pb2, store_meta_pb2

__all__ = [
    "META_TOPIC",
    "MetaChanges",
    "decode_meta_batch",
    "encode_meta_batch",
    "offset_commit",
    "offsets_removal",
    "topic_config_record",
    "topic_removal",
]

META_TOPIC: Final = "%AEROMQ_META%"
"""The system topic whose queue 0 holds a broker group's metadata changes."""
_META_TOPIC_BYTES: Final = META_TOPIC.encode()

_FILTER_TYPES: Final = {
    TopicFilterType.SINGLE_TAG: common_pb2.SINGLE_TAG,
    TopicFilterType.MULTI_TAG: common_pb2.MULTI_TAG,
}
_FILTER_TYPES_BACK: Final = {value: key for key, value in _FILTER_TYPES.items()}


class MetaChanges(NamedTuple):
    """The changes of one metadata batch, by table, each in log order."""

    topics: list[TopicConfig | str]
    offsets: list[LoggedOffsetChange]
    undecodable: int  # records that are not a MetaRecord this version knows (skipped)


def topic_config_record(config: TopicConfig) -> store_meta_pb2.MetaRecord:
    """The record that creates ``config``'s topic or replaces its config."""
    record = store_meta_pb2.MetaRecord()
    message = record.topic_config
    message.topic_name = config.topic_name
    message.read_queue_nums = config.read_queue_nums
    message.write_queue_nums = config.write_queue_nums
    message.perm = config.perm
    message.topic_filter_type = _FILTER_TYPES[config.topic_filter_type]
    message.topic_sys_flag = config.topic_sys_flag
    message.order = config.order
    return record


def topic_removal(topic: str) -> store_meta_pb2.MetaRecord:
    """The record that removes ``topic``'s config and every group's offsets on it."""
    return store_meta_pb2.MetaRecord(topic_removed=topic)


def offset_commit(group: str, topic: str, queue_id: int, offset: int) -> store_meta_pb2.MetaRecord:
    """The record that sets the group's next offset in the queue."""
    return store_meta_pb2.MetaRecord(
        offset_committed=store_meta_pb2.OffsetCommit(
            group=group, topic=topic, queue_id=queue_id, offset=offset
        )
    )


def offsets_removal(group: str, topic: str | None) -> store_meta_pb2.MetaRecord:
    """The record that removes the group's offsets on ``topic`` (every topic when None)."""
    removal = store_meta_pb2.OffsetRemoval(group=group)
    if topic is not None:
        removal.topic = topic
    return store_meta_pb2.MetaRecord(offsets_removed=removal)


def encode_meta_batch(records: Sequence[store_meta_pb2.MetaRecord]) -> bytearray:
    """One record batch of ``META_TOPIC`` whose records' bodies are ``records``."""
    return encode_batch(_META_TOPIC_BYTES, [record.SerializeToString() for record in records])


def decode_meta_batch(batch: memoryview) -> MetaChanges:
    """The changes of a stored metadata batch (framing and CRC checked); a record that does not
    decode, or whose topic config is not valid, is counted in ``undecodable`` and skipped."""
    view = RecordBatch(batch)
    changes = MetaChanges([], [], 0)
    for index in range(view.count):
        try:
            record = store_meta_pb2.MetaRecord.FromString(view.body(index))
            _add(record, changes)
        except (DecodeError, ValueError, KeyError):
            changes = changes._replace(undecodable=changes.undecodable + 1)
    return changes


def _add(record: store_meta_pb2.MetaRecord, changes: MetaChanges) -> None:
    kind = record.WhichOneof("change")
    if kind == "topic_config":
        message = record.topic_config
        changes.topics.append(
            TopicConfig(
                topic_name=message.topic_name,
                read_queue_nums=message.read_queue_nums,
                write_queue_nums=message.write_queue_nums,
                perm=message.perm,
                topic_filter_type=_FILTER_TYPES_BACK[message.topic_filter_type],
                topic_sys_flag=message.topic_sys_flag,
                order=message.order,
            )
        )
    elif kind == "topic_removed":
        changes.topics.append(record.topic_removed)
        changes.offsets.append(LoggedOffsetChange(None, record.topic_removed))
    elif kind == "offset_committed":
        commit = record.offset_committed
        changes.offsets.append(
            LoggedOffsetChange(commit.group, commit.topic, commit.queue_id, commit.offset)
        )
    elif kind == "offsets_removed":
        removal = record.offsets_removed
        topic = removal.topic if removal.HasField("topic") else None
        changes.offsets.append(LoggedOffsetChange(removal.group, topic))
    else:
        raise ValueError(f"unknown metadata record: {kind}")
