"""Consumer offsets: (topic, group, queue id) -> the next offset to consume (RocketMQ's
``ConsumerOffsetManager``, keyed ``topic@group``).

Commits change memory; ``persist`` writes the table atomically when it changed (the store
calls it every ``offset_persist_interval_ms`` and at shutdown). Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
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

__all__ = ["ConsumerOffsetManager", "OffsetCorrection"]

_SEPARATOR = "@"
_VERSION = 1


class OffsetCorrection(NamedTuple):
    """A committed offset that recovery lowered to its queue's end."""

    group: str
    topic: str
    queue_id: int
    committed: int
    max_offset: int


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
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StoreError("malformed consumer offsets", path=str(self.path)) from exc
        with self._lock:
            self._table = table
            self._dirty = False

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Set the group's next offset for the queue (in memory; see ``persist``)."""
        _check(group, topic, queue_id)
        if not isinstance(offset, int) or offset < 0:
            raise InvalidArgumentError(
                "offset must be >= 0", group=group, topic=topic, queue_id=queue_id, offset=offset
            )
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
            doomed = [k for k in self._table if k[1] == group and topic in (None, k[0])]
            for key in doomed:
                del self._table[key]
            for stamp in [k for k in self._commit_ms if k[0] == group and topic in (None, k[1])]:
                del self._commit_ms[stamp]
            if doomed:
                self._dirty = True
            return len(doomed)

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
                snapshot = {
                    f"{topic}{_SEPARATOR}{group}": {str(q): o for q, o in sorted(offsets.items())}
                    for (topic, group), offsets in self._table.items()
                }
                self._dirty = False
            try:
                write_json_atomically(
                    self.path,
                    {"version": _VERSION, "offset_table": snapshot},
                    mode=self.file_mode,
                )
            except BaseException:
                self._dirty = True
                raise
            return True


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
