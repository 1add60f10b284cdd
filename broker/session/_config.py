"""``SessionServerConfig``: the limits and timeouts of the broker's transport sessions."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from aeromq.broker._errors import ConfigError
from aeromq.broker.store._file_modes import make_dirs

__all__ = ["LocalReadGrant", "SessionServerConfig"]


@dataclass(frozen=True, slots=True)
class LocalReadGrant:
    """What an IPC session granted local reads is told (``ConnectResponse.local_read_*``): the
    commit log's directory (absolute), the length of each of its files, and the directory's
    device and inode numbers (so that a client whose path names another directory does not use
    it). See ``pipeline/_local_reads.py``."""

    directory: str
    file_bytes: int
    device: int
    inode: int

    @classmethod
    def of(cls, directory: Path, file_bytes: int, file_mode: int) -> LocalReadGrant:
        """The grant of ``directory``, made if missing as the commit log makes it (the store's
        ``file_mode``)."""
        make_dirs(directory, file_mode)
        resolved = directory.resolve()
        status = os.stat(resolved)
        return cls(str(resolved), file_bytes, status.st_dev, status.st_ino)


@dataclass(frozen=True, kw_only=True)
class SessionServerConfig:
    """Validated on construction (:class:`~broker.ConfigError` naming the field).

    =============================  ========  ===================================================
    field                          default   meaning
    =============================  ========  ===================================================
    session_timeout_ms             10 000    a session that sends nothing this long is closed
    connect_timeout_ms             5 000     the response publication must connect within this
    max_sessions                   4 096     CONNECTs beyond it are refused (SYSTEM_BUSY)
    max_backlog_responses          1 024     answers queued behind a back-pressured response
                                             stream; past half of it the session's sends are
                                             ABORTed, past all of it the session is closed
    fragment_limit                 64        fragments per ingress poll
    tombstone_linger_ms            60 000    how long a closed session's id is remembered, to
                                             answer its late requests with the reason
    max_tombstones                 10 000    closed sessions remembered at most
    max_sessions_per_client        64        CONNECTs of one client beyond it are refused
                                             (SYSTEM_BUSY); a client is its ``client_id`` at
                                             its source (``_client_limits.py``)
    max_log_bytes_per_client       8 GiB     shared memory one client's sessions may take (two
                                             logs each: 384 MiB over IPC by default)
    max_response_term_length       64 MiB    a CONNECT whose response channel asks a longer
                                             term is refused (INVALID_PARAMETER)
    =============================  ========  ===================================================
    """

    session_timeout_ms: int = 10_000
    connect_timeout_ms: int = 5_000
    max_sessions: int = 4_096
    max_backlog_responses: int = 1_024
    fragment_limit: int = 64
    tombstone_linger_ms: int = 60_000
    max_tombstones: int = 10_000
    max_sessions_per_client: int = 64
    max_log_bytes_per_client: int = 8 * 1024**3
    max_response_term_length: int = 64 * 1024**2

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(
                    "session setting must be a positive int", field=f.name, value=value
                )
        if self.max_backlog_responses < 2:
            raise ConfigError(
                "max_backlog_responses must be >= 2",
                field="max_backlog_responses",
                value=self.max_backlog_responses,
            )
