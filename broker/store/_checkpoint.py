"""The store checkpoint: how far the derived data (consume queues, index) is durable.

Every record of the commit log before ``dispatched_offset`` has its consume-queue entry and
index keys flushed; recovery re-dispatches only from there. Written atomically (JSON, see
``_atomic_file``) by the flush service after it flushes the queues and the index, and at
shutdown (with ``clean_shutdown`` set, cleared again on the next start).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aeromq.broker._errors import StoreError
from aeromq.broker.store._atomic_file import read_json, write_json_atomically
from aeromq.broker.store._file_modes import DEFAULT_FILE_MODE

__all__ = ["Checkpoint"]

_VERSION = 1


@dataclass(frozen=True)
class Checkpoint:
    """``dispatched_offset``: the commit log offset up to which derived data is durable;
    ``store_timestamp_ms``: the newest store timestamp at that point."""

    dispatched_offset: int = 0
    store_timestamp_ms: int = 0
    clean_shutdown: bool = False

    @classmethod
    def load(cls, path: Path) -> Checkpoint | None:
        value = read_json(path)
        if value is None:
            return None
        try:
            if value["version"] != _VERSION:
                raise StoreError("unknown checkpoint version", path=str(path), value=value)
            return cls(
                dispatched_offset=int(value["dispatched_offset"]),
                store_timestamp_ms=int(value["store_timestamp_ms"]),
                clean_shutdown=bool(value["clean_shutdown"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError("malformed checkpoint", path=str(path), value=value) from exc

    def save(self, path: Path, *, mode: int = DEFAULT_FILE_MODE) -> None:
        write_json_atomically(
            path,
            {
                "version": _VERSION,
                "dispatched_offset": self.dispatched_offset,
                "store_timestamp_ms": self.store_timestamp_ms,
                "clean_shutdown": self.clean_shutdown,
            },
            mode=mode,
        )
