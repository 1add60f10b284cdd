"""Consumer offsets: (topic, group, queue id) -> the next offset to consume (RocketMQ's
``ConsumerOffsetManager``, keyed ``topic@group``).

Commits change memory; ``persist`` writes the table atomically when it changed (the store
calls it every ``offset_persist_interval_ms`` and at shutdown). Thread-safe.

In a broker group the table follows the log's metadata records (``_metadata_log``):
:meth:`ConsumerOffsetManager.apply_logged` applies a batch of them and remembers the log offset
up to which the table holds every record (``applied_offset``, persisted with the table), so that
a restart applies only the records after it. A single broker's file has no such offset.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from aeromq.broker._errors import InvalidArgumentError, StoreError
from aeromq.broker.store._atomic_file import read_json, write_json_atomically
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE
from aeromq.common import (
    GROUP_MAX_LENGTH,
    TOPIC_MAX_LENGTH,
    VALID_NAME_PATTERN,
    is_valid_group_name,
    is_valid_topic_name,
)

__all__ = [
    "ConsumerOffsetManager",
    "LoggedOffsetChange",
    "OffsetCorrection",
    "check_offset_commit",
]

_SEPARATOR = "@"
_VERSION = 1


class OffsetCorrection(NamedTuple):
    """A committed offset that recovery lowered to its queue's end."""

    group: str
    topic: str
    queue_id: int
    committed: int
    max_offset: int


class LoggedOffsetChange(NamedTuple):
    """One offset change of the log's metadata records: ``offset`` set for (group, topic,
    queue id), or (``offset`` None) offsets removed: the group's on ``topic`` (every topic
    when None), or every group's on ``topic`` when ``group`` is None."""

    group: str | None
    topic: str | None
    queue_id: int = 0
    offset: int | None = None


