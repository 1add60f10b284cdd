"""A replicated log in memory for the data path's own tests (the agents, frames over real UDP,
the handshake over real gRPC): bytes, a flushed and a committed offset. The system tests run
real broker processes on the real store instead."""

from __future__ import annotations

import threading
from collections.abc import Callable

from aeromq.broker.replication import EpochFile, ReplicationError


class MemoryLog:
    """A ``ReplicatedLog`` of bytes (any offset is a boundary: the tests write whole chunks)."""

    def __init__(self, data: bytes = b"") -> None:
        self._data = bytearray(data)
        self._flushed = len(data)
        self._committed = 0
        self._lock = threading.Lock()
        self.flushes = 0
        self.resigns = 0
        self.leading = False
        self._on_commit_wait: Callable[[], object] | None = None

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
        """A leader's append (a send, which then waits for the commit); returns its end."""
        with self._lock:
            self._data += data
            end = len(self._data)
        listener = self._on_commit_wait
        if listener is not None:
            listener()
        return end

    def on_commit_wait(self, listener: Callable[[], object] | None) -> None:
        self._on_commit_wait = listener

    def read_log(self, offset: int, max_bytes: int) -> bytes:
        with self._lock:
            return bytes(self._data[offset : offset + max_bytes])

    def append_replicated(self, offset: int, data: bytes | memoryview) -> int:
        with self._lock:
            if offset != len(self._data):
                raise ReplicationError("not at the log end", offset=offset, leo=len(self._data))
            self._data += data
            return len(self._data)

    def flush(self) -> int:
        with self._lock:
            self._flushed = len(self._data)
            self.flushes += 1
            return self._flushed

    def set_high_watermark(self, offset: int) -> int:
        with self._lock:
            self._committed = max(self._committed, min(offset, len(self._data)))
            return self._committed

    def truncate_to(self, offset: int, *, epochs: EpochFile | None = None) -> int:
        with self._lock:
            dropped = len(self._data) - offset
            del self._data[offset:]
            self._flushed = min(self._flushed, offset)
        if epochs is not None:
            epochs.truncate_from(offset)
        return dropped

    def start_leading(self) -> None:
        self.leading = True

    def stop_leading(self) -> int:
        self.leading = False
        self.resigns += 1
        return 0
