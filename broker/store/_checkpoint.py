"""The store checkpoint: how far the derived data (consume queues, index) is durable.

Every record of the commit log before ``dispatched_offset`` has its consume-queue entry and
index keys flushed; recovery re-dispatches only from there. Written atomically (JSON, see
``_atomic_file``) by the flush service after it flushes the queues and the index, and at
shutdown (with ``clean_shutdown`` set, cleared again on the next start).

Two offsets a checkpoint of an earlier version does not have (None then): in a broker group,
``committed_offset``, how far recovery may dispatch (the rest waits for the group's high
watermark); and ``producer_state_offset``, the log offset at which the idempotent producers'
snapshot (``producer_state``, or an empty table when there is none) still holds, where recovery
scans the log from to rebuild it.
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
    ``store_timestamp_ms``: the newest store timestamp at that point; the two optional offsets:
    see module."""

    dispatched_offset: int = 0
    store_timestamp_ms: int = 0
    clean_shutdown: bool = False
    committed_offset: int | None = None
    producer_state_offset: int | None = None

    @classmethod
    def load(cls, path: Path) -> Checkpoint | None:
        """The checkpoint in ``path`` (None when there is none); raises :class:`StoreError`
        for a malformed one or one of another version."""
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
                committed_offset=_optional_int(value.get("committed_offset")),
                producer_state_offset=_optional_int(value.get("producer_state_offset")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError("malformed checkpoint", path=str(path), value=value) from exc

    def save(self, path: Path, *, mode: int = DEFAULT_FILE_MODE) -> None:
        """Write the checkpoint to ``path`` atomically (the optional offsets when set)."""
        value: dict[str, object] = {
            "version": _VERSION,
            "dispatched_offset": self.dispatched_offset,
            "store_timestamp_ms": self.store_timestamp_ms,
            "clean_shutdown": self.clean_shutdown,
        }
        if self.committed_offset is not None:
            value["committed_offset"] = self.committed_offset
        if self.producer_state_offset is not None:
            value["producer_state_offset"] = self.producer_state_offset
        write_json_atomically(path, value, mode=mode)


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"not an integer: {value!r}")
    return value