class ConsumerOffsetManager:
    """The committed offsets in ``path`` (JSON)."""

    def __init__(self, path: Path, *, file_mode: int = DEFAULT_FILE_MODE) -> None:
        self.path = path
        self.file_mode = file_mode
        self._table: dict[tuple[str, str], dict[int, int]] = {}
        self._lock = threading.Lock()
        self._persist_lock = threading.Lock()  # one writer at a time, in snapshot order
        self._dirty = False
        self._commit_ms: dict[tuple[str, str, int], int] = {}  # in memory: since this start
        self.applied_offset: int | None = None  # a group's: the log's records before it are in

    def load(self) -> None:
        """Replace the table with the one persisted in ``path`` (nothing when there is no
        file). Raises :class:`StoreError` for a file of another version or a malformed one,
        :class:`StoreIOError` when it cannot be read. Caller: the store's start."""
        value = read_json(self.path)
        if value is None:
            return
        try:
            if value["version"] != _VERSION:
                raise StoreError("unknown consumer offsets version", path=str(self.path))
            table: dict[tuple[str, str], dict[int, int]] = {}
            for key, offsets in value["offset_table"].items():
                topic, _, group = key.partition(_SEPARATOR)
                table[(topic, group)] = {int(q): int(o) for q, o in offsets.items()}
            applied = value.get("applied_offset")
            applied_offset = None if applied is None else int(applied)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StoreError("malformed consumer offsets", path=str(self.path)) from exc
        with self._lock:
            self._table = table
            self._dirty = False
            self.applied_offset = applied_offset

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Set the group's next offset for the queue (in memory; see ``persist``)."""
        check_offset_commit(group, topic, queue_id, offset)
        with self._lock:
            self._table.setdefault((topic, group), {})[queue_id] = offset
            self._commit_ms[(group, topic, queue_id)] = time.time_ns() // 1_000_000
            self._dirty = True

    def last_commit_ms(self, group: str, topic: str, queue_id: int) -> int:
        """Wall-clock ms of the group's last commit on the queue since the broker started,
        -1 when none (not persisted: for metrics)."""
        return self._commit_ms.get((group, topic, queue_id), -1)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for the queue."""
        offsets = self._table.get((topic, group))
        if offsets is None:
            return -1
        return offsets.get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        """Every committed offset of the group on the topic, by queue id."""
        with self._lock:
            return dict(self._table.get((topic, group), {}))

    def groups_of(self, topic: str) -> list[str]:
        """The groups with committed offsets on ``topic``, sorted."""
        return sorted(group for (t, group) in self._table if t == topic)

    def topics_of(self, group: str) -> list[str]:
        """The topics ``group`` has committed offsets on, sorted."""
        return sorted(topic for (topic, g) in self._table if g == group)

    def remove(self, group: str, topic: str | None = None) -> int:
        """Forget the group's offsets (on ``topic`` only, if given); returns how many
        (topic, group) entries went."""
        with self._lock:
            return self._remove(group, topic)

    def _remove(self, group: str | None, topic: str | None) -> int:
        """``remove`` with the lock held; ``group`` None: every group's on ``topic``."""
        doomed = [k for k in self._table if group in (None, k[1]) and topic in (None, k[0])]
        for key in doomed:
            del self._table[key]
        for stamp in [
            k for k in self._commit_ms if group in (None, k[0]) and topic in (None, k[1])
        ]:
            del self._commit_ms[stamp]
        if doomed:
            self._dirty = True
        return len(doomed)

    def apply_logged(self, changes: Sequence[LoggedOffsetChange], applied_offset: int) -> None:
        """Apply the offset changes of one batch of the log's metadata records, in order, and
        note that the table holds the log's records before ``applied_offset`` (persisted with
        it by the next ``persist``). Caller: the store, when the batch is committed (and at
        start, for the records after the persisted ``applied_offset``)."""
        now_ms = time.time_ns() // 1_000_000
        with self._lock:
            for change in changes:
                if change.offset is None:
                    self._remove(change.group, change.topic)
                elif change.group is not None and change.topic is not None:
                    self._table.setdefault((change.topic, change.group), {})[change.queue_id] = (
                        change.offset
                    )
                    self._commit_ms[(change.group, change.topic, change.queue_id)] = now_ms
            self.applied_offset = applied_offset
            self._dirty = True

    def clamp(self, max_offset_of: Callable[[str, int], int]) -> list[OffsetCorrection]:
        """Lower every committed offset past its queue's end (``max_offset_of(topic,
        queue_id)``, the next offset to be written) to that end, as RocketMQ corrects an
        OFFSET_OVERFLOW: after a lost tail, new messages reuse those queue offsets and a
        group would skip them. Returns the corrections (the table is then dirty). Caller: the
        store's start, after recovery."""
        corrections: list[OffsetCorrection] = []
        with self._lock:
            for (topic, group), offsets in self._table.items():
                for queue_id, committed in offsets.items():
                    max_offset = max_offset_of(topic, queue_id)
                    if committed > max_offset:
                        offsets[queue_id] = max_offset
                        corrections.append(
                            OffsetCorrection(group, topic, queue_id, committed, max_offset)
                        )
            if corrections:
                self._dirty = True
        return corrections

    def persist(self, force: bool = False) -> bool:
        """Write the table atomically if it changed since the last write; True if written."""
        with self._persist_lock:
            with self._lock:
                if not self._dirty and not force:
                    return False
                value: dict[str, object] = {
                    "version": _VERSION,
                    "offset_table": {
                        f"{topic}{_SEPARATOR}{group}": {
                            str(q): o for q, o in sorted(offsets.items())
                        }
                        for (topic, group), offsets in self._table.items()
                    },
                }
                if self.applied_offset is not None:
                    value["applied_offset"] = self.applied_offset
                self._dirty = False
            try:
                write_json_atomically(self.path, value, mode=self.file_mode)
            except BaseException:
                self._dirty = True
                raise
            return True


def check_offset_commit(group: str, topic: str, queue_id: int, offset: int) -> None:
    """Raise :class:`InvalidArgumentError` unless (group, topic, queue id) names a queue a
    group may commit an offset for, and ``offset`` is one (``>= 0``)."""
    _check(group, topic, queue_id)
    if not isinstance(offset, int) or offset < 0:
        raise InvalidArgumentError(
            "offset must be >= 0", group=group, topic=topic, queue_id=queue_id, offset=offset
        )


def _check(group: str, topic: str, queue_id: int) -> None:
    if not is_valid_group_name(group):
        raise InvalidArgumentError(
            f"group name must be 1-{GROUP_MAX_LENGTH} of {VALID_NAME_PATTERN}", group=group
        )
    if not is_valid_topic_name(topic):
        raise InvalidArgumentError(
            f"topic name must be 1-{TOPIC_MAX_LENGTH} of {VALID_NAME_PATTERN}", topic=topic
        )
    if not isinstance(queue_id, int) or queue_id < 0:
        raise InvalidArgumentError("queue_id must be >= 0", queue_id=queue_id)
