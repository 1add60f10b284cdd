"""A replicated log in memory for the data path's own tests (the agents, frames over real UDP,
the handshake over real gRPC): bytes, a flushed and a committed offset. The system tests run
real broker processes on the real store instead."""

from __future__ import annotations

import threading

from aeromq.broker.replication import ReplicationError


class MemoryLog:
    """A ``ReplicatedLog`` of bytes (any offset is a boundary: the tests write whole chunks)."""

    def __init__(self, data: bytes = b"") -> None:
        self._data = bytearray(data)
        self._flushed = len(data)
        self._committed = 0
        self._lock = threading.Lock()
        self.flushes = 0
        self.resigns = 0

    @property
    def max_physical_offset(self) -> int:
        return len(self._data)

    @property
    def flushed_physical_offset(self) -> int:
        return self._flushed

    @property
    def committed_offset(self) -> int:
        return self._committed

    @property
    def data(self) -> bytes:
        with self._lock:
            return bytes(self._data)

    def append(self, data: bytes) -> int:
        """A leader's append (a send); returns its end."""
        with self._lock:
            self._data += data
            return len(self._data)

    def read_log(self, offset: int, max_bytes: int) -> bytes:
        with self._lock:
            return bytes(self._data[offset : offset + max_bytes])

    def append_replicated(self, offset: int, data: bytes | memoryview) -> None:
        with self._lock:
            if offset != len(self._data):
                raise ReplicationError("not at the log end", offset=offset, leo=len(self._data))
            self._data += data

    def flush(self) -> int:
        with self._lock:
            self._flushed = len(self._data)
            self.flushes += 1
            return self._flushed

    def set_high_watermark(self, high_watermark: int) -> None:
        with self._lock:
            self._committed = max(self._committed, min(high_watermark, len(self._data)))

    def truncate_to(self, offset: int) -> None:
        with self._lock:
            del self._data[offset:]
            self._flushed = min(self._flushed, offset)

    def fail_uncommitted(self) -> None:
        self.resigns += 1
