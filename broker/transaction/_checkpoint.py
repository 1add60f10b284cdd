"""The transaction service's checkpoint: how far its half and op queues are read, and what it
knew there. A JSON file in the store's data directory (``transaction/checkpoint.json``),
replaced atomically (``broker.store.write_json_atomically``)::

    {"version": 1, "low": 1200, "op_offset": 5310, "resolved": [1203, 1207], "checks": {"1201": 2}}

``low``: every half below it is ended; ``resolved``: the ended halves at or above it, from the
op records below ``op_offset``; ``checks``: the checks so far of pending halves. On start the
service reads the op queue from ``op_offset`` and the half queue from ``low``: the half and op
topics are the state (a broker group replicates them), the checkpoint only shortens the reading.

Caller: the transaction service's thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from aeromq.broker._errors import StoreError
from aeromq.broker.store import read_json, write_json_atomically

__all__ = ["CHECKPOINT_NAME", "TransactionCheckpoint"]

CHECKPOINT_NAME: Final = "transaction/checkpoint.json"
"""Where the checkpoint is, under the store's data directory."""
_VERSION: Final = 1


@dataclass(frozen=True)
class TransactionCheckpoint:
    """One checkpoint (see module)."""

    low: int = 0
    op_offset: int = 0
    resolved: tuple[int, ...] = ()
    checks: dict[int, int] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> TransactionCheckpoint | None:
        """The checkpoint at ``path``; None when there is none. Raises ``StoreIOError`` when
        it cannot be read, ``StoreError`` when it makes no sense."""
        data = read_json(path)
        if data is None:
            return None
        try:
            if data["version"] != _VERSION:
                raise ValueError(f"version {data['version']}")
            return cls(
                int(data["low"]),
                int(data["op_offset"]),
                tuple(int(offset) for offset in data["resolved"]),
                {int(offset): int(count) for offset, count in data["checks"].items()},
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(
                "bad transaction checkpoint", path=str(path), problem=str(exc)
            ) from exc

    def save(self, path: Path, file_mode: int) -> None:
        """Replace the checkpoint at ``path`` atomically and durably, a file of the store's
        ``file_mode`` (its directory too: ``StoreIOError`` when it cannot be written)."""
        write_json_atomically(
            path,
            {
                "version": _VERSION,
                "low": self.low,
                "op_offset": self.op_offset,
                "resolved": sorted(self.resolved),
                "checks": {str(offset): count for offset, count in self.checks.items()},
            },
            mode=file_mode,
        )
