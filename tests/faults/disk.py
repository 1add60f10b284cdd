"""Disk faults on a stopped member's data directory: a simulated power loss and a corrupted
batch.

**Power loss.** A member started with ``AEROMQ_TEST_FSYNC_LEDGER=1`` records in its data
directory the commit log offset of each fsync it completed (``commitlog.fsynced``, written by
the store after the fsync returned: see ``broker/store/_fsync_ledger.py``). After the member is
SIGKILLed, :func:`drop_unfsynced_suffix` zeroes every commit log byte from that offset on: the
page cache held them, a power loss would not have (a preallocated segment reads back zeros
where nothing reached the disk). The ledger only under-states what was fsynced (a kill between
an fsync and its record), so the loss simulated is never smaller than a real one could be, and
every byte the member ever reported durable (an ACK, the high watermark) survives. Consume
queues, index and checkpoint are left as they are: recovery drops what points past the log's
end, and the checkpoint is written only after the log's fsync.

**Corruption.** :func:`corrupt_batch` flips bytes inside one stored batch's records (its
framing intact, its CRC no longer matching): bit rot on one replica.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Final

from aeromq.broker.store import FSYNC_LEDGER_FILE
from aeromq.common.record_batch import BATCH_MAGIC

__all__ = ["batch_offsets", "corrupt_batch", "drop_unfsynced_suffix", "fsynced_offset"]

_PREFIX: Final = struct.Struct("<iI")
_OFFSET: Final = struct.Struct("<q")
_CHUNK: Final = 1 << 20


def fsynced_offset(data_dir: Path) -> int:
    """The last commit log offset the member recorded as fsynced (0: none yet)."""
    path = data_dir / FSYNC_LEDGER_FILE
    data = path.read_bytes() if path.exists() else b""
    return int(_OFFSET.unpack_from(data)[0]) if len(data) >= _OFFSET.size else 0


def _segments(data_dir: Path) -> list[tuple[int, Path]]:
    directory = data_dir / "commitlog"
    return sorted((int(path.name), path) for path in directory.iterdir() if path.name.isdigit())


def drop_unfsynced_suffix(data_dir: Path) -> tuple[int, int]:
    """Zero the commit log of a stopped member from its last recorded fsync on (see module);
    returns (that offset, the bytes that held anything)."""
    offset = fsynced_offset(data_dir)
    lost = 0
    for start, path in _segments(data_dir):
        size = path.stat().st_size
        if start + size <= offset:
            continue
        begin = max(0, offset - start)
        with path.open("r+b") as segment:
            segment.seek(begin)
            position = begin
            while position < size:
                chunk = segment.read(min(_CHUNK, size - position))
                if chunk.count(0) != len(chunk):
                    lost += len(chunk.rstrip(b"\0"))
                    segment.seek(position)
                    segment.write(bytes(len(chunk)))
                position += len(chunk)
            segment.flush()
            os.fsync(segment.fileno())
    return offset, lost


def batch_offsets(data_dir: Path) -> list[tuple[int, int]]:
    """(commit log offset, length) of every batch in a member's commit log, in order."""
    found: list[tuple[int, int]] = []
    for start, path in _segments(data_dir):
        data = path.read_bytes()
        position = 0
        while position + _PREFIX.size <= len(data):
            length, magic = _PREFIX.unpack_from(data, position)
            if magic != BATCH_MAGIC or length <= 0:
                break  # a blank filler or the end of what was written
            found.append((start + position, length))
            position += length
    return found


def corrupt_batch(data_dir: Path, offset: int, length: int) -> None:
    """Flip the last 4 bytes of the batch at commit log ``offset`` (``length`` bytes): its
    records' bytes, under its CRC."""
    for start, path in _segments(data_dir):
        if start <= offset < start + path.stat().st_size:
            with path.open("r+b") as segment:
                segment.seek(offset - start + length - 4)
                tail = segment.read(4)
                segment.seek(offset - start + length - 4)
                segment.write(bytes(b ^ 0xFF for b in tail))
                segment.flush()
                os.fsync(segment.fileno())
            return
    raise ValueError(f"no segment holds offset {offset}")
