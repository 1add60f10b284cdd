"""``cnc.dat``, the media driver's command-and-control file, and its descriptor.

The driver creates the file in its directory; clients and tools map it to find everything
else. A 128-byte header of lengths and identity, then five regions back to back::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                          CnC Version                          |
    +---------------------------------------------------------------+
  4 |                    To-Driver Buffer Length                    |
    +---------------------------------------------------------------+
  8 |                   To-Clients Buffer Length                    |
    +---------------------------------------------------------------+
 12 |                Counters Metadata Buffer Length                |
    +---------------------------------------------------------------+
 16 |                 Counters Values Buffer Length                 |
    +---------------------------------------------------------------+
 20 |                    Error Log Buffer Length                    |
    +---------------------------------------------------------------+
 24 |                 Client Liveness Timeout (ns)                  |
    |                                                               |
    +---------------------------------------------------------------+
 32 |                  Driver Start Timestamp (ms)                  |
    |                                                               |
    +---------------------------------------------------------------+
 40 |                          Driver PID                           |
    |                                                               |
    +---------------------------------------------------------------+
 48 |                        File Page Size                         |
    +---------------------------------------------------------------+
 52 |                   (zero up to 128 bytes)                     ...
   ...                                                              |
    +---------------------------------------------------------------+
128 |       To-Driver Buffer (many-to-one ring buffer + trailer)   ...
   ...                                                              |
    +---------------------------------------------------------------+
    |       To-Clients Buffer (broadcast buffer + trailer)         ...
   ...                                                              |
    +---------------------------------------------------------------+
    |       Counters Metadata Buffer (512-byte records)            ...
   ...                                                              |
    +---------------------------------------------------------------+
    |       Counters Values Buffer (128-byte records)              ...
   ...                                                              |
    +---------------------------------------------------------------+
    |       Error Log Buffer                                       ...
   ...                                                              |
    +---------------------------------------------------------------+

The file length is ``align(128 + the five lengths, file_page_size)``. The version is a
semantic version, ``0x200`` (0.2.0): a client refuses a file of another major version. The
driver writes it LAST, with a release store, after every other field; a client waits until
it reads non-zero before it trusts the rest. The driver's liveness is the to-driver ring
buffer's consumer heartbeat (ms) in its trailer (``ring_buffer_descriptor``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Self

from aeromq.transport._errors import CncFileError, ConfigurationError
from aeromq.transport.concurrent import (
    MappedFile,
    broadcast_descriptor,
    counters_descriptor,
    ring_buffer_descriptor,
)
from aeromq.transport.concurrent.file_modes import DEFAULT_FILE_MODE, make_dirs

__all__ = [
    "CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET",
    "CLIENT_LIVENESS_TIMEOUT_NS_DEFAULT",
    "CNC_FILE",
    "CNC_VERSION",
    "CNC_VERSION_FIELD_OFFSET",
    "COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET",
    "COUNTERS_VALUES_BUFFER_LENGTH_DEFAULT",
    "COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET",
    "END_OF_METADATA_OFFSET",
    "ERROR_LOG_BUFFER_LENGTH_DEFAULT",
    "ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET",
    "FILE_PAGE_SIZE_DEFAULT",
    "FILE_PAGE_SIZE_FIELD_OFFSET",
    "META_DATA_FIELDS_LENGTH",
    "PID_FIELD_OFFSET",
    "START_TIMESTAMP_FIELD_OFFSET",
    "TO_CLIENTS_BUFFER_LENGTH_DEFAULT",
    "TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET",
    "TO_DRIVER_BUFFER_LENGTH_DEFAULT",
    "TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET",
    "CncFile",
    "compute_cnc_file_length",
    "semantic_version_compose",
    "semantic_version_major",
    "semantic_version_minor",
    "semantic_version_patch",
    "semantic_version_to_string",
]

CNC_FILE = "cnc.dat"

CNC_VERSION_FIELD_OFFSET = 0
TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET = CNC_VERSION_FIELD_OFFSET + 4
TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET = TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET + 4
COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET = TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET + 4
COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET = COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET + 4
ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET = COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET + 4
CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET = ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET + 4
START_TIMESTAMP_FIELD_OFFSET = CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET + 8
PID_FIELD_OFFSET = START_TIMESTAMP_FIELD_OFFSET + 8
FILE_PAGE_SIZE_FIELD_OFFSET = PID_FIELD_OFFSET + 8
META_DATA_FIELDS_LENGTH = FILE_PAGE_SIZE_FIELD_OFFSET + 4
END_OF_METADATA_OFFSET = 128
"""The header padded to two cache lines: the to-driver buffer starts here."""


def semantic_version_compose(major: int, minor: int, patch: int) -> int:
    """Aeron's ``SemanticVersion.compose``: one byte each, ``major << 16 | minor << 8 | patch``."""
    for name, part in (("major", major), ("minor", minor), ("patch", patch)):
        if not 0 <= part <= 255:
            raise ConfigurationError("semantic version part out of 0..255", part=name, value=part)
    return (major << 16) | (minor << 8) | patch


