"""The store checkpoint: how far the derived data (consume queues, index) is durable.

Every record of the commit log before ``dispatched_offset`` has its consume-queue entry flushed
and its index keys written; recovery re-dispatches only from there. Written atomically (JSON,
see ``_atomic_file``) by the store's services after they flush the queues, and at shutdown
(with ``clean_shutdown`` set, cleared again on the next start).

The index is made durable less often (every ``flush_index_interval_ms``): its puts dirty pages
all over a 20 MB slot table, and writing them back each second stalled the broker
(``docs/latency.md``, "Stalls once a second"). ``index_mark`` (:class:`IndexMark`) says what
its last flush made durable; after a stop that was not clean, recovery takes the index back to
that mark and re-indexes from the mark's ``dispatched_offset`` (``IndexService.rewind``): a
crash of the machine writes the pages of an index file to the disk in no particular order, so
what came after the mark cannot be trusted.

Three fields a checkpoint of an earlier version does not have (None then): ``index_mark``
(above; without it the index counts as durable up to ``dispatched_offset``, as it was then);
in a broker group, ``committed_offset``, how far recovery may dispatch (the rest waits for the group's high
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

__all__ = ["Checkpoint", "IndexMark"]

_VERSION = 1


@dataclass(frozen=True)
class IndexMark:
    """What the index's last flush made durable: the newest index file (named by its
    ``file_offset``, -1 when there was none) held ``entries_used`` entries up to the record at
    ``end_physical_offset``, and every record before ``dispatched_offset`` (a batch boundary of
    the log) was indexed in them."""

    file_offset: int
    entries_used: int
    end_physical_offset: int
    dispatched_offset: int


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
    index_mark: IndexMark | None = None

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
                index_mark=_index_mark(value.get("index")),
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
        if self.index_mark is not None:
            mark = self.index_mark
            value["index"] = [
                mark.file_offset,
                mark.entries_used,
                mark.end_physical_offset,
                mark.dispatched_offset,
            ]
        write_json_atomically(path, value, mode=mode)


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"not an integer: {value!r}")
    return value


def _index_mark(value: object) -> IndexMark | None:
    """The ``index`` field: ``[file_offset, entries_used, end_physical_offset,
    dispatched_offset]``."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 4:
        raise ValueError(f"not an index mark: {value!r}")
    file_offset, used, end, dispatched = (_optional_int(v) for v in value)
    if file_offset is None or used is None or end is None or dispatched is None:
        raise ValueError(f"not an index mark: {value!r}")
    return IndexMark(file_offset, used, end, dispatched)
