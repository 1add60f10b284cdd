"""Topic config: queue counts and permissions per topic (RocketMQ's ``TopicConfig`` and
``TopicConfigManager``), persisted atomically on every change and reloaded on start.

In a broker group the table follows the log's metadata records (``_metadata_log``):
:meth:`TopicConfigManager.apply_logged` applies a batch of them and remembers, in the file too,
the log offset up to which the table holds every record (``applied_offset``), so that a
restart applies only the records after it. A single broker's file has no such offset.

Caller: the broker's admin path (create, update, delete) and its produce and pull paths
(``get``). Thread-safe.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from aeromq.broker._errors import InvalidArgumentError, StoreError, UnknownTopicError
from aeromq.broker.store._atomic_file import read_json, write_json_atomically
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE
from aeromq.common import (
    PERM_READ_WRITE,
    TOPIC_MAX_LENGTH,
    VALID_NAME_PATTERN,
    is_readable,
    is_valid_topic_name,
    is_writeable,
)

__all__ = ["TopicConfig", "TopicConfigJson", "TopicConfigManager", "TopicFilterType"]

_MAX_QUEUES = 1024
_VERSION = 1


class TopicFilterType(enum.Enum):
    """RocketMQ's ``TopicFilterType``, kept in the topic config for compatibility: a message
    carries one tag (``SINGLE_TAG``, the default) or several (``MULTI_TAG``)."""

    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"


class TopicConfigJson(TypedDict):
    """A :class:`TopicConfig` as ``topics.json`` holds it: every field by its name, the filter
    type by its value."""

    topic_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str
    topic_sys_flag: int
    order: bool


@dataclass(frozen=True)
class TopicConfig:
    """One topic's settings; validated on construction. RocketMQ's defaults: 16 read and
    16 write queues, readable and writable."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = PERM_READ_WRITE
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.topic_name, str) or not is_valid_topic_name(self.topic_name):
            raise InvalidArgumentError(
                f"topic name must be 1-{TOPIC_MAX_LENGTH} of {VALID_NAME_PATTERN}",
                topic=self.topic_name,
            )
        for name in ("read_queue_nums", "write_queue_nums"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 0 <= value <= _MAX_QUEUES:
                raise InvalidArgumentError(
                    f"{name} must be 0..{_MAX_QUEUES}", topic=self.topic_name, value=value
                )
        if not isinstance(self.perm, int) or not 0 <= self.perm <= 0xF:
            raise InvalidArgumentError("perm must be 0..15", topic=self.topic_name, perm=self.perm)
        if not isinstance(self.topic_filter_type, TopicFilterType):
            raise InvalidArgumentError(
                "topic_filter_type must be a TopicFilterType", value=self.topic_filter_type
            )

    @property
    def is_readable(self) -> bool:
        """Whether ``perm`` lets consumers pull from the topic."""
        return is_readable(self.perm)

    @property
    def is_writeable(self) -> bool:
        """Whether ``perm`` lets producers send to the topic."""
        return is_writeable(self.perm)

    def to_json(self) -> TopicConfigJson:
        """The config as the JSON object ``topics.json`` holds (every field, the filter type
        by its value)."""
        return {
            "topic_name": self.topic_name,
            "read_queue_nums": self.read_queue_nums,
            "write_queue_nums": self.write_queue_nums,
            "perm": self.perm,
            "topic_filter_type": self.topic_filter_type.value,
            "topic_sys_flag": self.topic_sys_flag,
            "order": self.order,
        }

    @classmethod
    def from_json(cls, value: TopicConfigJson) -> TopicConfig:
        """The config of a :meth:`to_json` object; raises ``KeyError``, ``ValueError`` or
        :class:`InvalidArgumentError` for a malformed one (the manager's ``load`` turns them
        into a :class:`StoreError`)."""
        return cls(
            topic_name=value["topic_name"],
            read_queue_nums=int(value["read_queue_nums"]),
            write_queue_nums=int(value["write_queue_nums"]),
            perm=int(value["perm"]),
            topic_filter_type=TopicFilterType(value["topic_filter_type"]),
            topic_sys_flag=int(value["topic_sys_flag"]),
            order=bool(value["order"]),
        )


class TopicConfigManager:
    """The topics in ``path`` (JSON); ``data_version`` moves on every change, so the name
    server can tell whether a registration carries news."""

    def __init__(self, path: Path, *, file_mode: int = DEFAULT_FILE_MODE) -> None:
        self.path = path
        self.file_mode = file_mode
        self.by_name: dict[str, TopicConfig] = {}
        """Each topic's config by name: replaced whole on every change (copy on write, under
        the lock), so a reader takes it afresh each time and looks up without a call (the
        send and pull paths, once a request); never written through."""
        self._lock = threading.Lock()
        self.data_version: tuple[int, int] = (0, 0)  # (timestamp ms, counter)
        self.applied_offset: int | None = None  # a group's: the log's records before it are in

    def load(self) -> None:
        """Replace the topics with those persisted in ``path`` (nothing when there is no
        file). Raises :class:`StoreError` for a file of another version or a malformed one.
        Caller: the store's start."""
        value = read_json(self.path)
        if value is None:
            return
        try:
            if value["version"] != _VERSION:
                raise StoreError("unknown topic config version", path=str(self.path))
            topics = {name: TopicConfig.from_json(v) for name, v in value["topics"].items()}
            stamp, counter = value["data_version"]
            applied = value.get("applied_offset")
            applied_offset = None if applied is None else int(applied)
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError("malformed topic config", path=str(self.path)) from exc
        with self._lock:
            self.by_name = topics
            self.data_version = (int(stamp), int(counter))
            self.applied_offset = applied_offset

    def get(self, topic: str) -> TopicConfig | None:
        """The topic's config, None when there is no such topic (never blocks: the produce
        and pull paths call it)."""
        return self.by_name.get(topic)

    def require(self, topic: str) -> TopicConfig:
        """The topic's config; raises :class:`UnknownTopicError` when there is none."""
        found = self.by_name.get(topic)
        if found is None:
            raise UnknownTopicError("no such topic", topic=topic)
        return found

    def topics(self) -> list[TopicConfig]:
        """Every topic's config, sorted by name."""
        return [self.by_name[name] for name in sorted(self.by_name)]

    def create_or_update(self, config: TopicConfig) -> None:
        """Store ``config`` (replacing the topic's previous one) and persist."""
        with self._lock:
            self.by_name = {**self.by_name, config.topic_name: config}
            self._changed()

    def delete(self, topic: str) -> bool:
        """Forget ``topic`` and persist; False when it was not there."""
        with self._lock:
            if topic not in self.by_name:
                return False
            topics = dict(self.by_name)
            del topics[topic]
            self.by_name = topics
            self._changed()
            return True

    def apply_logged(self, changes: Sequence[TopicConfig | str], applied_offset: int) -> None:
        """Apply the topic changes of one batch of the log's metadata records, in order (a
        config creates or replaces its topic, a name removes one), and note that the table
        holds the log's records before ``applied_offset``; persist once if anything changed.
        Caller: the store, when the batch is committed (and at start, for the records after
        the persisted ``applied_offset``)."""
        with self._lock:
            topics = dict(self.by_name)
            for change in changes:
                if isinstance(change, TopicConfig):
                    topics[change.topic_name] = change
                else:
                    topics.pop(change, None)
            self.applied_offset = applied_offset
            if changes:
                self.by_name = topics
                self._changed()

    def _changed(self) -> None:
        self.data_version = (time.time_ns() // 1_000_000, self.data_version[1] + 1)
        value: dict[str, object] = {
            "version": _VERSION,
            "data_version": list(self.data_version),
            "topics": {name: c.to_json() for name, c in self.by_name.items()},
        }
        if self.applied_offset is not None:
            value["applied_offset"] = self.applied_offset
        write_json_atomically(self.path, value, mode=self.file_mode)