def semantic_version_major(version: int) -> int:
    return (version >> 16) & 0xFF


def semantic_version_minor(version: int) -> int:
    return (version >> 8) & 0xFF


def semantic_version_patch(version: int) -> int:
    return version & 0xFF


def semantic_version_to_string(version: int) -> str:
    return (
        f"{semantic_version_major(version)}.{semantic_version_minor(version)}."
        f"{semantic_version_patch(version)}"
    )


CNC_VERSION = semantic_version_compose(0, 2, 0)

_MIB = 1024 * 1024
TO_DRIVER_BUFFER_LENGTH_DEFAULT = _MIB + ring_buffer_descriptor.TRAILER_LENGTH
TO_CLIENTS_BUFFER_LENGTH_DEFAULT = _MIB + broadcast_descriptor.TRAILER_LENGTH
COUNTERS_VALUES_BUFFER_LENGTH_DEFAULT = _MIB
ERROR_LOG_BUFFER_LENGTH_DEFAULT = _MIB
CLIENT_LIVENESS_TIMEOUT_NS_DEFAULT = 10_000_000_000
FILE_PAGE_SIZE_DEFAULT = 4096

_FILE_PAGE_SIZE_MIN = 4096
_FILE_PAGE_SIZE_MAX = 1024 * _MIB
_MAP_POLL_INTERVAL_S = 0.001


def compute_cnc_file_length(total_length_of_buffers: int, file_page_size: int) -> int:
    """The file length for the given regions: the header plus them, aligned to the page size."""
    length = END_OF_METADATA_OFFSET + total_length_of_buffers
    return (length + file_page_size - 1) & ~(file_page_size - 1)


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _check_lengths(
    to_driver_buffer_length: int,
    to_clients_buffer_length: int,
    counters_values_buffer_length: int,
    error_log_buffer_length: int,
    client_liveness_timeout_ns: int,
    file_page_size: int,
) -> None:
    ring_buffer_descriptor.check_capacity(to_driver_buffer_length)
    broadcast_descriptor.check_capacity(to_clients_buffer_length)
    record_length = counters_descriptor.COUNTER_LENGTH
    if counters_values_buffer_length <= 0 or counters_values_buffer_length % record_length:
        raise ConfigurationError(
            "counters values buffer length must be a positive multiple of the record length",
            counters_values_buffer_length=counters_values_buffer_length,
            record_length=record_length,
        )
    if error_log_buffer_length <= 0 or error_log_buffer_length % 8:
        raise ConfigurationError(
            "error log buffer length must be a positive multiple of 8",
            error_log_buffer_length=error_log_buffer_length,
        )
    if client_liveness_timeout_ns <= 0:
        raise ConfigurationError(
            "client liveness timeout must be positive",
            client_liveness_timeout_ns=client_liveness_timeout_ns,
        )
    if not (
        _is_power_of_two(file_page_size)
        and _FILE_PAGE_SIZE_MIN <= file_page_size <= _FILE_PAGE_SIZE_MAX
    ):
        raise ConfigurationError(
            "file page size must be a power of two from 4 KiB to 1 GiB",
            file_page_size=file_page_size,
        )


