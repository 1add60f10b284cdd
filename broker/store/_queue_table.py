"""The consume queues of the store, by (topic, queue id), under ``consumequeue/<topic>/<id>/``.

Caller: the ``MessageStore``. Queues are created on the first put and loaded at start.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from aeromq.broker.store._consume_queue import ConsumeQueue
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE, make_dirs
from aeromq.common import is_valid_topic_name

__all__ = ["ConsumeQueueTable"]


class ConsumeQueueTable:
    """Every consume queue under ``root``, each file holding ``entries_per_file`` entries."""

    def __init__(
        self, root: Path, entries_per_file: int, *, file_mode: int = DEFAULT_FILE_MODE
    ) -> None:
        self.root = root
        self.entries_per_file = entries_per_file
        self.file_mode = file_mode
        self.by_key: dict[tuple[str, int], ConsumeQueue] = {}
        """Each queue by (topic, queue id): written under the table's lock, read without it
        (one dict lookup, no call: the store's put and get paths read it once a message)."""
        self._lock = threading.Lock()

    def load(self) -> None:
        """Map the queues found on disk."""
        make_dirs(self.root, self.file_mode)
        for topic_dir in sorted(self.root.iterdir()):
            if not topic_dir.is_dir() or not is_valid_topic_name(topic_dir.name):
                continue
            for queue_dir in sorted(topic_dir.iterdir()):
                if queue_dir.is_dir() and queue_dir.name.isdigit():
                    queue = self._make(topic_dir.name, int(queue_dir.name))
                    queue.load()
                    self.by_key[(topic_dir.name, int(queue_dir.name))] = queue

    def _make(self, topic: str, queue_id: int) -> ConsumeQueue:
        directory = self.root / topic / str(queue_id)
        make_dirs(directory.parent, self.file_mode)  # the topic's directory
        return ConsumeQueue(
            topic, queue_id, directory, self.entries_per_file, file_mode=self.file_mode
        )

    def get(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self.by_key.get((topic, queue_id))

    def get_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        key = (topic, queue_id)
        queue = self.by_key.get(key)
        if queue is None:
            with self._lock:
                queue = self.by_key.get(key)
                if queue is None:
                    queue = self._make(topic, queue_id)
                    self.by_key[key] = queue
        return queue

    def __iter__(self) -> Iterator[ConsumeQueue]:
        return iter(list(self.by_key.values()))

    def __len__(self) -> int:
        return len(self.by_key)

    def remove_topic(self, topic: str) -> int:
        """Delete every queue of ``topic``; returns how many there were."""
        with self._lock:
            doomed = [key for key in self.by_key if key[0] == topic]
            queues = [self.by_key.pop(key) for key in doomed]
        for queue in queues:
            queue.delete()
        topic_dir = self.root / topic
        if topic_dir.is_dir():
            for child in topic_dir.iterdir():
                if child.is_dir() and not any(child.iterdir()):
                    child.rmdir()
            if not any(topic_dir.iterdir()):
                topic_dir.rmdir()
        return len(queues)

    def close(self) -> None:
        for queue in self.by_key.values():
            queue.close()
        self.by_key.clear()
