"""``BytesFiller``: one ``bytes`` of a known length, filled piece by piece, taken once.

A reader that learns from a message's first fragment how long a section of it is (the client
session's answer assembler, ``client/_answer_assembler.py``: a pull answer's stored batches)
copies each fragment's share of that section straight out of the log buffer into a filler, and
takes the ``bytes`` when the last piece is in: one copy of every byte, where assembling the
message first and slicing the section out of it takes two.

:class:`BytesFiller` is the C helper's (``transport/logbuffer/_gather.c``), which fills the
``bytes`` object in place. Where it is not built, :class:`PyBytesFiller` stands in: the same
checks and errors (its tests hold the C one to it), one more copy at :meth:`~PyBytesFiller.take`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["BytesFiller", "PyBytesFiller"]

_MAX_LENGTH = 0x7FFF_FFFF


class PyBytesFiller:
    """:class:`BytesFiller` in Python, where the C helper is not built (one more copy, at
    :meth:`take`)."""

    __slots__ = ("_buffer", "filled", "length")

    def __init__(self, length: int) -> None:
        if not 0 <= length <= _MAX_LENGTH:
            raise ValueError(f"length outside 0..2^31-1: length={length}")
        self._buffer: bytearray | None = bytearray(length)
        self.length = length
        self.filled = 0

    def put(self, source: Buffer, offset: int, length: int) -> int:
        """Append ``length`` bytes of ``source`` from ``offset``; returns how many are filled.
        Raises ``ValueError`` past the length, outside ``source`` or once taken."""
        buffer = self._buffer
        if buffer is None:
            raise ValueError("the bytes were taken")
        if length < 0 or length > self.length - self.filled:
            raise ValueError(
                f"more bytes than are left to fill: length={length} "
                f"left={self.length - self.filled}"
            )
        view = memoryview(source)
        if offset < 0 or offset > len(view) - length:
            raise ValueError(
                f"source range outside its buffer: offset={offset} length={length} "
                f"capacity={len(view)}"
            )
        buffer[self.filled : self.filled + length] = view[offset : offset + length]
        self.filled += length
        return self.filled

    def take(self) -> bytes:
        """The filled bytes (``ValueError`` unless full); the filler is empty afterwards."""
        buffer = self._buffer
        if buffer is None:
            raise ValueError("the bytes were taken")
        if self.filled != self.length:
            raise ValueError(f"not full: filled={self.filled} length={self.length}")
        self._buffer = None
        return bytes(buffer)


try:
    from aeromq.transport.logbuffer._gather import BytesFiller
except ImportError:  # not built: the Python filler
    BytesFiller = PyBytesFiller  # type: ignore[assignment,misc]  # the same class, in Python
