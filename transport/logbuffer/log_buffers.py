"""``LogBuffers``: a log buffer file mapped into memory, cut into its terms and metadata.

``LogBuffers.create`` makes the file (the driver does this for each publication and image) and
``LogBuffers.map`` maps an existing one (a client, given the file name by the driver). The layout
is in :mod:`transport.logbuffer.log_buffer_descriptor`: three terms from offset 0, the metadata
in the last ``LOG_META_DATA_LENGTH`` bytes. ``create`` records the term length and page size in
the metadata; ``map`` checks them against the file's length.
"""

from __future__ import annotations

import os
from pathlib import Path

from aeromq.transport._errors import ConfigurationError, LogBufferFileError, TransportStateError
from aeromq.transport.concurrent import AtomicBuffer, MappedFile
from aeromq.transport.concurrent.file_modes import DEFAULT_FILE_MODE
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_META_DATA_LENGTH,
    LOG_PAGE_SIZE_OFFSET,
    LOG_TERM_LENGTH_OFFSET,
    PAGE_MIN_SIZE,
    PARTITION_COUNT,
    TERM_MIN_LENGTH,
    check_page_size,
    check_term_length,
    compute_log_length,
)
from aeromq.transport.logbuffer.log_metadata import LogMetadata

__all__ = ["LogBuffers"]


class LogBuffers:
    """The terms (``term_buffers``) and metadata (``meta_data_buffer``) of one log buffer file."""

    __slots__ = ("_file", "meta_data_buffer", "metadata", "term_buffers", "term_length")

    def __init__(self, mapped_file: MappedFile, term_length: int) -> None:
        self._file: MappedFile | None = mapped_file
        whole = mapped_file.buffer
        self.term_length = term_length
        self.term_buffers: tuple[AtomicBuffer, ...] = tuple(
            whole.slice(i * term_length, term_length) for i in range(PARTITION_COUNT)
        )
        self.meta_data_buffer = whole.slice(
            mapped_file.length - LOG_META_DATA_LENGTH, LOG_META_DATA_LENGTH
        )
        self.metadata = LogMetadata(self.meta_data_buffer)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        term_length: int,
        page_size: int = PAGE_MIN_SIZE,
        *,
        sparse: bool = True,
        mode: int = DEFAULT_FILE_MODE,
    ) -> LogBuffers:
        """Create (or truncate) the file at ``path`` with permission bits ``mode`` and map it,
        zeroed.

        A sparse file takes memory only as it is written; ``sparse=False`` allocates it all
        before mapping it (so running out of space is an ``OSError`` here, the file removed,
        not a SIGBUS on a later write).
        """
        check_term_length(term_length)
        check_page_size(page_size)
        log_length = compute_log_length(term_length, page_size)
        mapped_file = MappedFile.create(path, log_length, mode=mode, allocate=not sparse)
        log = cls(mapped_file, term_length)
        log.metadata.term_length = term_length
        log.metadata.page_size = page_size
        return log

    @classmethod
    def map(cls, path: str | os.PathLike[str]) -> LogBuffers:
        """Map an existing log buffer file, checking its length against its metadata."""
        target = Path(path)
        min_length = compute_log_length(TERM_MIN_LENGTH, PAGE_MIN_SIZE)
        file_length = target.stat().st_size
        if file_length < min_length:
            raise LogBufferFileError(
                "log buffer file too short",
                path=str(target),
                length=file_length,
                min_length=min_length,
            )
        mapped_file = MappedFile.open(target, min_length=min_length)
        meta_offset = mapped_file.length - LOG_META_DATA_LENGTH
        term_length = mapped_file.buffer.get_int32(meta_offset + LOG_TERM_LENGTH_OFFSET)
        page_size = mapped_file.buffer.get_int32(meta_offset + LOG_PAGE_SIZE_OFFSET)
        try:
            _check_log_length(target, mapped_file.length, term_length, page_size)
        except LogBufferFileError:
            mapped_file.close()
            raise
        return cls(mapped_file, term_length)

    @property
    def file_length(self) -> int:
        """The log file's length in bytes: three terms and the metadata, page aligned."""
        return self._live_file().length

    @property
    def path(self) -> Path:
        """The log file mapped; ``TransportStateError`` once closed."""
        return self._live_file().path

    def close(self) -> None:
        """Release the term and metadata views and unmap the file; idempotent.

        Every view taken of these buffers (slices, memoryviews) must be released first.
        """
        mapped_file = self._file
        if mapped_file is None:
            return
        self._file = None
        for buffer in self.term_buffers:
            buffer.release()
        self.meta_data_buffer.release()
        mapped_file.close()

    def __enter__(self) -> LogBuffers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _live_file(self) -> MappedFile:
        if self._file is None:
            raise TransportStateError("log buffers are closed")
        return self._file


def _check_log_length(path: Path, file_length: int, term_length: int, page_size: int) -> None:
    try:
        check_term_length(term_length)
        check_page_size(page_size)
    except ConfigurationError as exc:
        raise LogBufferFileError(
            "log buffer metadata is not valid",
            path=str(path),
            length=file_length,
            term_length=term_length,
            page_size=page_size,
        ) from exc
    expected_length = compute_log_length(term_length, page_size)
    if file_length != expected_length:
        raise LogBufferFileError(
            "log buffer file length does not match its metadata",
            path=str(path),
            length=file_length,
            term_length=term_length,
            page_size=page_size,
            expected_length=expected_length,
        )
