"""The timer service's checkpoint: how far its queue is delivered, and where the commit log
ended when that was so. A JSON file in the store's data directory (``timer/checkpoint.json``),
replaced atomically (``broker.store.write_atomically``: written aside, fsynced, renamed, the
directory fsynced)::

    {"version": 1, "low": 1200, "count": 37, "marks": "<base64>", "log_offset": 884736}

``low``: every entry of the timer queue below it is delivered; ``marks``: a bit per entry from
``low`` on, ``count`` of them (numpy's ``packbits`` order, 1: delivered); ``log_offset``: the
commit log's end when the checkpoint was taken, so every re-put after the marks is after it (the
service looks there for re-puts a crash kept out of the marks, ``_dedupe``).

Caller: the timer service's thread.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

from aeromq.broker._errors import StoreError, StoreIOError
from aeromq.broker.store import write_atomically
from aeromq.transport.concurrent import DEFAULT_FILE_MODE

__all__ = ["CHECKPOINT_NAME", "TimerCheckpoint"]

CHECKPOINT_NAME: Final = "timer/checkpoint.json"
"""Where the checkpoint is, under the store's data directory."""
_VERSION: Final = 1


@dataclass(frozen=True)
class TimerCheckpoint:
    """One checkpoint (see module); ``marks`` a byte per entry from ``low`` (1: delivered)."""

    low: int = 0
    marks: bytes = b""
    log_offset: int = 0

    @classmethod
    def load(cls, path: Path) -> TimerCheckpoint | None:
        """The checkpoint at ``path``; None when there is none. Raises ``StoreIOError`` when
        it cannot be read, ``StoreError`` when it makes no sense."""
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreIOError("cannot read the timer checkpoint", path=str(path)) from exc
        try:
            data = json.loads(text)
            if data["version"] != _VERSION:
                raise ValueError(f"version {data['version']}")
            count = int(data["count"])
            packed = np.frombuffer(base64.b64decode(data["marks"]), dtype=np.uint8)
            marks = np.unpackbits(packed, count=count).tobytes() if count else b""
            return cls(int(data["low"]), marks, int(data["log_offset"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError("bad timer checkpoint", path=str(path), problem=str(exc)) from exc

    def save(self, path: Path, file_mode: int = DEFAULT_FILE_MODE) -> None:
        """Replace the checkpoint at ``path`` atomically and durably, a file of ``file_mode``
        (the store's) in a directory of the matching mode."""
        marks = np.frombuffer(self.marks, dtype=np.uint8)
        text = json.dumps(
            {
                "version": _VERSION,
                "low": self.low,
                "count": len(self.marks),
                "marks": base64.b64encode(np.packbits(marks).tobytes()).decode(),
                "log_offset": self.log_offset,
            }
        )
        write_atomically(path, text.encode(), mode=file_mode)  # StoreIOError when it cannot
