"""``AtomicBuffer``: Agrona's UnsafeBuffer over shared memory.

The accessors (plain get/put, ``*_volatile`` acquire loads, ``*_ordered`` release stores,
``compare_and_set_*``, ``get_and_add_*``) are implemented in the native helper
``aeromq.transport.concurrent._atomic`` (see its source for why): this module adds the constructors
that map files and the conveniences that are not on the hot path.

All integers are little-endian. Indices are bounds-checked; a bad one raises
:class:`~transport.IndexOutOfBoundsError`, an ``IndexError``.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from pathlib import Path
from typing import Self

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent._atomic import AtomicBufferBase
from aeromq.transport.concurrent.file_modes import DEFAULT_FILE_MODE

__all__ = ["AtomicBuffer", "MappedFile"]


class AtomicBuffer(AtomicBufferBase):
    """A bounds-checked region of a writable buffer with atomic operations.

    ``AtomicBuffer(source, offset=0, length=-1)`` views ``length`` bytes of ``source`` (an
    ``mmap``, ``bytearray`` or another ``AtomicBuffer``) from ``offset``. The view keeps the
    source exported until :meth:`release`, so an ``mmap`` cannot be closed under it.
    """

    __slots__ = ()

    @classmethod
    def allocate(cls, length: int) -> Self:
        """A zeroed, 64-byte aligned buffer of ``length`` bytes in anonymous memory."""
        if length <= 0:
            raise ConfigurationError("buffer length must be positive", length=length)
        return cls(mmap.mmap(-1, length))

    def slice(self, offset: int, length: int) -> AtomicBuffer:
        """A view of ``length`` bytes from ``offset`` that shares this buffer's memory."""
        return AtomicBuffer(self, offset, length)

    def get_string_ascii(self, index: int) -> str:
        """An i32 length followed by that many ASCII bytes (Agrona's getStringAscii)."""
        length = self.get_int32(index)
        return self.get_bytes(index + 4, length).decode("ascii")

    def put_string_ascii(self, index: int, value: str) -> int:
        """Write an i32 length then the ASCII bytes of ``value``; return the bytes written."""
        encoded = value.encode("ascii")
        self.put_int32(index, len(encoded))
        self.put_bytes(index + 4, encoded)
        return 4 + len(encoded)

    def __len__(self) -> int:
        return self.capacity

    def __repr__(self) -> str:
        return f"AtomicBuffer(address=0x{self.address:x}, capacity={self.capacity})"


class MappedFile:
    """A file mapped into memory, shared with every process that maps the same path.

    ``MappedFile.create(path, length)`` makes (or truncates) the file and maps it;
    ``MappedFile.open(path)`` maps an existing one. ``buffer`` is an :class:`AtomicBuffer`
    over the whole mapping. ``close()`` releases the buffer and unmaps; it is idempotent.
    """

    __slots__ = ("_buffer", "_mmap", "path")

    def __init__(self, path: Path, mapping: mmap.mmap) -> None:
        self.path = path
        self._mmap = mapping
        self._buffer: AtomicBuffer | None = AtomicBuffer(mapping)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        length: int,
        *,
        mode: int = DEFAULT_FILE_MODE,
        allocate: bool = False,
    ) -> MappedFile:
        """Create (or truncate) the file with permission bits ``mode`` and map it. With
        ``allocate`` its blocks are reserved first (``posix_fallocate``): no room is an
        ``OSError`` (ENOSPC) here, the file removed, never a SIGBUS on a later write."""
        if length <= 0:
            raise ConfigurationError("mapped file length must be positive", length=length)
        target = Path(path)
        fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
            if allocate:
                os.posix_fallocate(fd, 0, length)
            else:
                os.ftruncate(fd, length)
            return cls(target, mmap.mmap(fd, length))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(target)
            raise
        finally:
            os.close(fd)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, min_length: int = 1) -> MappedFile:
        """Map an existing file read-write, at its whole length.

        Raises ``ConfigurationError`` if the file is shorter than ``min_length`` bytes, and
        ``OSError`` if it cannot be opened.
        """
        target = Path(path)
        fd = os.open(target, os.O_RDWR)
        try:
            length = os.fstat(fd).st_size
            if length < min_length:
                raise ConfigurationError(
                    "mapped file is shorter than required",
                    path=str(target),
                    length=length,
                    min_length=min_length,
                )
            return cls(target, mmap.mmap(fd, length))
        finally:
            os.close(fd)

    @property
    def buffer(self) -> AtomicBuffer:
        """An :class:`AtomicBuffer` over the whole mapping; ``ConfigurationError`` once closed."""
        if self._buffer is None:
            raise ConfigurationError("mapped file is closed", path=str(self.path))
        return self._buffer

    @property
    def length(self) -> int:
        """The mapping's length in bytes (the file's length when mapped)."""
        return len(self._mmap)

    def flush(self) -> None:
        """Write the mapping's dirty pages back to the file (``msync``); blocks."""
        self._mmap.flush()

    def close(self) -> None:
        """Release the buffer and unmap the file; idempotent. The file stays."""
        if self._buffer is not None:
            self._buffer.release()
            self._buffer = None
            self._mmap.close()

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