class CncFile:
    """A mapped ``cnc.dat``: its header values and a buffer per region.

    ``CncFile.create`` is the driver's side, ``CncFile.map`` the client's and tools'. The
    buffers share the mapping; ``close()`` releases them all and unmaps (idempotent).
    """

    __slots__ = (
        "_buffers",
        "_mapped",
        "client_liveness_timeout_ns",
        "cnc_version",
        "counters_metadata_buffer",
        "counters_values_buffer",
        "error_log_buffer",
        "file_page_size",
        "path",
        "pid",
        "start_timestamp_ms",
        "to_clients_buffer",
        "to_driver_buffer",
    )

    def __init__(self, mapped: MappedFile) -> None:
        """Wrap a mapped cnc.dat whose header is complete; use ``create`` or ``map``."""
        self._mapped = mapped
        self.path = mapped.path
        header = mapped.buffer
        self.cnc_version = header.get_int32_volatile(CNC_VERSION_FIELD_OFFSET)
        self.client_liveness_timeout_ns = header.get_int64(CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET)
        self.start_timestamp_ms = header.get_int64(START_TIMESTAMP_FIELD_OFFSET)
        self.pid = header.get_int64(PID_FIELD_OFFSET)
        self.file_page_size = header.get_int32(FILE_PAGE_SIZE_FIELD_OFFSET)
        offset = END_OF_METADATA_OFFSET
        buffers = []
        for field in (
            TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET,
            TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET,
            COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET,
            COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET,
            ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET,
        ):
            length = header.get_int32(field)
            buffers.append(header.slice(offset, length))
            offset += length
        self._buffers = tuple(buffers)
        (
            self.to_driver_buffer,
            self.to_clients_buffer,
            self.counters_metadata_buffer,
            self.counters_values_buffer,
            self.error_log_buffer,
        ) = self._buffers

    @classmethod
    def create(
        cls,
        directory: str | os.PathLike[str],
        *,
        to_driver_buffer_length: int = TO_DRIVER_BUFFER_LENGTH_DEFAULT,
        to_clients_buffer_length: int = TO_CLIENTS_BUFFER_LENGTH_DEFAULT,
        counters_values_buffer_length: int = COUNTERS_VALUES_BUFFER_LENGTH_DEFAULT,
        error_log_buffer_length: int = ERROR_LOG_BUFFER_LENGTH_DEFAULT,
        client_liveness_timeout_ns: int = CLIENT_LIVENESS_TIMEOUT_NS_DEFAULT,
        start_timestamp_ms: int,
        pid: int,
        file_page_size: int = FILE_PAGE_SIZE_DEFAULT,
        file_mode: int = DEFAULT_FILE_MODE,
    ) -> CncFile:
        """Create (or replace) ``directory/cnc.dat``, fill its header, and publish the version.

        The counters metadata buffer is 4 x the values buffer (a 512-byte metadata record per
        128-byte value). Every field is written before
        the version, which is stored last with release semantics, so a client that reads a
        non-zero version sees a complete header. The caller checks that no live driver owns
        the directory first: replacing a file under a running driver breaks its clients.
        """
        _check_lengths(
            to_driver_buffer_length,
            to_clients_buffer_length,
            counters_values_buffer_length,
            error_log_buffer_length,
            client_liveness_timeout_ns,
            file_page_size,
        )
        counters_metadata_buffer_length = (
            counters_values_buffer_length
            * counters_descriptor.METADATA_LENGTH
            // counters_descriptor.COUNTER_LENGTH
        )
        total = (
            to_driver_buffer_length
            + to_clients_buffer_length
            + counters_metadata_buffer_length
            + counters_values_buffer_length
            + error_log_buffer_length
        )
        if END_OF_METADATA_OFFSET + total > 2**31 - 1:
            raise ConfigurationError("cnc.dat would exceed 2 GiB", total_length_of_buffers=total)
        path = Path(directory)
        make_dirs(path, file_mode)
        mapped = MappedFile.create(
            path / CNC_FILE, compute_cnc_file_length(total, file_page_size), mode=file_mode
        )
        header = mapped.buffer
        header.put_int32(TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET, to_driver_buffer_length)
        header.put_int32(TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET, to_clients_buffer_length)
        header.put_int32(
            COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET, counters_metadata_buffer_length
        )
        header.put_int32(COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET, counters_values_buffer_length)
        header.put_int32(ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET, error_log_buffer_length)
        header.put_int64(CLIENT_LIVENESS_TIMEOUT_FIELD_OFFSET, client_liveness_timeout_ns)
        header.put_int64(START_TIMESTAMP_FIELD_OFFSET, start_timestamp_ms)
        header.put_int64(PID_FIELD_OFFSET, pid)
        header.put_int32(FILE_PAGE_SIZE_FIELD_OFFSET, file_page_size)
        header.put_int32_ordered(CNC_VERSION_FIELD_OFFSET, CNC_VERSION)
        return cls(mapped)

    @classmethod
    def map(cls, directory: str | os.PathLike[str], *, timeout_ms: int = 10_000) -> CncFile:
        """Map ``directory/cnc.dat`` once a driver has published it; raise CncFileError if not.

        Waits up to ``timeout_ms`` for the file to exist and its version to turn non-zero,
        then refuses a file of another major version, or one shorter than its header says.
        """
        path = Path(directory) / CNC_FILE
        deadline = time.monotonic() + timeout_ms / 1000
        mapped: MappedFile | None = None
        while True:
            if mapped is None:
                try:
                    mapped = MappedFile.open(path, min_length=END_OF_METADATA_OFFSET)
                except (FileNotFoundError, ConfigurationError):
                    mapped = None
            if mapped is not None and mapped.buffer.get_int32_volatile(CNC_VERSION_FIELD_OFFSET):
                break
            if time.monotonic() >= deadline:
                reason = "no file" if mapped is None else "version never set"
                if mapped is not None:
                    mapped.close()
                raise CncFileError(
                    "cnc.dat not ready", path=str(path), timeout_ms=timeout_ms, reason=reason
                )
            time.sleep(_MAP_POLL_INTERVAL_S)
        try:
            _check_mapped(mapped)
        except CncFileError:
            mapped.close()
            raise
        return cls(mapped)

    @property
    def file_length(self) -> int:
        return self._mapped.length

    @property
    def counters_metadata_buffer_length(self) -> int:
        return self.counters_metadata_buffer.capacity

    def driver_heartbeat_ms(self) -> int:
        """The driver's last heartbeat (epoch ms) in the to-driver buffer's trailer, acquire."""
        trailer = self.to_driver_buffer.capacity - ring_buffer_descriptor.TRAILER_LENGTH
        return self.to_driver_buffer.get_int64_volatile(
            trailer + ring_buffer_descriptor.CONSUMER_HEARTBEAT_OFFSET
        )

    def close(self) -> None:
        for buffer in self._buffers:
            buffer.release()
        self._buffers = ()
        self._mapped.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"CncFile(path={str(self.path)!r}, version="
            f"{semantic_version_to_string(self.cnc_version)}, pid={self.pid})"
        )


