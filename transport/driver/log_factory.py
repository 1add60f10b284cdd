"""A log buffer file, a publication's (IPC or UDP) or an image's: file, metadata, deletion.

The driver side of Aeron's log setup (``FileStoreLogFactory``): create the file (sparse or
allocated up front), and fill a publication's metadata as Aeron's driver does before any client
maps it (an image's metadata is filled by ``transport/driver/udp/udp_subscriptions.py``, from the
SETUP). The room check before it (Aeron's ``perform_storage_checks``) is
:mod:`~transport.driver.log_storage`'s. Problems become :class:`~transport.RegistrationError`
(``STORAGE_SPACE`` when out of space) for the command. At its end of life the file is deleted
(:func:`delete_log`).
"""

from __future__ import annotations

import errno
import os

from aeromq.transport._errors import ConfigurationError, LogBufferFileError
from aeromq.transport.command import ErrorCode
from aeromq.transport.driver.command_error import command_error
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_TYPE_CONCURRENT,
    LOG_TYPE_EXCLUSIVE,
    fill_default_header,
    initialise_tails,
    set_active_transport_count,
    set_end_of_stream_position,
    set_is_connected,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers

__all__ = [
    "create_log",
    "delete_log",
    "initialise_log_metadata",
    "producer_window_length",
]

_MAX_POSITION = 2**63 - 1


def producer_window_length(window_length: int, term_length: int) -> int:
    """Aeron's publication window: half a term, or ``window_length`` if set and smaller."""
    half_term = term_length // 2
    return window_length if 0 < window_length < half_term else half_term


def create_log(
    path: str, term_length: int, page_size: int, sparse: bool, file_mode: int
) -> LogBuffers:
    """Create and map the log file with permission bits ``file_mode``; a failure is the
    command's error."""
    try:
        return LogBuffers.create(path, term_length, page_size, sparse=sparse, mode=file_mode)
    except (OSError, ConfigurationError, LogBufferFileError) as exc:
        out_of_space = isinstance(exc, OSError) and exc.errno == errno.ENOSPC
        code = ErrorCode.STORAGE_SPACE if out_of_space else ErrorCode.GENERIC_ERROR
        raise command_error(code, f"could not create log buffer ({exc})", path=path) from exc


def delete_log(path: str) -> bool:
    """Delete a log file (already unmapped); False when it could not go (a free failure)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def initialise_log_metadata(
    log: LogBuffers,
    *,
    registration_id: int,
    session_id: int,
    stream_id: int,
    initial_term_id: int,
    term_id: int | None,
    term_offset: int,
    mtu_length: int,
    term_window_length: int,
    linger_timeout_ns: int,
    untethered_window_limit_timeout_ns: int,
    untethered_resting_timeout_ns: int,
    is_exclusive: bool,
    is_sparse: bool,
    signal_eos: bool,
    tether: bool,
    spies_simulate_connection: bool,
    entity_tag: int,
    response_correlation_id: int,
) -> None:
    """Fill a new log's metadata as Aeron's driver does, before anyone maps it."""
    meta = log.meta_data_buffer
    metadata = log.metadata
    initialise_tails(meta, initial_term_id, term_id, term_offset)
    metadata.initial_term_id = initial_term_id
    metadata.mtu_length = mtu_length
    metadata.correlation_id = registration_id
    metadata.publication_window_length = term_window_length
    metadata.linger_timeout_ns = linger_timeout_ns
    metadata.untethered_window_limit_timeout_ns = untethered_window_limit_timeout_ns
    metadata.untethered_resting_timeout_ns = untethered_resting_timeout_ns
    metadata.entity_tag = entity_tag
    metadata.response_correlation_id = response_correlation_id
    metadata.sparse = is_sparse
    metadata.signal_eos = signal_eos
    metadata.tether = tether
    metadata.spies_simulate_connection = spies_simulate_connection
    metadata.reliable = True
    metadata.rejoin = True
    metadata.log_type = LOG_TYPE_EXCLUSIVE if is_exclusive else LOG_TYPE_CONCURRENT
    fill_default_header(meta, session_id, stream_id, initial_term_id)
    set_active_transport_count(meta, 0)
    set_end_of_stream_position(meta, _MAX_POSITION)
    set_is_connected(meta, False)
