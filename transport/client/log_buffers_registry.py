"""``LogBuffersRegistry``: the log buffer files a client has mapped, shared and lingered.

A log is mapped once per registration id (a publication's, or an image's correlation id, which
for IPC is its publication's registration id: a client that publishes and subscribes on the same
stream maps that file once) and reference counted by the publications and images that use it.
When the last one lets go, the mapping lingers for ``resource_linger_duration_ns`` before it is
unmapped, so an application thread still inside a poll or an offer of a just-closed resource
never touches unmapped memory.

Caller: the client conductor, under the client lock.
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.transport.logbuffer.log_buffers import LogBuffers

__all__ = ["LogBuffersRegistry"]


class _Entry:
    __slots__ = ("linger_deadline_ns", "log_buffers", "ref_count")

    def __init__(self, log_buffers: LogBuffers) -> None:
        self.log_buffers = log_buffers
        self.ref_count = 0
        self.linger_deadline_ns = 0


class LogBuffersRegistry:
    """Maps, shares and lingers log buffers (see module)."""

    __slots__ = ("_by_registration_id", "_error_handler", "_linger_ns", "_lingering", "_map")

    def __init__(
        self,
        resource_linger_duration_ns: int,
        error_handler: Callable[[BaseException], object],
        map_log: Callable[[str], LogBuffers] = LogBuffers.map,
    ) -> None:
        self._linger_ns = resource_linger_duration_ns
        self._error_handler = error_handler
        self._map = map_log
        self._by_registration_id: dict[int, _Entry] = {}
        self._lingering: list[_Entry] = []

    def acquire(self, registration_id: int, log_file_name: str) -> LogBuffers:
        """The mapped log of ``registration_id`` (mapping ``log_file_name`` the first time)."""
        entry = self._by_registration_id.get(registration_id)
        if entry is None:
            entry = _Entry(self._map(log_file_name))
            self._by_registration_id[registration_id] = entry
        entry.ref_count += 1
        return entry.log_buffers

    def release(self, registration_id: int, now_ns: int) -> None:
        """One user fewer; the last one starts the linger."""
        entry = self._by_registration_id.get(registration_id)
        if entry is None:
            return
        entry.ref_count -= 1
        if entry.ref_count <= 0:
            del self._by_registration_id[registration_id]
            entry.linger_deadline_ns = now_ns + self._linger_ns
            self._lingering.append(entry)

    def close_expired(self, now_ns: int) -> int:
        """Unmap the lingering logs whose time is up; return how many."""
        lingering = self._lingering
        if not lingering:
            return 0
        expired = [entry for entry in lingering if entry.linger_deadline_ns - now_ns <= 0]
        if not expired:
            return 0
        self._lingering = [entry for entry in lingering if entry.linger_deadline_ns - now_ns > 0]
        for entry in expired:
            self._close(entry.log_buffers)
        return len(expired)

    def close_all(self) -> None:
        """Unmap everything, in use or lingering (the client is closing)."""
        entries = [*self._by_registration_id.values(), *self._lingering]
        self._by_registration_id.clear()
        self._lingering.clear()
        for entry in entries:
            self._close(entry.log_buffers)

    @property
    def mapped_count(self) -> int:
        return len(self._by_registration_id)

    @property
    def lingering_count(self) -> int:
        return len(self._lingering)

    def is_mapped(self, registration_id: int) -> bool:
        return registration_id in self._by_registration_id

    def _close(self, log_buffers: LogBuffers) -> None:
        try:
            log_buffers.close()
        except Exception as error:  # a view still held by the application, say
            self._error_handler(error)