def _check_mapped(mapped: MappedFile) -> None:
    header = mapped.buffer
    version = header.get_int32_volatile(CNC_VERSION_FIELD_OFFSET)
    if semantic_version_major(version) != semantic_version_major(CNC_VERSION):
        raise CncFileError(
            "cnc.dat version not compatible",
            path=str(mapped.path),
            app_version=semantic_version_to_string(CNC_VERSION),
            file_version=semantic_version_to_string(version),
        )
    lengths = [
        header.get_int32(field)
        for field in (
            TO_DRIVER_BUFFER_LENGTH_FIELD_OFFSET,
            TO_CLIENTS_BUFFER_LENGTH_FIELD_OFFSET,
            COUNTERS_METADATA_BUFFER_LENGTH_FIELD_OFFSET,
            COUNTERS_VALUES_BUFFER_LENGTH_FIELD_OFFSET,
            ERROR_LOG_BUFFER_LENGTH_FIELD_OFFSET,
        )
    ]
    required_length = END_OF_METADATA_OFFSET + sum(lengths)
    if min(lengths) < 0 or required_length > mapped.length:
        raise CncFileError(
            "cnc.dat shorter than its header says",
            path=str(mapped.path),
            file_length=mapped.length,
            required_length=required_length,
            lengths=lengths,
        )
